// Package codexhome locates the Codex home directory. It is apart from package config so that the early
// start (internal/early) can answer initialize without initialising the configuration's packages; it
// uses package path rather than path/filepath (the same on Unix) because path/filepath sorts late in
// the binary's package initialisation order, which would hold the early start back.
package codexhome

import (
	"fmt"
	"os"
	"path"
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
		dir = path.Join(home, ".codex")
	}
	abs := path.Clean(dir)
	if !path.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("resolve CODEX_HOME %q: %w", dir, err)
		}
		abs = path.Join(wd, dir)
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
