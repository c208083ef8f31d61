// Package handshake builds the answer to a client's `initialize` request: the server's versions, the
// user agent and the platform. The server's handler and the early answer of a stdio start
// (internal/early) both use it, so the two answers are the same bytes.
package handshake

import (
	"bufio"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// Version is appserver's own version; CompatVersion is the codex-cli version whose protocol it speaks.
const (
	Version       = "0.1.0"
	CompatVersion = "0.169.0"
)

// UserAgentVersion is the version token in userAgent and cliVersion: the reference's version with our
// own as semver build metadata, so clients that gate on the codex version see 0.169.0.
const UserAgentVersion = CompatVersion + "+appserver." + Version

// Reply is the result of `initialize`. It encodes itself (jsonrpc.Appender) as json.Marshal encodes
// protocol.InitializeResponse, without reflection: encoding/json's first use is a noticeable part of
// an early answer.
type Reply protocol.InitializeResponse

// AppendJSON implements jsonrpc.Appender.
func (r Reply) AppendJSON(b []byte) []byte {
	b = append(b, `{"codexHome":`...)
	b = jsonrpc.AppendString(b, r.CodexHome)
	b = append(b, `,"platformFamily":`...)
	b = jsonrpc.AppendString(b, r.PlatformFamily)
	b = append(b, `,"platformOs":`...)
	b = jsonrpc.AppendString(b, r.PlatformOs)
	b = append(b, `,"userAgent":`...)
	b = jsonrpc.AppendString(b, r.UserAgent)
	return append(b, '}')
}

// Response is the result of `initialize` for a client, with the server's CODEX_HOME.
func Response(ci protocol.ClientInfo, codexHome string) Reply {
	return Reply{
		UserAgent:      UserAgent(ci),
		CodexHome:      protocol.AbsolutePathBuf(codexHome),
		PlatformFamily: platformFamily(),
		PlatformOs:     platformOS(),
	}
}

// DecodeParams decodes the params of a well-formed `initialize` request; ok is false for anything
// the server's decoding refuses (the server then answers it itself): both decode with
// protocol.DecodeParams, so they cannot disagree.
func DecodeParams(raw json.RawMessage) (p *protocol.InitializeParams, ok bool) {
	spec := initializeSpec()
	if spec == nil {
		return nil, false
	}
	v, err := protocol.DecodeParams(spec, raw, nil)
	if err != nil {
		return nil, false
	}
	p, ok = v.(*protocol.InitializeParams)
	return p, ok && p != nil
}

// initializeSpec finds initialize in the method table without building the table's index (the early
// answer needs no other method).
func initializeSpec() *protocol.MethodSpec {
	for i := range protocol.ClientRequests {
		if protocol.ClientRequests[i].Name == protocol.MethodInitialize {
			return &protocol.ClientRequests[i]
		}
	}
	return nil
}

// UserAgent is the user agent reported to a client (and sent to the model provider): the client's
// name, or codex_vscode when it gave none, our version, the OS, the architecture and the terminal.
func UserAgent(ci protocol.ClientInfo) string {
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
