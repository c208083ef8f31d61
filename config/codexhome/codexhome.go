// Package codexhome locates the Codex home directory. It is apart from package config so that the early
// start (internal/early) can answer initialize without initialising the configuration's packages; it
// uses package path rather than path/filepath (the same on Unix) because path/filepath sorts late in
// the binary's package initialisation order, which would hold the early start back, and neither fmt
// nor strconv for the same reason (internal/early/quick answers right after package os is initialised).
package codexhome

import (
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
			return "", wrap("locate home directory", err)
		}
		dir = path.Join(home, ".codex")
	}
	abs := path.Clean(dir)
	if !path.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", wrap("resolve CODEX_HOME "+quote(dir), err)
		}
		abs = path.Join(wd, dir)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return abs, nil // what MkdirAll and Stat below find, with one system call
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

// quote is strconv.Quote for a path of printable characters: a double-quoted string with `"` and `\`
// escaped, control bytes as \n or \xNN (strconv.Quote also escapes unprintable Unicode).
func quote(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= '\a' && c <= '\r':
			b = append(b, '\\', "abtnvfr"[c-'\a'])
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
