package mcpconn

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"appserver/toolsearch"
)

// maxToolNameLen is the Responses API limit on tool and namespace names.
const maxToolNameLen = 64

// NamespacePrefix starts every MCP namespace name offered to the model ("mcp__<server>").
const NamespacePrefix = "mcp__"

// sanitizeName replaces characters outside [A-Za-z0-9_-] with '_' and shortens names longer than
// 64 characters to a prefix plus the SHA-1 hex of the original name.
func sanitizeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if len(out) <= maxToolNameLen {
		return out
	}
	sum := sha1.Sum([]byte(name))
	suffix := hex.EncodeToString(sum[:])
	return out[:maxToolNameLen-len(suffix)] + suffix
}

// NamespaceName is the model-facing namespace of a server's tools.
func NamespaceName(server string) string { return sanitizeName(NamespacePrefix + server) }

// functionTool is a Responses API function tool (field order as the reference sends it).
type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Strict      bool            `json:"strict"`
	Parameters  json.RawMessage `json:"parameters"`
}

// namespaceTool groups one server's tools.
type namespaceTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Tools       []functionTool `json:"tools"`
}

// Model-facing names of the resource helper functions.
const (
	ToolListResources         = "list_mcp_resources"
	ToolListResourceTemplates = "list_mcp_resource_templates"
	ToolReadResource          = "read_mcp_resource"
)

var resourceTools = []json.RawMessage{
	json.RawMessage(`{"type":"function","name":"list_mcp_resources","description":"Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.","strict":false,"parameters":{"type":"object","properties":{"cursor":{"type":"string","description":"Opaque cursor from a previous list_mcp_resources call; omit for the first page."},"server":{"type":"string","description":"MCP server name. Omit to list resources from every configured server."}},"additionalProperties":false}}`),
	json.RawMessage(`{"type":"function","name":"list_mcp_resource_templates","description":"Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.","strict":false,"parameters":{"type":"object","properties":{"cursor":{"type":"string","description":"Opaque cursor from a previous list_mcp_resource_templates call; omit for the first page."},"server":{"type":"string","description":"MCP server name. Omit to list resource templates from every configured server."}},"additionalProperties":false}}`),
	json.RawMessage(`{"type":"function","name":"read_mcp_resource","description":"Read a specific resource from an MCP server given the server name and resource URI.","strict":false,"parameters":{"type":"object","properties":{"server":{"type":"string","description":"MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},"uri":{"type":"string","description":"Resource URI to read. Must be one of the URIs returned by list_mcp_resources."}},"required":["server","uri"],"additionalProperties":false}}`),
}

// ResourceToolSpecs returns the three resource helper functions whatever the servers (code mode offers
// them without any).
func ResourceToolSpecs() []json.RawMessage { return append([]json.RawMessage(nil), resourceTools...) }

// ResourceTools returns the three resource helper functions (list_mcp_resources,
// list_mcp_resource_templates, read_mcp_resource), or nil when no server is configured.
func (m *Manager) ResourceTools() []json.RawMessage {
	if len(m.servers) == 0 {
		return nil
	}
	return append([]json.RawMessage(nil), resourceTools...)
}

// readyNamespace is one ready server's tools as the model sees them.
type readyNamespace struct {
	ns           namespaceTool
	instructions string
}

