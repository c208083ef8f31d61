// Package codexhome locates the Codex home directory. It is apart from package config so that the early
// start (internal/early) can answer initialize without initialising the configuration's packages; it
// uses package path rather than path/filepath (the same on Unix) because path/filepath sorts late in
// the binary's package initialisation order, which would hold the early start back, and strconv and
// errors rather than fmt for the same reason (internal/early/quick answers from one of the first
// initialisers).
package codexhome

import (
	"os"
	"path"
	"strconv"
)

// Dir returns the absolute Codex home directory: $CODEX_HOME when set and non-empty, else ~/.codex. The
// directory is created (0700) when missing; unlike the reference, which rejects a CODEX_HOME that does
// not exist, we create it, since an IDE launching us cannot easily fix that.
func Dir() (string, error) {
	dir := os.Getenv("CODEX_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", wrap("locate home directory", err)
		}
		dir = path.Join(home, ".codex")
	}
	abs := path.Clean(dir)
	if !path.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", wrap("resolve CODEX_HOME "+strconv.Quote(dir), err)
		}
		abs = path.Join(wd, dir)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", wrap("create CODEX_HOME", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", wrap("stat CODEX_HOME", err)
	}
	if !st.IsDir() {
		return "", &wrapped{msg: "CODEX_HOME " + abs + " is not a directory"}
	}
	return abs, nil
}

// wrapped is an error with a context, as fmt.Errorf("%s: %w", ...) words it.
type wrapped struct {
	msg string
	err error
}

func wrap(msg string, err error) error { return &wrapped{msg: msg + ": " + err.Error(), err: err} }

func (e *wrapped) Error() string { return e.msg }

func (e *wrapped) Unwrap() error { return e.err }
