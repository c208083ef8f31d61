package mcpconn

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statusListTimeout bounds the resources/list and resources/templates/list requests of Statuses.
const statusListTimeout = 10 * time.Second

// ServerStatus is one McpServerStatus entry of mcpServerStatus/list. The JSON members match the
// reference; RuntimeStatus is left null (set it from ConnectionStatus when the request names a
// thread). The fields tagged "-" are for the owner only.
type ServerStatus struct {
	Name               string                     `json:"name"`
	RuntimeStatus      *string                    `json:"runtimeStatus"`
	PluginID           *string                    `json:"pluginId"`
	HTTPOrigin         *string                    `json:"httpOrigin"`
	ServerInfo         json.RawMessage            `json:"serverInfo"`
	ServerCapabilities json.RawMessage            `json:"serverCapabilities"`
	ToolListMeta       json.RawMessage            `json:"toolListMeta"`
	Tools              map[string]json.RawMessage `json:"tools"`
	ToolsError         *string                    `json:"toolsError"`
	Resources          []json.RawMessage          `json:"resources"`
	ResourceTemplates  []json.RawMessage          `json:"resourceTemplates"`
	AuthStatus         string                     `json:"authStatus"`

	// StartupStatus is starting, ready, failed or cancelled; StartupError the OnStatus message.
	StartupStatus string `json:"-"`
	StartupError  string `json:"-"`
	// ConnectionStatus is the McpServerConnectionStatus value: starting, connected, failed
	// (including a server that died after startup) or cancelled.
	ConnectionStatus string `json:"-"`
}

// Statuses describes every enabled server, sorted by name. Resources and resource templates of
// ready servers are fetched live (errors yield empty lists), bounded by ctx and 10 s.
func (m *Manager) Statuses(ctx context.Context) []ServerStatus {
	servers := append([]*server(nil), m.servers...)
	sort.Slice(servers, func(i, j int) bool { return servers[i].cfg.Name < servers[j].cfg.Name })
	out := make([]ServerStatus, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		out[i] = s.status1()
		if out[i].ConnectionStatus != "connected" {
			continue
		}
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, statusListTimeout)
			defer cancel()
			out[i].Resources = m.collect(lctx, s.cfg.Name, m.ListResources)
			out[i].ResourceTemplates = m.collect(lctx, s.cfg.Name, m.ListResourceTemplates)
		})
	}
	wg.Wait()
	return out
}

func (m *Manager) collect(ctx context.Context, server string, list func(context.Context, string, string) ([]json.RawMessage, string, error)) []json.RawMessage {
	all := []json.RawMessage{}
	cursor := ""
	for {
		items, next, err := list(ctx, server, cursor)
		if err != nil {
			return all
		}
		all = append(all, items...)
		if next == "" || next == cursor {
			return all
		}
		cursor = next
	}
}

// status1 snapshots the locally known part of a server's status.
func (s *server) status1() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{
		Name: s.cfg.Name, Tools: map[string]json.RawMessage{}, AuthStatus: "unsupported",
		Resources: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{},
		StartupStatus: s.status, StartupError: s.errMsg,
	}
	if s.cfg.URL != "" {
		if u, err := url.Parse(s.cfg.URL); err == nil && u.Host != "" {
			origin := u.Scheme + "://" + u.Host
			st.HTTPOrigin = &origin
		}
	}
	switch s.status {
	case StatusStarting:
		st.ConnectionStatus = "starting"
	case StatusCancelled:
		st.ConnectionStatus = "cancelled"
	case StatusFailed:
		st.ConnectionStatus = "failed"
	case StatusReady:
		st.ConnectionStatus = "connected"
		if !s.alive {
			st.ConnectionStatus = "failed"
		}
	}
	if s.toolsErr != "" {
		e := s.toolsErr
		st.ToolsError = &e
	}
	if s.initRes != nil {
		st.ServerInfo = serverInfoJSON(s.initRes.ServerInfo)
		st.ServerCapabilities = capabilitiesJSON(s.raw, s.initRes.Capabilities)
	}
	for _, t := range s.tools {
		st.Tools[t.Name] = toolJSON(s.raw, t)
	}
	return st
}

// serverInfoJSON renders McpServerInfo with explicit nulls like the reference.
func serverInfoJSON(impl *mcp.Implementation) json.RawMessage {
	if impl == nil {
		return nil
	}
	nullable := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	var icons any
	if len(impl.Icons) > 0 {
		icons = impl.Icons
	}
	b, _ := json.Marshal(struct {
		Name        string `json:"name"`
		Title       any    `json:"title"`
		Version     string `json:"version"`
		Description any    `json:"description"`
		Icons       any    `json:"icons"`
		WebsiteURL  any    `json:"websiteUrl"`
	}{impl.Name, nullable(impl.Title), impl.Version, nullable(impl.Description), icons, nullable(impl.WebsiteURL)})
	return b
}

// capabilitiesJSON prefers the raw capabilities from the initialize response.
func capabilitiesJSON(raw *rawCapture, caps *mcp.ServerCapabilities) json.RawMessage {
	if init := raw.initResult(); init != nil {
		var r struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if json.Unmarshal(init, &r) == nil && r.Capabilities != nil {
			return r.Capabilities
		}
	}
	if caps == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
