// Package codexhome locates the Codex home directory. It is apart from package config so that the early
// start (internal/early) can answer initialize without initialising the configuration's packages.
package codexhome

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the absolute Codex home directory: $CODEX_HOME when set and non-empty, else ~/.codex. The
// directory is created (0700) when missing; unlike the reference, which rejects a CODEX_HOME that does
// not exist, we create it, since an IDE launching us cannot easily fix that.
func Dir() (string, error) {
	dir := os.Getenv("CODEX_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate home directory: %w", err)
		}
		dir = filepath.Join(home, ".codex")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve CODEX_HOME %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create CODEX_HOME: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("stat CODEX_HOME: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("CODEX_HOME %s is not a directory", abs)
	}
	return abs, nil
}
