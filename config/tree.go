package config

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// tree is a decoded TOML document: nested map[string]any with TOML scalar
// values (string, int64, float64, bool, date/time values) and []any arrays.
type tree = map[string]any

// splitKey splits a dotted key into its parts. Parts may be quoted with
// double or single quotes (as in TOML), which allows dots inside a part:
// projects."/src/a.b".trust_level.
func splitKey(key string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted := false // current part had a quoted section
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch c {
		case '"', '\'':
			end := closingQuote(key[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in key %q", key)
			}
			lit := key[i+1 : i+1+end]
			if c == '"' {
				s, err := strconv.Unquote(`"` + lit + `"`)
				if err != nil {
					return nil, fmt.Errorf("invalid quoted key part in %q: %w", key, err)
				}
				lit = s
			}
			cur.WriteString(lit)
			quoted = true
			i += end + 1
		case '.':
			p := strings.TrimSpace(cur.String())
			if p == "" && !quoted {
				return nil, fmt.Errorf("empty part in key %q", key)
			}
			parts = append(parts, p)
			cur.Reset()
			quoted = false
		default:
			cur.WriteByte(c)
		}
	}
	p := strings.TrimSpace(cur.String())
	if p == "" && !quoted {
		return nil, fmt.Errorf("empty part in key %q", key)
	}
	return append(parts, p), nil
}

// closingQuote returns the index of the quote q ending s, skipping
// backslash escapes inside double quotes; -1 if there is none.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

// joinKey renders a key path the way config/read origins do: parts joined
// by dots, unescaped.
func joinKey(path []string) string { return strings.Join(path, ".") }

// setPath stores v at path in t, creating (or replacing non-table)
// intermediate tables. A table value is merged into an existing table.
func setPath(t tree, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := t[p].(tree)
		if !ok {
			next = tree{}
			t[p] = next
		}
		t = next
	}
	last := path[len(path)-1]
	if vm, ok := v.(tree); ok {
		if existing, ok := t[last].(tree); ok {
			mergeInto(existing, vm)
			return
		}
		t[last] = deepCopy(vm)
		return
	}
	t[last] = deepCopyValue(v)
}

// getPath returns the value at path, descending through tables and array
// indexes (decimal parts).
func getPath(v any, path []string) (any, bool) {
	for _, p := range path {
		switch cur := v.(type) {
		case tree:
			next, ok := cur[p]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// mergeInto deep-merges src into dst: tables merge recursively, anything
// else replaces.
func mergeInto(dst, src tree) {
	for k, sv := range src {
		if sm, ok := sv.(tree); ok {
			if dm, ok := dst[k].(tree); ok {
				mergeInto(dm, sm)
				continue
			}
			dst[k] = deepCopy(sm)
			continue
		}
		dst[k] = deepCopyValue(sv)
	}
}

func deepCopy(t tree) tree {
	if t == nil {
		return nil
	}
	out := make(tree, len(t))
	for k, v := range t {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case tree:
		return deepCopy(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyValue(e)
		}
		return out
	default:
		return v
	}
}

// leaves calls fn for every leaf path of v (scalars and empty arrays; array
// elements are addressed by index), in sorted order.
func leaves(v any, prefix []string, fn func(path []string)) {
	switch x := v.(type) {
	case tree:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			leaves(x[k], append(prefix[:len(prefix):len(prefix)], k), fn)
		}
	case []any:
		if len(x) == 0 {
			fn(prefix)
			return
		}
		for i, e := range x {
			leaves(e, append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), fn)
		}
	default:
		fn(prefix)
	}
}

// normalizeJSON converts a value decoded from JSON into the tree's TOML
// value space: integral numbers become int64, objects become trees, and
// nulls are dropped from tables.
func normalizeJSON(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		out := tree{}
		for k, e := range x {
			if n, ok := normalizeJSON(e); ok {
				out[k] = n
			}
		}
		return out, true
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if n, ok := normalizeJSON(e); ok {
				out = append(out, n)
			}
		}
		return out, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
		return x, true
	case float32:
		return normalizeJSON(float64(x))
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		if err != nil {
			return x.String(), true
		}
		return f, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case map[string]string:
		out := tree{}
		for k, s := range x {
			out[k] = s
		}
		return out, true
	default:
		return v, true
	}
}
