package server

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/google/uuid"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/sandbox"
)

// UserAgentVersion is the version token in userAgent and cliVersion: the reference's version with our
// own as semver build metadata, so clients that gate on the codex version see 0.169.0.
const UserAgentVersion = CompatVersion + "+appserver." + Version

func (s *Server) initialize(_ context.Context, c *connection, req *jsonrpc.Request) (any, error) {
	if c.isInitialized() {
		return nil, jsonrpc.InvalidRequest("Already initialized")
	}
	spec, _ := protocol.LookupClientRequest(protocol.MethodInitialize)
	raw, err := decodeParams(spec, req.Params)
	if err != nil {
		return nil, err
	}
	p := raw.(*protocol.InitializeParams)
	c.mu.Lock()
	c.initialized = true
	c.clientInfo = p.ClientInfo
	c.optOut = map[string]bool{}
	if caps := p.Capabilities; caps != nil {
		c.experimental = caps.ExperimentalAPI != nil && *caps.ExperimentalAPI
		for _, m := range caps.OptOutNotificationMethods {
			c.optOut[m] = true
		}
	}
	c.mu.Unlock()
	req.Reply(protocol.InitializeResponse{
		UserAgent:      userAgent(p.ClientInfo),
		CodexHome:      protocol.AbsolutePathBuf(s.cfg.CodexHome),
		PlatformFamily: platformFamily(),
		PlatformOs:     platformOS(),
	}, nil)
	c.notify(protocol.NotifyRemoteControlStatusChanged, map[string]any{
		"status":         "disabled",
		"serverName":     hostname(),
		"installationId": s.installationID(),
		"environmentId":  nil,
	})
	if ok, reason := sandbox.Available(); !ok {
		details := "Commands under read-only or workspace-write are refused rather than run unsandboxed; use danger-full-access to run them without a sandbox."
		c.notify(protocol.NotifyConfigWarning, protocol.ConfigWarningNotification{
			Summary: "Sandboxing is unavailable on this machine: " + reason, Details: &details,
		})
	}
	return nil, nil
}

func userAgent(ci protocol.ClientInfo) string {
	name := ci.Name
	if name == "" {
		name = "codex_vscode"
	}
	return name + "/" + UserAgentVersion + " (" + osDescription() + "; " + archName() + ") " + terminalName() + " (" + name + "; " + ci.Version + ")"
}

func platformFamily() string {
	if runtime.GOOS == "windows" {
		return "windows"
	}
	return "unix"
}

func platformOS() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}

func archName() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return runtime.GOARCH
}

var osDescription = sync.OnceValue(func() string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	id := vals["ID"]
	if id == "" {
		id = runtime.GOOS
	}
	name := strings.ToUpper(id[:1]) + id[1:]
	ver := vals["VERSION_ID"]
	if ver == "" {
		return name
	}
	for strings.Count(ver, ".") < 2 {
		ver += ".0"
	}
	return name + " " + ver
})

func terminalName() string {
	if tp := os.Getenv("TERM_PROGRAM"); tp != "" {
		if v := os.Getenv("TERM_PROGRAM_VERSION"); v != "" {
			return tp + "/" + v
		}
		return tp
	}
	if t := os.Getenv("TERM"); t != "" {
		return t
	}
	return "unknown"
}

// installationID returns the id stored in $CODEX_HOME/installation_id, creating it on first use.
func (s *Server) installationID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.install != "" {
		return s.install
	}
	path := filepath.Join(s.cfg.CodexHome, "installation_id")
	if b, err := os.ReadFile(path); err == nil {
		if id, err := uuid.Parse(strings.TrimSpace(string(b))); err == nil {
			s.install = id.String()
			return s.install
		}
	}
	s.install = uuid.NewString()
	if err := os.WriteFile(path, []byte(s.install), 0o644); err != nil {
		s.log.Warn("could not persist installation id", "path", path, "error", err)
	}
	return s.install
}
