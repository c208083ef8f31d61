package configedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Code classifies a failed write (the wire's config_write_error_code values).
type Code string

// Codes of a failed write.
const (
	CodeVersionConflict Code = "configVersionConflict"
	CodeValidation      Code = "configValidationError"
	CodeLayerReadonly   Code = "configLayerReadonly"
)

// Error is a write the file refused.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Messages of the refused writes, as the reference words them.
const (
	msgConflict = "Configuration was modified since last read. Fetch latest version and retry."
	msgReadonly = "Only writes to the user config are allowed"
)

// File is one config file that accepts edits; writes to it are serialised.
type File struct {
	Path string
	// Version computes a content's version ("" for a missing file's empty content is fine).
	Version func(data []byte) (string, error)
	// Validate checks the edited content before it replaces the file (nil: no check).
	Validate func(data []byte) error
}

var (
	filesMu sync.Mutex
	files   = map[string]*sync.Mutex{}
)

// lockFor returns the process-wide lock of a path, so two File values for one path still serialise.
func lockFor(path string) *sync.Mutex {
	filesMu.Lock()
	defer filesMu.Unlock()
	m, ok := files[path]
	if !ok {
		m = &sync.Mutex{}
		files[path] = m
	}
	return m
}

// Write applies edits when expectedVersion ("" = any) matches the file's current version, validates the
// result and replaces the file atomically. It returns the new version.
func (f *File) Write(expectedVersion string, edits []Edit) (string, error) {
	return f.Update(expectedVersion, func(data []byte) ([]byte, error) { return Apply(data, edits) })
}

// Update is Write with an arbitrary change of the document's text.
func (f *File) Update(expectedVersion string, change func(data []byte) ([]byte, error)) (string, error) {
	l := lockFor(f.Path)
	l.Lock()
	defer l.Unlock()
	data, mode, err := read(f.Path)
	if err != nil {
		return "", err
	}
	cur, err := f.Version(data)
	if err != nil {
		return "", &Error{Code: CodeValidation, Msg: "Invalid configuration: " + err.Error()}
	}
	if expectedVersion != "" && expectedVersion != cur {
		return "", &Error{Code: CodeVersionConflict, Msg: msgConflict}
	}
	out, err := change(data)
	if err != nil {
		return "", &Error{Code: CodeValidation, Msg: err.Error()}
	}
	if f.Validate != nil {
		if err := f.Validate(out); err != nil {
			return "", &Error{Code: CodeValidation, Msg: "Invalid configuration: " + err.Error() + "\n"}
		}
	}
	next, err := f.Version(out)
	if err != nil {
		return "", &Error{Code: CodeValidation, Msg: "Invalid configuration: " + err.Error()}
	}
	if string(out) == string(data) {
		return next, nil
	}
	if err := WriteAtomic(f.Path, out, mode); err != nil {
		return "", err
	}
	return next, nil
}

// CheckTarget refuses a filePath other than the user config (both absolute and cleaned).
func CheckTarget(requested, userFile string) error {
	if requested == "" || filepath.Clean(requested) == filepath.Clean(userFile) {
		return nil
	}
	return &Error{Code: CodeLayerReadonly, Msg: msgReadonly}
}

func read(path string) ([]byte, fs.FileMode, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, err
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return data, mode, nil
}

// WriteAtomic replaces path with data: a temporary file in the same directory, synced, then renamed over it.
func WriteAtomic(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	cleanup := func(e error) error {
		_ = tmp.Close()
		_ = os.Remove(name)
		return e
	}
	if _, err := tmp.Write(data); err != nil {
		return cleanup(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return cleanup(err)
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// SplitKeyPath splits a dotted key path ("a.b", `a."c.d"`) into its parts.
func SplitKeyPath(keyPath string) ([]string, error) {
	if strings.TrimSpace(keyPath) == "" {
		return nil, &Error{Code: CodeValidation, Msg: "keyPath must not be empty"}
	}
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(keyPath); i++ {
		c := keyPath[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, &Error{Code: CodeValidation, Msg: "invalid keyPath: unterminated quote"}
	}
	parts = append(parts, cur.String())
	for _, p := range parts {
		if p == "" {
			return nil, &Error{Code: CodeValidation, Msg: "invalid keyPath: empty segment"}
		}
	}
	return parts, nil
}
