// Package hooks discovers the lifecycle hooks configured next to each active config layer: a layer's
// hooks.json and the `[hooks]` tables of its config.toml (event → matcher groups → handlers). It lists
// them with a stable key, a content hash and the trust/enablement recorded in `[hooks.state]`; it does
// not run them.
package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	toml "github.com/pelletier/go-toml/v2"
)

// DefaultTimeoutSec is a command hook's timeout when the handler gives none.
const DefaultTimeoutSec = 600

// Event is one hook event: its name in files (PascalCase), on the wire (camelCase) and in keys (snake_case).
type Event struct{ File, Wire, Key string }

// Events lists the hook events in the order they are reported.
var Events = []Event{
	{"PreModelRequest", "preModelRequest", "pre_model_request"},
	{"PostModelRequest", "postModelRequest", "post_model_request"},
	{"PreToolUse", "preToolUse", "pre_tool_use"},
	{"PermissionRequest", "permissionRequest", "permission_request"},
	{"PostToolUse", "postToolUse", "post_tool_use"},
	{"PreCompact", "preCompact", "pre_compact"},
	{"PostCompact", "postCompact", "post_compact"},
	{"SessionStart", "sessionStart", "session_start"},
	{"SessionEnd", "sessionEnd", "session_end"},
	{"UserPromptSubmit", "userPromptSubmit", "user_prompt_submit"},
	{"SubagentStart", "subagentStart", "subagent_start"},
	{"SubagentStop", "subagentStop", "subagent_stop"},
	{"Stop", "stop", "stop"},
	{"Interrupt", "interrupt", "interrupt"},
}

// Layer is one config layer that may carry hooks: its source ("user", "project", ...) and directory
// (CODEX_HOME or a project's .codex folder).
type Layer struct {
	Source string
	Dir    string
}

// Hook is one command handler.
type Hook struct {
	Key           string // "<sourcePath>:<event_key>:<group>:<handler>"
	Event         string // wire name
	Command       string
	Async         bool
	Matcher       *string
	TimeoutSec    uint64
	StatusMessage *string
	SourcePath    string
	Source        string
	DisplayOrder  int64
	Enabled       bool
	CurrentHash   string
	TrustStatus   string // "trusted", "untrusted" or "modified"
}

// Problem is a file that could not be read.
type Problem struct{ Path, Message string }

// Result is what one discovery found.
type Result struct {
	Hooks    []Hook
	Warnings []string
	Errors   []Problem
}

type handler struct {
	Type          string  `json:"type" toml:"type"`
	Command       string  `json:"command" toml:"command"`
	Timeout       *uint64 `json:"timeout" toml:"timeout"`
	Async         bool    `json:"async" toml:"async"`
	StatusMessage *string `json:"statusMessage" toml:"statusMessage"`
}

type group struct {
	Matcher *string   `json:"matcher" toml:"matcher"`
	Hooks   []handler `json:"hooks" toml:"hooks"`
}

type state struct {
	Enabled     *bool  `toml:"enabled"`
	TrustedHash string `toml:"trusted_hash"`
}

