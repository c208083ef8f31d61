package codemode

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// nestedTool is one tool reachable from exec's JavaScript as tools.<js>(…).
type nestedTool struct {
	js          string // the JavaScript identifier
	name        string // the tool's own name
	namespace   string // "" for a top-level tool
	custom      bool   // a freeform tool: takes the raw input text
	description string
	params      json.RawMessage // the JSON schema of a function tool's arguments
	// deferLoading marks a tool its set offers only through tool search (a dynamic tool's deferLoading).
	deferLoading bool
}

// deferred reports whether the tool is left out of exec's description (callable and in ALL_TOOLS all the
// same): MCP servers' tools and the tools marked defer_loading, as the reference defers them.
func (t nestedTool) deferred() bool { return t.deferLoading || strings.HasPrefix(t.namespace, "mcp__") }

// nestedTools lists the tools of one spec (a namespace gives one per member); hosted tools (web_search)
// have no JavaScript form.
func nestedTools(raw json.RawMessage) []nestedTool {
	var spec struct {
		Type        string            `json:"type"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Parameters  json.RawMessage   `json:"parameters"`
		Tools       []json.RawMessage `json:"tools"`
		Defer       bool              `json:"defer_loading"`
	}
	if json.Unmarshal(raw, &spec) != nil {
		return nil
	}
	switch spec.Type {
	case "function", "custom":
		return []nestedTool{{js: jsIdent(spec.Name), name: spec.Name, custom: spec.Type == "custom", description: spec.Description, params: spec.Parameters, deferLoading: spec.Defer}}
	case "namespace":
		var out []nestedTool
		for _, m := range spec.Tools {
			for _, t := range nestedTools(m) {
				t.namespace = spec.Name
				prefix := spec.Name
				if !strings.HasSuffix(prefix, "__") {
					prefix += "__"
				}
				t.js = jsIdent(prefix + t.name)
				out = append(out, t)
			}
		}
		return out
	}
	return nil
}

// jsIdent turns a tool name into a JavaScript identifier (every other character becomes "_").
func jsIdent(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// execGrammar is the Lark grammar of exec's input: an optional `// @exec: {…}` pragma line, then the
// source. The grammar is a format, not prose: it is the reference's.
const execGrammar = "\nstart: pragma_source | plain_source\npragma_source: PRAGMA_LINE NEWLINE SOURCE\nplain_source: SOURCE\n\nPRAGMA_LINE: /[ \\t]*\\/\\/ @exec:[^\\r\\n]*/\nNEWLINE: /\\r?\\n/\nSOURCE: /[\\s\\S]+/\n"

const execIntro = `Runs JavaScript that calls other tools and combines their results.
- The source runs as the body of an async function in a fresh JavaScript engine: top-level ` + "`await`" + ` works.
- Every nested tool is a method of the global ` + "`tools`" + ` object, e.g. ` + "`await tools.exec_command({cmd: \"ls\"})`" + `; names that are not valid identifiers have their other characters replaced by ` + "`_`" + ` (e.g. ` + "`tools.mcp__server__tool(...)`" + `).
- A nested tool takes an object (or, for a freeform tool, a string) and resolves to an object or a string, as its declaration says; a failing call rejects with the error text.
- Plain JavaScript only: there is no Node, no file system, no network and no console.
- Send the source itself, not JSON, a quoted string or a markdown fence.
- The first line may be a pragma: ` + "`// @exec: {\"yield_time_ms\": 10000, \"max_output_tokens\": 1000}`" + `.
- ` + "`yield_time_ms`" + ` (default 30000) is how long exec waits before returning while the script keeps running; continue with ` + "`wait`" + `.
- ` + "`max_output_tokens`" + ` (default 10000) caps the output returned.
- When the script ends, promises it did not await are dropped.

Globals:
- ` + "`text(value)`" + `: adds a text item to the output (non-strings go through JSON.stringify).
- ` + "`image(urlOrItem)`" + `: adds an image item; a base64 ` + "`data:`" + ` URL, ` + "`{image_url}`" + ` or an MCP ImageContent block.
- ` + "`audio(urlOrItem)`" + `: adds an audio item; a base64 ` + "`data:`" + ` URL, ` + "`{audio_url}`" + ` or an MCP AudioContent block.
- ` + "`generatedImage({image_url, output_hint?})`" + `: adds an image generation result (a base64 ` + "`data:`" + ` URL, not HTTP) and its optional hint.
- ` + "`exit()`" + `: ends the script successfully at once.
- ` + "`notify(value)`" + `: sends the model a separate short message for this exec call (stringified like ` + "`text`" + `).
- ` + "`store(key, value)`" + ` / ` + "`load(key)`" + `: keep a JSON-serialisable value for later exec calls of this thread (` + "`undefined`" + ` when missing).
- ` + "`setTimeout(callback, delayMs)`" + ` / ` + "`clearTimeout(id)`" + `: timers; a pending timer does not keep the script alive.
- ` + "`ALL_TOOLS`" + `: ` + "`{name, description}`" + ` of every nested tool.
- ` + "`yield_control()`" + `: returns the output so far to the model at once while the script keeps running.

MCP servers' tools are not described here: they are on ` + "`tools`" + ` all the same; look them up in ` + "`ALL_TOOLS`" + ` by name and description.

Nested tools may change between calls.

MCP results (TypeScript, after the MCP schema):
` + "```ts" + `
type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name: string; mimeType?: string; description?: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };
type CallToolResult = { content: ContentBlock[]; isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
` + "```" + `
`

// execSpec renders the exec tool for the given nested tools.
func execSpec(tools []nestedTool) json.RawMessage {
	var b strings.Builder
	b.WriteString(execIntro)
	for _, t := range tools {
		if t.deferred() {
			continue
		}
		fmt.Fprintf(&b, "\n### `%s`\n%s\n\nexec tool declaration:\n```ts\ndeclare const tools: { %s };\n```\n", t.js, t.description, declaration(t))
	}
	spec, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Format      any    `json:"format"`
	}{"custom", ExecTool, strings.TrimRight(b.String(), "\n"), grammar{"grammar", "lark", execGrammar}})
	return spec
}

