package externalagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"appserver/config"
	"appserver/configedit"
)

// readSettings reads one JSON settings file; a missing file is nil.
func readSettings(path string) (map[string]any, bool, error) {
	if !isFile(path) {
		return nil, false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false, invalidf("%v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, invalidf("external agent settings root must be an object")
	}
	return m, true, nil
}

// effectiveSettings is settings.json with settings.local.json (next to it) merged over it; a malformed
// local file is ignored, a malformed main file is an error.
func effectiveSettings(path string) (map[string]any, bool, error) {
	main, ok, err := readSettings(path)
	if err != nil {
		return nil, false, err
	}
	local, lok, lerr := readSettings(filepath.Join(filepath.Dir(path), "settings.local.json"))
	var inv *invalidData
	if lerr != nil && !errors.As(lerr, &inv) {
		return nil, false, lerr
	}
	if lerr != nil || !lok {
		return main, ok, nil
	}
	if !ok {
		return local, true, nil
	}
	mergeJSON(main, local)
	return main, true, nil
}

func mergeJSON(dst, src map[string]any) {
	for k, v := range src {
		dm, dok := dst[k].(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			mergeJSON(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// jsonScalar renders a JSON scalar as a string (strings as is, numbers and booleans as written); null,
// arrays and objects have none.
func jsonScalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// buildConfig converts the source settings to config.toml values: env → shell_environment_policy (inherit
// "core", set), sandbox.enabled → sandbox_mode "workspace-write".
func buildConfig(settings map[string]any) map[string]any {
	out := map[string]any{}
	if env, ok := settings["env"].(map[string]any); ok && len(env) > 0 {
		set := map[string]any{}
		for k, v := range env {
			if s, ok := jsonScalar(v); ok {
				set[k] = s
			}
		}
		out["shell_environment_policy"] = map[string]any{"inherit": "core", "set": set}
	}
	if sb, ok := settings["sandbox"].(map[string]any); ok {
		if en, ok := sb["enabled"].(bool); ok && en {
			out["sandbox_mode"] = "workspace-write"
		}
	}
	return out
}

// readTOML parses an existing config file (missing or blank: empty).
func readTOML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseTOML(b)
}

func parseTOML(b []byte) (map[string]any, error) {
	if strings.TrimSpace(string(b)) == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, invalidf("invalid existing config.toml: %s", tomlErrorText(b, err))
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// tomlErrorText renders a parse error with its line and a caret under the column, as the reference does.
func tomlErrorText(data []byte, err error) string { return config.TOMLErrorText(data, err) }

// missingEdits lists the edits that add incoming's keys absent from existing (tables merge key by key;
// any existing value wins). Keys are visited in sorted order.
func missingEdits(existing, incoming map[string]any, prefix []string) []configedit.Edit {
	var out []configedit.Edit
	for _, k := range sortedKeys(incoming) {
		path := append(append([]string{}, prefix...), k)
		cur, ok := existing[k]
		if !ok {
			out = append(out, configedit.Edit{Path: path, Value: incoming[k], Strategy: configedit.Upsert})
			continue
		}
		cm, cok := cur.(map[string]any)
		im, iok := incoming[k].(map[string]any)
		if cok && iok {
			out = append(out, missingEdits(cm, im, path)...)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configFile is an editable config.toml: the home one validated as the user layer, a repository's one
// checked to parse.
func (s *Service) configFile(path string, home bool) *configedit.File {
	validate := func(b []byte) error {
		var m map[string]any
		return toml.Unmarshal(b, &m)
	}
	if home && s.ValidateHomeConfig != nil {
		validate = s.ValidateHomeConfig
	}
	return &configedit.File{
		Path:     path,
		Version:  func([]byte) (string, error) { return "", nil },
		Validate: validate,
	}
}

// applyMissing adds to path's config what edits (computed from its current content by plan) say, in one
// atomic write. It reports whether anything was written, with plan's extra result.
func (s *Service) applyMissing(path string, home bool, plan func(existing map[string]any) ([]configedit.Edit, error)) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	changed := false
	_, err := s.configFile(path, home).Update("", func(data []byte) ([]byte, error) {
		existing, err := parseTOML(data)
		if err != nil {
			return nil, err
		}
		edits, err := plan(existing)
		if err != nil || len(edits) == 0 {
			return data, err
		}
		changed = true
		return configedit.Apply(data, edits)
	})
	var ce *configedit.Error
	if errors.As(err, &ce) {
		// Update wraps the change's error; keep the message as the change worded it.
		return false, invalidf("%s", strings.TrimPrefix(ce.Msg, "Invalid configuration: "))
	}
	return changed, err
}