// Discover lists the hooks of layers, lowest precedence first; hooks.json before config.toml within a layer.
func Discover(layers []Layer) Result {
	var res Result
	states := map[string]state{}
	order := int64(0)
	for _, l := range layers {
		jsonPath := filepath.Join(l.Dir, "hooks.json")
		tomlPath := filepath.Join(l.Dir, "config.toml")
		fromJSON, jsonOK := readJSON(jsonPath, &res)
		fromTOML, st, tomlOK := readTOML(tomlPath, &res)
		if l.Source != "project" {
			for k, v := range st {
				states[k] = v
			}
		}
		if jsonOK && tomlOK {
			res.Warnings = append(res.Warnings, fmt.Sprintf("loading hooks from both %s and %s; prefer a single representation for this layer", jsonPath, tomlPath))
		}
		for _, src := range []struct {
			path   string
			groups map[string][]group
		}{{jsonPath, fromJSON}, {tomlPath, fromTOML}} {
			for _, ev := range Events {
				for gi, g := range src.groups[ev.File] {
					for hi, h := range g.Hooks {
						if h.Type != "command" {
							res.Warnings = append(res.Warnings, fmt.Sprintf("skipping %s hook in %s: %s hooks are not supported yet", h.Type, src.path, h.Type))
							continue
						}
						hk := Hook{Key: fmt.Sprintf("%s:%s:%d:%d", src.path, ev.Key, gi, hi), Event: ev.Wire, Command: h.Command,
							Async: h.Async, Matcher: g.Matcher, TimeoutSec: DefaultTimeoutSec, StatusMessage: h.StatusMessage,
							SourcePath: src.path, Source: l.Source, DisplayOrder: order, Enabled: true}
						if h.Timeout != nil {
							hk.TimeoutSec = *h.Timeout
						}
						hk.CurrentHash = hashOf(ev.Wire, g.Matcher, h)
						order++
						res.Hooks = append(res.Hooks, hk)
					}
				}
			}
		}
	}
	for i := range res.Hooks {
		h := &res.Hooks[i]
		h.TrustStatus = "untrusted"
		if st, ok := states[h.Key]; ok {
			if st.Enabled != nil {
				h.Enabled = *st.Enabled
			}
			switch {
			case st.TrustedHash == h.CurrentHash:
				h.TrustStatus = "trusted"
			case st.TrustedHash != "":
				h.TrustStatus = "modified"
			}
		}
	}
	return res
}

// hashOf is the content hash of a handler's definition, so a changed hook loses its trust.
func hashOf(event string, matcher *string, h handler) string {
	b, _ := json.Marshal(struct {
		Event   string   `json:"event"`
		Matcher *string  `json:"matcher"`
		Handler *handler `json:"handler"`
	}{event, matcher, &h})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func readJSON(path string, res *Result) (map[string][]group, bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		res.Errors = append(res.Errors, Problem{path, err.Error()})
		return nil, false
	}
	// The root accepts only description and hooks; groups and handlers ignore unknown fields.
	var doc struct {
		Description *string         `json:"description"`
		Hooks       json.RawMessage `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var groups map[string][]group
	err = dec.Decode(&doc)
	if err == nil && len(doc.Hooks) > 0 {
		err = json.Unmarshal(doc.Hooks, &groups)
	}
	if err != nil {
		res.Errors = append(res.Errors, Problem{path, err.Error()})
		return nil, false
	}
	return groups, true
}

func readTOML(path string, res *Result) (map[string][]group, map[string]state, bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false
	}
	if err != nil {
		res.Errors = append(res.Errors, Problem{path, err.Error()})
		return nil, nil, false
	}
	var doc struct {
		Hooks map[string]any `toml:"hooks"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		res.Errors = append(res.Errors, Problem{path, err.Error()})
		return nil, nil, false
	}
	if len(doc.Hooks) == 0 {
		return nil, nil, false
	}
	groups := map[string][]group{}
	states := map[string]state{}
	keys := make([]string, 0, len(doc.Hooks))
	for k := range doc.Hooks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	events := false
	for _, k := range keys {
		b, err := toml.Marshal(map[string]any{"v": doc.Hooks[k]})
		if err != nil {
			res.Errors = append(res.Errors, Problem{path, err.Error()})
			continue
		}
		if k == "state" {
			var st struct {
				V map[string]state `toml:"v"`
			}
			if err := toml.Unmarshal(b, &st); err == nil {
				states = st.V
			}
			continue
		}
		var gs struct {
			V []group `toml:"v"`
		}
		if err := toml.Unmarshal(b, &gs); err != nil {
			res.Errors = append(res.Errors, Problem{path, fmt.Sprintf("hooks.%s: %v", k, err)})
			continue
		}
		groups[k] = gs.V
		events = true
	}
	return groups, states, events
}
