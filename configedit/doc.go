// Package configedit changes keys of a TOML config file in place: only the bytes of the edited keys
// change; every other line, comment and blank keeps its bytes and order. Locating uses go-toml's
// document parser and values are rendered by go-toml's encoder; a write checks an expected version,
// validates the result and replaces the file atomically (write to a temporary file, then rename).
package configedit
