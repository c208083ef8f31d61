package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"appserver/config/codexhome"
)

// overrideLabel names the `-c` overrides in errors.
const overrideLabel = "-c override"

// ConfigFileName is the user configuration file inside CODEX_HOME.
const ConfigFileName = "config.toml"

// systemConfigPath is a variable so tests can point it elsewhere.
var systemConfigPath = SystemConfigPath

// CodexHome returns the absolute Codex home directory (codexhome.Dir).
func CodexHome() (string, error) { return codexhome.Dir() }

// Load reads /etc/codex/config.toml (if present) and
// <codexHome>/config.toml (missing = defaults), applies the `-c key=value`
// overrides, and returns the typed result.
// Overrides use dotted keys; each value is parsed as TOML and, if that
// fails, taken as a plain string. Errors are *Error values naming the file
// (or override), line and key.
func Load(codexHome string, overrides []string) (*Config, error) {
	return LoadWith(codexHome, overrides, LoadOptions{})
}

// LoadOptions change which files Load reads (the exec command line's --ignore-user-config and -p).
type LoadOptions struct {
	// IgnoreUser skips $CODEX_HOME/config.toml (auth still uses CODEX_HOME).
	IgnoreUser bool
	// ProfileFile is a config file layered on top of the user config, below the -c overrides
	// ("" = none); a missing file is an error.
	ProfileFile string
	// PathBase is the directory the overrides' relative paths resolve against ("" = the process
	// directory; config/read without a cwd gives CODEX_HOME, as the reference does).
	PathBase string
}

// LoadWith is Load with options.
func LoadWith(codexHome string, overrides []string, o LoadOptions) (*Config, error) {
	sys, err := readFileLayer(SourceSystem, systemConfigPath)
	if err != nil {
		return nil, err
	}
	layers := []*layer{sys}
	if !o.IgnoreUser {
		user, err := readFileLayer(SourceUser, filepath.Join(codexHome, ConfigFileName))
		if err != nil {
			return nil, err
		}
		layers = append(layers, user)
	}
	if o.ProfileFile != "" {
		if _, err := os.Stat(o.ProfileFile); err != nil {
			return nil, &Error{File: o.ProfileFile, Msg: "config profile file not found"}
		}
		pl, err := readFileLayer(SourceUser, o.ProfileFile)
		if err != nil {
			return nil, err
		}
		layers = append(layers, pl)
	}
	return composeWithOverrides(codexHome, layers, overrides, o.PathBase)
}

// composeWithOverrides composes layers with the `-c` overrides as the last (session flags) layer.
func composeWithOverrides(codexHome string, layers []*layer, overrides []string, pathBase string) (*Config, error) {
	if len(overrides) > 0 {
		flags, err := parseOverrides(overrides)
		if err != nil {
			return nil, err
		}
		layers = append(layers, flags)
	}
	return compose(codexHome, layers, pathBase)
}

// parseOverrides turns `-c key=value` strings into a session-flags layer.
func parseOverrides(overrides []string) (*layer, error) {
	l := &layer{source: SourceSessionFlags, raw: tree{}, label: overrideLabel}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, &Error{File: overrideLabel, Msg: fmt.Sprintf("invalid override %q: expected key=value", o)}
		}
		path, err := splitKey(strings.TrimSpace(k))
		if err != nil {
			return nil, &Error{File: overrideLabel, Msg: fmt.Sprintf("invalid override %q: %v", o, err)}
		}
		setPath(l.raw, path, parseOverrideValue(v))
	}
	return l, nil
}

// parseOverrideValue parses v as a TOML value, falling back to the
// trimmed text as a string.
func parseOverrideValue(v string) any {
	v = strings.TrimSpace(v)
	var doc tree
	if err := toml.Unmarshal([]byte("v = "+v), &doc); err == nil {
		if val, ok := doc["v"]; ok && len(doc) == 1 {
			return val
		}
	}
	return v
}

// compose merges layers (lowest first) and builds the typed Config. The legacy top-level `profile`
// key is refused, as the reference refuses it (profiles are files chosen with `--profile` now).
//
// pathBase is where the file-less layers' relative paths resolve (Config.pathBase).
func compose(codexHome string, layers []*layer, pathBase string) (*Config, error) {
	full := mergeLayers(layers)
	if name, ok := full["profile"].(string); ok {
		l, _ := originLayer(layers, []string{"profile"})
		return nil, &LegacyProfileError{Name: name, Override: l != nil && l.label == overrideLabel}
	}
	c, cerr := build(full)
	if cerr != nil {
		return nil, attribute(layers, cerr)
	}
	c.CodexHome = codexHome
	c.pathBase = pathBase
	if err := checkMeaning(c, full, layers); err != nil {
		return nil, err
	}
	c.layers = layers
	c.effective = full
	return c, nil
}