// grammar is a custom tool's format, fields in the reference's order.
type grammar struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax"`
	Definition string `json:"definition"`
}

// function renders a function tool with its fields (and its parameters' object keys) in the reference's
// order; props are the properties in order, each {type, description[, more]}.
func function(name, description string, props []prop, required []string) json.RawMessage {
	var pb strings.Builder
	pb.WriteByte('{')
	for i, p := range props {
		if i > 0 {
			pb.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		pb.Write(k)
		pb.WriteByte(':')
		pb.Write(p.schema)
	}
	pb.WriteByte('}')
	params := struct {
		Type                 string          `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required,omitempty"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}{"object", json.RawMessage(pb.String()), required, false}
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Strict      bool   `json:"strict"`
		Parameters  any    `json:"parameters"`
	}{"function", name, description, false, params})
	return b
}

// prop is one parameter of a function tool: its name and its (already ordered) schema.
type prop struct {
	name   string
	schema json.RawMessage
}

// simple is a {type, description} schema.
func simple(typ, description string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}{typ, description})
	return b
}

// waitSpec is the wait tool (its parameters are the reference's).
var waitSpec = sync.OnceValue(func() json.RawMessage {
	return function(WaitTool, "Resumes an exec script that returned `Script running with cell ID …`: waits for its new output or its end.\n"+
		"- `cell_id` is the id exec reported.\n- `yield_time_ms` (default 10000) is how long to wait before returning again.\n"+
		"- `max_tokens` (default 10000) caps the output returned.\n- `terminate: true` stops the script.\n"+
		"- Only output produced since the last return is included; a finished script's cell is released.",
		[]prop{
			{"cell_id", simple("string", "The running cell's id.")},
			{"max_tokens", simple("number", "Token budget of this call's output (default 10000).")},
			{"terminate", simple("boolean", "true stops the cell; otherwise wait for output.")},
			{"yield_time_ms", simple("number", "How long to wait for output before returning (default 10000 ms).")},
		}, []string{"cell_id"})
})

// Result types of the tools whose JavaScript results are structured.
const execResultTS = `{
  // Chunk identifier, when reported.
  chunk_id?: string;
  // Exit code, when the process ended during the call.
  exit_code?: number;
  // Approximate token count of the output before truncation.
  original_token_count?: number;
  // The output, possibly truncated.
  output: string;
  // Id for write_stdin while the process still runs.
  session_id?: number;
  // Seconds spent waiting for output.
  wall_time_seconds: number;
}`

var resultTypes = map[string]string{
	"exec_command": execResultTS,
	"write_stdin":  execResultTS,
	"view_image":   "{\n  // The image as a data: URL.\n  image_url: string;\n}",
}

// declaration renders a tool's TypeScript method signature.
func declaration(t nestedTool) string {
	ret := "unknown"
	if r, ok := resultTypes[t.name]; ok && t.namespace == "" {
		ret = r
	}
	if t.custom {
		return fmt.Sprintf("%s(input: string): Promise<%s>;", t.js, ret)
	}
	return fmt.Sprintf("%s(args: %s): Promise<%s>;", t.js, tsType(t.params, ""), ret)
}

// tsType renders a JSON schema as a TypeScript type (objects with one commented member per line).
func tsType(raw json.RawMessage, indent string) string {
	var s struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Items      json.RawMessage            `json:"items"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "unknown"
	}
	if len(s.Enum) > 0 {
		parts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			parts[i] = string(b)
		}
		return strings.Join(parts, " | ")
	}
	typ, _ := s.Type.(string)
	switch typ {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		return "Array<" + tsType(s.Items, indent) + ">"
	case "object":
		if len(s.Properties) == 0 {
			return "{}"
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		req := map[string]bool{}
		for _, r := range s.Required {
			req[r] = true
		}
		var b strings.Builder
		b.WriteString("{\n")
		for _, n := range names {
			var p struct {
				Description string `json:"description"`
			}
			_ = json.Unmarshal(s.Properties[n], &p)
			if p.Description != "" {
				fmt.Fprintf(&b, "%s  // %s\n", indent, strings.ReplaceAll(p.Description, "\n", " "))
			}
			opt := "?"
			if req[n] {
				opt = ""
			}
			fmt.Fprintf(&b, "%s  %s%s: %s;\n", indent, n, opt, tsType(s.Properties[n], indent+"  "))
		}
		b.WriteString(indent + "}")
		return b.String()
	}
	return "unknown"
}
