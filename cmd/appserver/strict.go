package main

import (
	"log/slog"

	"appserver/config"
)

// checkStrictConfig refuses unknown config keys under --strict-config (the first one, as the reference)
// and otherwise logs them and returns them (the server warns the client about them).
func checkStrictConfig(p *parsed, home string, logger *slog.Logger) ([]config.UnknownKey, error) {
	unknown, err := config.UserConfigUnknownKeys(home)
	if err != nil || len(unknown) == 0 {
		return nil, err
	}
	if p.has("strict-config") {
		return nil, &config.UnknownKeyError{UnknownKey: unknown[0]}
	}
	logger.Error(config.UnknownKeysWarning(unknown))
	return unknown, nil
}
