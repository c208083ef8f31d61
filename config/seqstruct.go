package config

import (
	"fmt"
	"strconv"
	"strings"
)

// seqStruct is how the reference's serde type for a top-level table reads a TOML array given in its place:
// as the struct's fields in declaration order (serde's visit_seq). fields are the kinds of the fields
// met first (seqField); n is the struct's field count; fields past len(fields) have defaults (and are not
// checked), as do all of them when allDefault.
type seqStruct struct {
	name       string
	n          int
	fields     []string
	allDefault bool
	required   int // the fields without defaults, when not all of them (0)
}

// seqStructs are the struct-typed top-level keys whose type reads an array as its fields, seen on
// codex-cli 0.169.0 with an array of each TOML type at each position. A field kind is a checkValue want
// ("a boolean", "u64", "struct X", ...), "enum:v1,v2" (serde's unit-variant enum), "untagged:Name:kinds"
// (an untagged enum accepting the listed TOML types, as tomlTypeName names them) or "any".
var seqStructs = map[string]seqStruct{
	"analytics":      {name: "AnalyticsConfigToml", n: 1, fields: []string{"a boolean"}},
	"audio":          {name: "RealtimeAudioToml", n: 3, fields: []string{"untagged:MicrophoneChannels:integer,array", "a string", "a string"}},
	"auto_review":    {name: "AutoReviewToml", n: 5, fields: []string{"u32", "enum:default,strict", "a string", "a string", "a nonzero usize"}},
	"browser_use":    {name: "BrowserUseConfigToml", n: 3, fields: []string{"a boolean", "struct BrowserUseOriginPolicyConfigToml", "a map"}},
	"cloud":          {name: "CloudToml", n: 1, fields: []string{"struct FeatureToggleToml"}},
	"computer_use":   {name: "ComputerUseConfigToml", n: 3, fields: []string{"enum:allow,deny", "struct ComputerUseMacosConfigToml", "struct ComputerUseWindowsConfigToml"}},
	"feedback":       {name: "FeedbackConfigToml", n: 1, fields: []string{"a boolean"}},
	"ghost_snapshot": {name: "GhostSnapshotToml", n: 3, fields: []string{"i64", "i64", "a boolean"}},
	"goals":          {name: "GoalsToml", n: 1, fields: []string{"a nonzero u64"}},
	"memories": {name: "MemoriesToml", n: 15, fields: []string{"enum:v1,v2", "a boolean", "a boolean", "a boolean", "a boolean",
		"a boolean", "usize", "i64", "i64", "usize", "i64", "i64", "a string", "a string", "a string"}},
	"notice": {name: "Notice", n: 9, fields: []string{"a boolean", "a boolean", "a boolean", "a boolean", "a boolean", "a boolean",
		"a boolean", "a map", "struct ExternalConfigMigrationPrompts"}, required: 7},
	"orchestrator": {name: "OrchestratorToml", n: 2, fields: []string{"struct FeatureToggleToml", "struct FeatureToggleToml"}},
	"otel": {name: "OtelConfigToml", n: 11, fields: []string{"struct ToolResultLogConfig", "a boolean", "a boolean", "a boolean",
		"a boolean", "a string", otelExporter, otelExporter, otelExporter, "a map", "a map"}},
	"realtime": {name: "RealtimeToml", n: 4, fields: []string{"enum:v1,v2,v3", "enum:conversational,transcription",
		"enum:webrtc,websocket", "enum:" + strings.Join(realtimeVoices, ",")}},
	"shell_environment_policy": {name: "ShellEnvironmentPolicyTomlRaw", n: 7, fields: []string{"enum:core,all,none", "a boolean",
		"a sequence", "a map", "a sequence", "a map", "any"}},
	"windows":                 {name: "WindowsToml", n: 2, fields: []string{"enum:elevated,unelevated,mxc", "a boolean"}},
	"history":                 {name: "History", allDefault: true, fields: []string{"enum:save-all,none"}},
	"sandbox_workspace_write": {name: "SandboxWorkspaceWrite", allDefault: true, fields: []string{"a sequence"}},
	"skills":                  {name: "SkillsConfig", allDefault: true, fields: []string{"struct BundledSkillsConfig"}},
	"tool_suggest":            {name: "ToolSuggestConfig", allDefault: true, fields: []string{"a sequence"}},
}

const otelExporter = "enum:none,statsig,otlp-http,otlp-grpc"

