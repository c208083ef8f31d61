package config

import (
	"bytes"
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
	if err := checkPermissions(eff); err != nil {
		return err
	}
	if _, err := c.Provider(); err != nil {
		return meaningError("Model provider `" + c.ModelProvider + "` not found")
	}
	for _, f := range []struct{ key, what string }{
		{"model_instructions_file", "model instructions file"},
		{"experimental_compact_prompt_file", "experimental compact prompt file"},
	} {
		if p, ok := eff[f.key].(string); ok {
			if err := checkTextFile(c.layerPath(layers, f.key, p), f.what); err != nil {
				return err
			}
		}
	}
	if p, ok := eff["model_catalog_json"].(string); ok {
		if err := checkModelCatalog(c.layerPath(layers, "model_catalog_json", p)); err != nil {
			return err
		}
	}
	return nil
}

// layerPath resolves the path p given to the top-level key against the directory of the layer that sets it.
func (c *Config) layerPath(layers []*layer, key, p string) string {
	l, _ := originLayer(layers, []string{key})
	return resolveIn(c.layerBase(layers, l), p)
}

// layerBase is the directory relative paths in layer l (nil: a file-less one) resolve against, as the
// reference resolves them: a file's directory (a project layer's .codex folder); for an override, c's
// pathBase, else CODEX_HOME when no file layer is read (the defaults the server falls back on), else the
// process directory.
func (c *Config) layerBase(layers []*layer, l *layer) string {
	switch {
	case l != nil && l.file != "" && l.source == SourceProject: // a project layer's file is its .codex folder
		return l.file
	case l != nil && l.file != "":
		return filepath.Dir(l.file)
	case c.pathBase != "":
		return c.pathBase
	case !hasFileLayer(layers):
		return c.CodexHome
	}
	wd, _ := os.Getwd()
	return wd
}

func resolveIn(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// pathKeys are the top-level keys the reference types as paths (AbsolutePathBuf): a relative one is
// resolved against its layer's directory (layerBase), and config/read shows it resolved.
var pathKeys = []string{
	"experimental_compact_prompt_file", "js_repl_node_module_dirs", "js_repl_node_path", "log_dir",
	"model_catalog_json", "model_instructions_file", "sqlite_home",
}

// resolvedPaths returns raw with the relative paths of its pathKeys resolved against base, and whether
// there was any (raw itself when not).
func resolvedPaths(raw tree, base string) (tree, bool) {
	var out tree
	set := func(k string, v any) {
		if out == nil {
			out = tree{}
			for k, v := range raw {
				out[k] = v
			}
		}
		out[k] = v
	}
	for _, k := range pathKeys {
		switch v := raw[k].(type) {
		case string:
			if !filepath.IsAbs(v) {
				set(k, resolveIn(base, v))
			}
		case []any:
			var items []any
			for i, it := range v {
				if s, ok := it.(string); ok && !filepath.IsAbs(s) {
					if items == nil {
						items = append([]any{}, v...)
					}
					items[i] = resolveIn(base, s)
				}
			}
			if items != nil {
				set(k, items)
			}
		}
	}
	if out == nil {
		return raw, false
	}
	return out, true
}

// hasRelativeOverridePath reports whether a file-less layer of c gives a relative path to a pathKey (so
// where it resolves depends on pathBase).
func (c *Config) hasRelativeOverridePath() bool {
	for _, l := range c.layers {
		if _, rel := resolvedPaths(l.raw, "/"); l.file == "" && rel {
			return true
		}
	}
	return false
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
	if msg, n := modelCatalogError(data); msg == errNoModels {
		return meaningError(fmt.Sprintf("model_catalog_json path `%s` must contain at least one model", path))
	} else if msg != "" {
		return meaningError(fmt.Sprintf("failed to parse model_catalog_json path `%s` as JSON: %s %s", path, msg, serdePosition(data, n)))
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