// readyNamespaces lists the ready servers with at least one tool, sorted by server name, each tool under its
// sanitized name (the first of equal names wins). Failed, starting and dead servers are omitted.
func (m *Manager) readyNamespaces() []readyNamespace {
	servers := append([]*server(nil), m.servers...)
	sort.Slice(servers, func(i, j int) bool { return servers[i].cfg.Name < servers[j].cfg.Name })
	var out []readyNamespace
	for _, s := range servers {
		s.mu.Lock()
		ready, tools, init := s.status == StatusReady && s.alive, s.tools, s.initRes
		s.mu.Unlock()
		if !ready || len(tools) == 0 {
			continue
		}
		r := readyNamespace{ns: namespaceTool{Type: "namespace", Name: NamespaceName(s.cfg.Name)}}
		if init != nil && init.Instructions != "" {
			r.ns.Description, r.instructions = init.Instructions, init.Instructions
		} else {
			r.ns.Description = fmt.Sprintf("Tools in the %s namespace.", r.ns.Name)
		}
		seen := map[string]bool{}
		for _, t := range tools {
			name := sanitizeName(t.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			params, err := json.Marshal(t.InputSchema)
			if err != nil || string(params) == "null" {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			r.ns.Tools = append(r.ns.Tools, functionTool{Type: "function", Name: name, Description: t.Description, Parameters: params})
		}
		out = append(out, r)
	}
	return out
}

// NamespaceTools returns one `{"type":"namespace","name":"mcp__<server>",...}` entry per ready
// server with at least one tool, sorted by server name. Failed, starting and dead servers are
// omitted.
func (m *Manager) NamespaceTools() []json.RawMessage {
	var out []json.RawMessage
	for _, r := range m.readyNamespaces() {
		if b, err := json.Marshal(r.ns); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// SearchTools returns the ready servers' tools as tool_search finds them on a model that searches for
// tools (the reference defers every MCP tool there), and their namespaces for the `<tools>` notice: the
// server's instructions, or no description when it gives none (the search's namespace entry then says
// "Tools in the mcp__<server> namespace.", as NamespaceTools does).
func (m *Manager) SearchTools() ([]toolsearch.Tool, []toolsearch.Namespace) {
	var tools []toolsearch.Tool
	var namespaces []toolsearch.Namespace
	for _, r := range m.readyNamespaces() {
		for _, f := range r.ns.Tools {
			tools = append(tools, toolsearch.Tool{Namespace: r.ns.Name, NamespaceDescription: r.ns.Description,
				Name: f.Name, Description: f.Description, Parameters: f.Parameters})
		}
		namespaces = append(namespaces, toolsearch.Namespace{Name: r.ns.Name, Description: r.instructions})
	}
	return tools, namespaces
}

// ModelTools returns what the turn engine adds to the Responses `tools` array for MCP: the
// resource helper functions followed by the namespaces of the ready servers.
func (m *Manager) ModelTools() []json.RawMessage {
	return append(m.ResourceTools(), m.NamespaceTools()...)
}

// Resolve maps a model function call to an MCP server and tool: the namespaced form only (namespace
// "mcp__<server>", name "<tool>"); the reference answers a flat `mcp__<server>__<tool>` call "unsupported call".
// Only tools of ready servers that pass the tool filters resolve.
func (m *Manager) Resolve(namespace, name string) (server, tool string, ok bool) {
	for _, s := range m.servers {
		s.mu.Lock()
		ready, tools := s.status == StatusReady, s.tools
		s.mu.Unlock()
		if !ready {
			continue
		}
		if namespace == "" || namespace != NamespaceName(s.cfg.Name) {
			continue
		}
		for _, t := range tools {
			if sanitizeName(t.Name) == name {
				return s.cfg.Name, t.Name, true
			}
		}
	}
	return "", "", false
}

// Tool returns the MCP tool definition of a ready server (annotations, description, schema) as
// JSON, e.g. for approval prompts; ok is false when unknown.
func (m *Manager) Tool(server, tool string) (json.RawMessage, bool) {
	s, ok := m.byName[server]
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools {
		if t.Name == tool {
			return toolJSON(s.raw, t), true
		}
	}
	return nil, false
}

// toolJSON prefers the raw tool as the server sent it; otherwise it re-serializes the SDK struct,
// dropping the SDK's always-present idempotentHint when it is false.
func toolJSON(raw *rawCapture, t *mcp.Tool) json.RawMessage {
	if r := raw.tool(t.Name); r != nil {
		return r
	}
	b, err := json.Marshal(t)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	var obj map[string]any
	if json.Unmarshal(b, &obj) == nil {
		if ann, ok := obj["annotations"].(map[string]any); ok {
			if v, ok := ann["idempotentHint"].(bool); ok && !v {
				delete(ann, "idempotentHint")
			}
		}
		if b2, err := json.Marshal(obj); err == nil {
			return b2
		}
	}
	return b
}
