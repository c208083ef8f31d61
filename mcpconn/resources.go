package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListResources returns one page of a server's resources (MCP Resource objects as JSON) and the
// next cursor ("" on the last page).
func (m *Manager) ListResources(ctx context.Context, server, cursor string) ([]json.RawMessage, string, error) {
	s, sess, err := m.ready(server)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.toolTimeout())
	defer cancel()
	res, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("resources/list failed for `%s`: %w", server, err)
	}
	return marshalAll(res.Resources), res.NextCursor, nil
}

// ListResourceTemplates returns one page of a server's resource templates and the next cursor.
func (m *Manager) ListResourceTemplates(ctx context.Context, server, cursor string) ([]json.RawMessage, string, error) {
	s, sess, err := m.ready(server)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.toolTimeout())
	defer cancel()
	res, err := sess.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("resources/templates/list failed for `%s`: %w", server, err)
	}
	return marshalAll(res.ResourceTemplates), res.NextCursor, nil
}

// ReadResource reads uri from server and returns the MCP ReadResourceResult ({"contents":[...]})
// as JSON, the shape of the mcpServer/resource/read response.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	s, sess, err := m.ready(server)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.toolTimeout())
	defer cancel()
	res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("resources/read failed for `%s`: %w", server, err)
	}
	contents := res.Contents
	if contents == nil {
		contents = []*mcp.ResourceContents{}
	}
	return json.Marshal(map[string]any{"contents": contents})
}

func marshalAll[T any](items []*T) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		if b, err := json.Marshal(it); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// withServer prepends a "server" member to a JSON object, keeping the other members' order.
func withServer(obj json.RawMessage, server string) json.RawMessage {
	name, _ := json.Marshal(server)
	if len(obj) < 2 || obj[0] != '{' {
		return obj
	}
	out := append([]byte(`{"server":`), name...)
	if rest := obj[1:]; len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}

// ResourceToolCall runs one of the model functions list_mcp_resources,
// list_mcp_resource_templates or read_mcp_resource with its JSON arguments and returns the text
// to send back as the function_call_output.
func (m *Manager) ResourceToolCall(ctx context.Context, name string, args json.RawMessage) (string, error) {
	var a struct {
		Server string `json:"server"`
		Cursor string `json:"cursor"`
		URI    string `json:"uri"`
	}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return "", fmt.Errorf("failed to parse function arguments: %w", err)
		}
	}
	switch name {
	case ToolListResources, ToolListResourceTemplates:
		key := "resources"
		list := m.ListResources
		if name == ToolListResourceTemplates {
			key, list = "resourceTemplates", m.ListResourceTemplates
		}
		if a.Server == "" {
			if a.Cursor != "" {
				return "", errors.New("cursor can only be used when a server is specified")
			}
			all := []json.RawMessage{}
			for _, srv := range m.readyNames() {
				cursor := ""
				for {
					items, next, err := list(ctx, srv, cursor)
					if err != nil {
						return "", err
					}
					for _, it := range items {
						all = append(all, withServer(it, srv))
					}
					if next == "" || next == cursor {
						break
					}
					cursor = next
				}
			}
			b, err := json.Marshal(map[string]any{key: all}) // a single member: order is moot
			return string(b), err
		}
		items, next, err := list(ctx, a.Server, a.Cursor)
		if err != nil {
			return "", err
		}
		for i, it := range items {
			items[i] = withServer(it, a.Server)
		}
		var page any = serverPage{Server: a.Server, Items: items, NextCursor: next}
		if name == ToolListResourceTemplates {
			page = serverTemplatePage{Server: a.Server, Items: items, NextCursor: next}
		}
		b, err := json.Marshal(page)
		return string(b), err
	case ToolReadResource:
		if a.Server == "" || a.URI == "" {
			return "", errors.New("read_mcp_resource requires `server` and `uri`")
		}
		raw, err := m.ReadResource(ctx, a.Server, a.URI)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(struct {
			Server   string          `json:"server"`
			URI      string          `json:"uri"`
			Contents json.RawMessage `json:"contents"`
		}{a.Server, a.URI, contentsOf(raw)})
		return string(b), err
	}
	return "", fmt.Errorf("unknown MCP resource function `%s`", name)
}

func contentsOf(raw json.RawMessage) json.RawMessage {
	var r struct {
		Contents json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Contents == nil {
		return json.RawMessage(`[]`)
	}
	return r.Contents
}

// readyNames lists the ready, connected servers sorted by name.
func (m *Manager) readyNames() []string {
	var names []string
	for _, s := range m.servers {
		s.mu.Lock()
		if s.status == StatusReady && s.alive {
			names = append(names, s.cfg.Name)
		}
		s.mu.Unlock()
	}
	sort.Strings(names)
	return names
}

// serverPage is the list_mcp_resources output for one server (members in the reference's order).
type serverPage struct {
	Server     string            `json:"server"`
	Items      []json.RawMessage `json:"resources"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// serverTemplatePage is the list_mcp_resource_templates output for one server.
type serverTemplatePage struct {
	Server     string            `json:"server"`
	Items      []json.RawMessage `json:"resourceTemplates"`
	NextCursor string            `json:"nextCursor,omitempty"`
}
