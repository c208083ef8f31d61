package main

import (
	"log/slog"

	"appserver/config"
)

// checkStrictConfig refuses unknown config keys under --strict-config (the first one, as the reference)
// and warns about them otherwise.
func checkStrictConfig(p *parsed, home string, logger *slog.Logger) error {
	unknown, err := config.UserConfigUnknownKeys(home)
	if err != nil || len(unknown) == 0 {
		return err
	}
	if p.has("strict-config") {
		return &config.UnknownKeyError{UnknownKey: unknown[0]}
	}
	for _, u := range unknown {
		logger.Warn("unrecognized configuration setting is ignored", "file", u.File, "line", u.Line, "key", u.Key)
	}
	return nil
}
