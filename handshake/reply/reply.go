// Package reply builds the result of `initialize` (the user agent, the platform) and its bytes. It
// imports no encoding/json, protocol or log/slog, so that the early answer of a stdio start
// (internal/early/quick) can use it from one of the binary's first package initialisers; package
// handshake, which the server's handler uses, builds on it, so both answers are the same bytes. It
// does without strings, bufio and bytes: Go initialises packages in import-path order as their imports
// become ready, strings waits for every ready package from compress/flate to modernc.org/sqlite/vtab
// (about ten initialisers), and bytes for unicode, which is initialised after os.
package reply

import (
	"os"
	"runtime"
	"sync"

	"appserver/jsonrpc/jsonstr"
)

// Version is appserver's own version; CompatVersion is the codex-cli version whose protocol it speaks.
const (
	Version       = "0.1.0"
	CompatVersion = "0.169.0"
)

// UserAgentVersion is the version token in userAgent and cliVersion: the reference's version with our
// own as semver build metadata, so clients that gate on the codex version see 0.169.0.
const UserAgentVersion = CompatVersion + "+appserver." + Version

// AppendResult appends the result object of `initialize` as json.Marshal encodes
// protocol.InitializeResponse.
func AppendResult(b []byte, codexHome, platformFamily, platformOS, userAgent string) []byte {
	b = append(b, `{"codexHome":`...)
	b = jsonstr.Append(b, codexHome)
	b = append(b, `,"platformFamily":`...)
	b = jsonstr.Append(b, platformFamily)
	b = append(b, `,"platformOs":`...)
	b = jsonstr.Append(b, platformOS)
	b = append(b, `,"userAgent":`...)
	b = jsonstr.Append(b, userAgent)
	return append(b, '}')
}

// AppendResponse appends the answer to the request with the raw JSON id: the response line without its
// newline, as jsonrpc.EncodeResult frames a result.
func AppendResponse(b, id []byte, codexHome, clientName, clientVersion string) []byte {
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = AppendResult(b, codexHome, PlatformFamily(), PlatformOS(), UserAgent(clientName, clientVersion))
	return append(b, '}')
}

// UserAgent is the user agent reported to a client (and sent to the model provider): the client's
// name, or codex_vscode when it gave none, our version, the OS, the architecture and the terminal.
func UserAgent(clientName, clientVersion string) string {
	name := clientName
	if name == "" {
		name = "codex_vscode"
	}
	return name + "/" + UserAgentVersion + " (" + osDescription() + "; " + archName() + ") " + terminalName() + " (" + name + "; " + clientVersion + ")"
}

// PlatformFamily is the result's platformFamily: windows or unix.
func PlatformFamily() string {
	if runtime.GOOS == "windows" {
		return "windows"
	}
	return "unix"
}

// PlatformOS is the result's platformOs: the OS as the reference names it.
func PlatformOS() string {
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

var (
	osOnce sync.Once
	osDesc string
)

// osDescription is the OS's name and version from /etc/os-release (ID, VERSION_ID), read once. (A
// sync.Once rather than sync.OnceValue: no initializer work in the sandbox helper's start-up.)
func osDescription() string {
	osOnce.Do(func() { osDesc = describeOS("/etc/os-release") })
	return osDesc
}

func describeOS(file string) string {
	vals := osRelease(file)
	if vals == nil {
		return upperFirst(runtime.GOOS)
	}
	id := vals["ID"]
	if id == "" {
		id = runtime.GOOS
	}
	name := upperFirst(id)
	ver := vals["VERSION_ID"]
	if ver == "" {
		return name
	}
	dots := 0
	for i := range len(ver) {
		if ver[i] == '.' {
			dots++
		}
	}
	for ; dots < 2; dots++ {
		ver += ".0"
	}
	return name + " " + ver
}

// upperFirst upper-cases s's first byte as strings.ToUpper(s[:1]) + s[1:] does: an ASCII letter is
// upper-cased, a byte of a multi-byte character (invalid alone) becomes U+FFFD.
func upperFirst(s string) string {
	switch c := s[0]; {
	case c >= 0x80:
		return "\ufffd" + s[1:]
	case 'a' <= c && c <= 'z':
		return string(c-'a'+'A') + s[1:]
	}
	return s
}

// osRelease reads the KEY=value lines of an os-release file, values unquoted; nil when it cannot be
// read. As bufio.Scanner, it drops a line's trailing \r and stops at a line longer than 64 KiB.
func osRelease(file string) map[string]string {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	vals := map[string]string{}
	for len(data) > 0 {
		line := data
		if i := index(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > 64<<10 {
			break
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if i := index(line, '='); i >= 0 {
			vals[string(line[:i])] = string(trimQuotes(line[i+1:]))
		}
	}
	return vals
}

func index(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// trimQuotes is strings.Trim(v, `"'`).
func trimQuotes(v []byte) []byte {
	for len(v) > 0 && (v[0] == '"' || v[0] == '\'') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == '"' || v[len(v)-1] == '\'') {
		v = v[:len(v)-1]
	}
	return v
}

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