// LegacyProfileError is the refusal of a top-level `profile = "<name>"` (in a file, a `-c` override
// or a thread's config override).
type LegacyProfileError struct {
	Name     string
	Override bool // set by a `-c` override
}

func (e *LegacyProfileError) Error() string {
	return fmt.Sprintf("legacy `profile = %q` config is no longer supported; use `--profile %s` with `%s.config.toml` instead",
		e.Name, e.Name, e.Name)
}

// mergeLayers deep-merges the enabled layers, lowest first.
func mergeLayers(layers []*layer) tree {
	out := tree{}
	for _, l := range layers {
		if l.disabled == "" {
			mergeInto(out, l.raw)
		}
	}
	return out
}

// originLayer returns the highest enabled layer defining path (or its
// longest defined prefix).
func originLayer(layers []*layer, path []string) (*layer, []string) {
	for n := len(path); n > 0; n-- {
		for i := len(layers) - 1; i >= 0; i-- {
			l := layers[i]
			if l.disabled != "" {
				continue
			}
			if _, ok := getPath(l.raw, path[:n]); ok {
				return l, path[:n]
			}
		}
	}
	return nil, nil
}

// attribute turns a conversion error into an *Error located in the layer
// that supplied the offending value.
func attribute(layers []*layer, ce *convError) error {
	l, _ := originLayer(layers, ce.path)
	var e *Error
	if l == nil {
		e = &Error{Key: joinKey(ce.path), Msg: ce.msg}
	} else {
		e = l.locate(ce.path, ce.msg)
	}
	if ce.key != nil {
		e.Key = joinKey(ce.key)
	}
	if ce.spanless {
		e.Line, e.Column, e.EndLine, e.EndColumn, e.Spanless = 0, 0, 0, 0, true
	}
	return e
}

// ObjectOverrideLabel names a WithOverrides object (such as thread/start's `config`) in errors.
const ObjectOverrideLabel = "config override"

// WithOverrides returns a new Config with a JSON override object (such as
// thread/start's `config` param) applied on top. Keys may be dotted
// ("model_providers.mock.base_url") or nested objects; null values are
// ignored. The receiver is not modified.
func (c *Config) WithOverrides(overrides map[string]any) (*Config, error) {
	if len(overrides) == 0 {
		return c.clone()
	}
	l := &layer{source: SourceSessionFlags, raw: tree{}, label: ObjectOverrideLabel}
	for k, v := range overrides {
		nv, ok := normalizeJSON(v)
		if !ok {
			continue
		}
		path, err := splitKey(k)
		if err != nil {
			return nil, &Error{File: ObjectOverrideLabel, Msg: err.Error()}
		}
		setPath(l.raw, path, nv)
	}
	layers := append(append([]*layer{}, c.layers...), l)
	return compose(c.CodexHome, layers, c.pathBase)
}

// ForCwd returns the Config that also applies the trusted project layers
// (.codex/config.toml files from the project root down to cwd), with the
// relative paths of `-c` overrides resolved against cwd: c itself when
// neither c nor cwd has a project layer and the paths resolve alike, else a
// new one. Untrusted project
// layers are recorded (config/read lists them as disabled) but not applied.
func (c *Config) ForCwd(cwd string) (*Config, error) {
	if cwd == "" {
		return c.clone()
	}
	var base []*layer
	for _, l := range c.layers {
		if l.source != SourceProject {
			base = append(base, l)
		}
	}
	projects, err := c.projectLayers(cwd)
	if err != nil {
		return nil, err
	}
	if len(projects) == 0 && len(base) == len(c.layers) && (c.pathBase == cwd || !c.hasRelativeOverridePath()) {
		return c, nil // no project layer before or after: the same layers compose the same Config
	}
	// Project layers sit above the user layer and below session flags.
	i := len(base)
	for i > 0 && base[i-1].source == SourceSessionFlags {
		i--
	}
	layers := append(append(append([]*layer{}, base[:i]...), projects...), base[i:]...)
	return compose(c.CodexHome, layers, cwd)
}

// clone recomposes the same layers into an independent Config.
func (c *Config) clone() (*Config, error) {
	return compose(c.CodexHome, c.layers, c.pathBase)
}

// InvalidSummary is the configWarning summary the reference sends when the configuration does not load
// at start and the server carries on with defaults.
const InvalidSummary = "Invalid configuration; using defaults."

// Defaults returns the built-in configuration for codexHome with the `-c` overrides applied: what a
// server runs with when its configuration files do not load. An override that does not apply is an
// error (the reference refuses to start then).
func Defaults(codexHome string, overrides []string) (*Config, error) {
	return composeWithOverrides(codexHome, nil, overrides, "")
}

// IsOverrideError reports whether err is about a `-c` override rather than a configuration file.
func IsOverrideError(err error) bool {
	var e *Error
	var pe *LegacyProfileError
	return errors.As(err, &e) && e.File == overrideLabel || errors.As(err, &pe) && pe.Override
}
