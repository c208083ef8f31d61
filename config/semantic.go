package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"appserver/internal/oserr"
)

// builtinPermissionProfiles are the permission profiles default_permissions may name without a
// `[permissions]` table (codex-cli 0.169.0 knows these three).
var builtinPermissionProfiles = map[string]bool{":read-only": true, ":workspace": true, ":danger-full-access": true}

// checkMeaning returns the first value of a configuration that type-checks but that the reference refuses
// on its meaning, in its words and in its order (seen on codex-cli 0.169.0): the retired thread store
// endpoint, default_permissions naming no profile, a model provider that is not defined, then the
// instructions, compact prompt and model catalogue files that do not read. nil when there is none. The
// error has no position: the reference reports these without one. Relative file paths are resolved
// against the directory of the layer that sets them (the process directory for overrides).
func checkMeaning(c *Config, eff tree, layers []*layer) error {
	home := c.CodexHome
	if _, ok := eff["experimental_thread_store_endpoint"]; ok {
		return meaningError("`experimental_thread_store_endpoint` is no longer supported; remove it from config.toml")
	}
	if name, ok := eff["default_permissions"].(string); ok {
		profiles, hasTable := eff["permissions"].(tree)
		switch {
		case strings.HasPrefix(name, ":"):
			if !builtinPermissionProfiles[name] {
				return meaningError("default_permissions refers to unknown built-in profile `" + name + "`")
			}
		case !hasTable:
			return meaningError("default_permissions requires a `[permissions]` table")
		default:
			if _, ok := profiles[name]; !ok {
				return meaningError("default_permissions refers to undefined profile `" + name + "`")
			}
		}
	}
	if _, err := c.Provider(); err != nil {
		return meaningError("Model provider `" + c.ModelProvider + "` not found")
	}
	for _, f := range []struct{ key, what string }{
		{"model_instructions_file", "model instructions file"},
		{"experimental_compact_prompt_file", "experimental compact prompt file"},
	} {
		if p, ok := eff[f.key].(string); ok {
			if err := checkTextFile(layerPath(layers, home, f.key, p), f.what); err != nil {
				return err
			}
		}
	}
	if p, ok := eff["model_catalog_json"].(string); ok {
		if err := checkModelCatalog(layerPath(layers, home, "model_catalog_json", p)); err != nil {
			return err
		}
	}
	return nil
}

// layerPath resolves the path p given to the top-level key against the directory of the layer that sets it.
// An override's is the process directory, or codexHome when no file layer is read (the defaults the
// server falls back on), as the reference resolves them.
func layerPath(layers []*layer, codexHome, key, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	base := ""
	if l, _ := originLayer(layers, []string{key}); l != nil && l.file != "" {
		base = l.file
		if l.source != SourceProject { // a project layer's file is its .codex folder
			base = filepath.Dir(l.file)
		}
	} else if !hasFileLayer(layers) {
		base = codexHome
	} else if wd, err := os.Getwd(); err == nil {
		base = wd
	}
	return filepath.Join(base, p)
}

// checkTextFile is the reference's check of a file whose text the configuration names (what says which).
func checkTextFile(path, what string) error {
	st, err := os.Stat(path)
	if err != nil {
		return meaningError(fmt.Sprintf("failed to read %s %s: %s", what, path, oserr.Text(err)))
	}
	if !st.Mode().IsRegular() {
		return meaningError(fmt.Sprintf("failed to read %s %s: path `%s` is not a file", what, path, path))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return meaningError(fmt.Sprintf("failed to read %s %s: %s", what, path, oserr.Text(err)))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return meaningError(fmt.Sprintf("%s is empty: %s", what, path))
	}
	return nil
}

// checkModelCatalog is the reference's check of model_catalog_json: the file reads (its error alone, as the
// reference words it) and holds a JSON object with a `models` member.
func checkModelCatalog(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return meaningError(oserr.Text(err))
	}
	fail := func(msg string) error {
		return meaningError(fmt.Sprintf("failed to parse model_catalog_json path `%s` as JSON: %s", path, msg))
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, int(se.Offset))
			return fail(fmt.Sprintf("%s at line %d column %d", se.Error(), line, col))
		}
		return fail(err.Error())
	}
	if _, ok := doc["models"]; !ok {
		// serde_json names the end of the object: the position of its closing brace.
		end := bytes.LastIndexByte(data, '}')
		line, col := lineCol(data, end+1)
		return fail(fmt.Sprintf("missing field `models` at line %d column %d", line, col))
	}
	return nil
}

// lineCol is the 1-based line and column of the byte before offset n of data (serde_json's position).
func lineCol(data []byte, n int) (int, int) {
	n = min(max(n, 0), len(data))
	line := 1 + bytes.Count(data[:n], []byte("\n"))
	col := n - (bytes.LastIndexByte(data[:n], '\n') + 1)
	return line, col
}

// meaningError is checkMeaning's error with the message msg.
func meaningError(msg string) *Error { return &Error{Msg: msg, Meaning: true} }

// hasFileLayer reports whether any of layers was read from a file (a missing file counts: it was looked for).
func hasFileLayer(layers []*layer) bool {
	for _, l := range layers {
		if l.file != "" {
			return true
		}
	}
	return false
}
