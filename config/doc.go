// Package config loads the Codex configuration ($CODEX_HOME/config.toml plus
// /etc/codex/config.toml, project .codex/config.toml layers, an exec
// `--profile` file and `-c key=value` session overrides), exposes it as a
// typed Config, and renders the `config/read` response. The legacy
// top-level `profile = "<name>"` key is refused (LegacyProfileError).
//
// Precedence, lowest first: system file, user file, trusted project layers
// (only when a cwd is given), `-c` overrides, then any WithOverrides
// objects. Tables merge key by key;
// every other value (arrays included) replaces the lower one wholesale.
// Unknown keys are kept in the raw view and otherwise ignored.
package config
