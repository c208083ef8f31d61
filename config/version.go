package config

import "path/filepath"

// FileVersion is the version config/read and config writes report for a config file holding data:
// "sha256:" of its content as compact, key-sorted JSON (so formatting and comments do not change it), its
// relative paths resolved against the file's directory as config/read shows them.
func FileVersion(file string, data []byte) (string, error) {
	raw, _, err := parseTOML(file, data)
	if err != nil {
		return "", err
	}
	raw, _ = resolvedPaths(raw, filepath.Dir(file))
	return (&layer{raw: raw}).version(), nil
}

// Validate reports whether data, as the user config file of codexHome, loads (with the system layer
// beneath it): the check a config write makes before it replaces the file.
func Validate(codexHome, file string, data []byte) error {
	raw, pos, err := parseTOML(file, data)
	if err != nil {
		return err
	}
	sys, err := readFileLayer(SourceSystem, systemConfigPath)
	if err != nil {
		return err
	}
	user := &layer{source: SourceUser, file: file, raw: raw, positions: pos}
	_, err = compose(codexHome, []*layer{sys, user}, "")
	return err
}