// realtimeVoices are the voices realtime.voice accepts (codex-cli 0.169.0's list, in its order).
var realtimeVoices = strings.Fields(`alloy arbor ash aube ballad breeze bubbie cedar coral cove echo ember haetsal hanul
	himari juniper leher maple marin miko neer porto rindo rio rivage sage selva shimmer sol sonna spruce tinta vale
	verse viola`)

// seqError is serde's error for an array read as a struct: at is the path under the array it is located
// at (nil: the array), spanless an error the reference reports without a position.
type seqError struct {
	msg      string
	at       []string
	spanless bool
}

// check returns serde's error for the array items read as the struct's fields (nil when they are
// accepted).
func (s seqStruct) check(items []any) *seqError {
	for i, v := range items {
		if i >= len(s.fields) {
			break
		}
		if msg, sub := seqFieldError(s.fields[i], v); msg != "" {
			return &seqError{msg: msg, at: append([]string{strconv.Itoa(i)}, sub...)}
		}
	}
	required := len(s.fields)
	if s.required > 0 {
		required = s.required
	}
	if !s.allDefault && len(items) < required {
		return &seqError{msg: fmt.Sprintf("invalid length %d, expected struct %s with %d element%s", len(items), s.name, s.n, plural(s.n))}
	}
	if !s.allDefault && len(items) > s.n {
		return &seqError{msg: fmt.Sprintf("invalid length %d, expected fewer elements in array", len(items)), spanless: true}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// seqFieldError is serde's error for v read as a field of the given kind (see seqStructs), "" when it fits,
// and the path under v it is located at.
func seqFieldError(kind string, v any) (string, []string) {
	switch {
	case kind == "any":
		return "", nil
	case strings.HasPrefix(kind, "enum:"):
		msg, variant := unitEnumError(strings.Split(kind[len("enum:"):], ","), v)
		return msg, variant
	}
	return seqScalarError(kind, v), nil
}

// seqScalarError is seqFieldError for the kinds other than enums.
func seqScalarError(kind string, v any) string {
	switch {
	case strings.HasPrefix(kind, "untagged:"):
		name, kinds, _ := strings.Cut(kind[len("untagged:"):], ":")
		for _, k := range strings.Split(kinds, ",") {
			if tomlTypeName(v) == k {
				return ""
			}
		}
		return "data did not match any variant of untagged enum " + name
	case strings.HasPrefix(kind, "struct "):
		switch v.(type) {
		case tree, []any: // a nested struct's own fields are not checked
			return ""
		}
		return "invalid type: " + serdeDescribe(v) + ", expected " + kind
	case strings.HasPrefix(kind, "a nonzero "):
		if n, ok := v.(int64); ok && n == 0 {
			return "invalid value: integer `0`, expected " + kind
		}
		if msg := checkValue(strings.TrimPrefix(kind, "a nonzero "), v); msg != "" {
			return strings.Replace(msg, ", expected "+strings.TrimPrefix(kind, "a nonzero "), ", expected "+kind, 1)
		}
		return ""
	}
	return checkValue(kind, v)
}

// unitEnumError is serde's error for v read by the toml crate as an enum of unit variants: a string names
// the variant, a table of one entry names it by its key (whose value must be empty; an error about that
// value is located at it: the variant is returned), anything else is refused.
func unitEnumError(variants []string, v any) (string, []string) {
	name := ""
	switch x := v.(type) {
	case string:
		name = x
	case tree:
		switch {
		case len(x) == 0:
			return "wanted exactly 1 element, found 0 elements", nil
		case len(x) > 1:
			return "wanted exactly 1 element, more than 1 element", nil
		}
		for k, val := range x {
			name = k
			switch y := val.(type) {
			case tree:
				if len(y) > 0 {
					return "expected empty table", []string{k}
				}
			case []any:
				if len(y) > 0 {
					return "expected empty array", []string{k}
				}
			default:
				return "expected table, found " + tomlTypeName(val), []string{k}
			}
		}
	default:
		return "invalid type: unit variant, expected string only", nil
	}
	for _, e := range variants {
		if e == name {
			return "", nil
		}
	}
	return "unknown variant `" + name + "`, expected " + variantList(variants), nil
}

// tomlTypeName names a TOML value's type as the toml crate does ("integer", "string", "float", ...).
func tomlTypeName(v any) string {
	switch v.(type) {
	case int64:
		return "integer"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "float"
	case []any:
		return "array"
	case tree:
		return "table"
	}
	return "datetime"
}
