// Package quick answers a plain stdio start's first line, when it is a simple `initialize`, from one of
// the binary's first package initialisers.
//
// Go initialises packages in import-path order as their imports become ready (see internal/reexec).
// Package internal/early needs the protocol types and the JSON-RPC decoding, which wait for
// encoding/json and log/slog, and those sort after (and so wait for) every ready package from
// compress/flate to encoding/gob: early runs about 75 initialisers after os. This package imports only
// packages that are ready right after os (firstline, codexhome, handshake/reply; not even bytes or
// strconv): its initializer
// starts a goroutine that parses the first line with a small decoder of its own and, when the line
// is an initialize it fully understands, writes the answer (handshake/reply, the bytes of the server's
// handler) while the rest of the binary initialises on the other core.
//
// The decoder accepts a subset of what the server's strict decoding accepts: an object with exactly
// the members jsonrpc (a string), id (an integer or a string), method ("initialize") and params,
// whose params hold clientInfo (name, version and an optional title) and optionally capabilities with
// boolean flags and optOutNotificationMethods; strings without escapes, no member twice. Anything
// else (an escape, an extension, an unknown member, a duplicate, a line without a newline yet) is left
// to internal/early, which decodes it as the server does; TestQuickIsTheServers checks that what this
// package answers is answered the same by that path.
package quick

import (
	"io"
	"os"
	"unicode/utf8"

	"appserver/config/codexhome"
	"appserver/handshake/reply"
	"appserver/internal/early/firstline"
)

var (
	done     = make(chan struct{})
	answered bool
)

func init() {
	if !firstline.Started() {
		return
	}
	go func() {
		read, eol := firstline.Result()
		if _, ok := Parse(read, eol); ok {
			if home, err := codexhome.Dir(); err == nil { // else the server reports the error
				answered = Answer(read, eol, os.Stdout, home)
			}
		}
		close(done)
	}()
}

// Answered waits for the quick answer and reports whether the first line was answered; call it only if
// firstline.Started.
func Answered() bool {
	<-done
	return answered
}

// Line is a first line the quick decoder understood.
type Line struct {
	// ID is the request's id, raw (a JSON integer or string).
	ID []byte
	// Name, Title and Version are the clientInfo's.
	Name, Version string
	Title         *string
}

// Answer writes the answer to the first line (read[:eol]) to stdout when Parse understands it, and
// reports whether it did.
func Answer(read []byte, eol int, stdout io.Writer, codexHome string) bool {
	l, ok := Parse(read, eol)
	if !ok {
		return false
	}
	b := append(reply.AppendResponse(make([]byte, 0, 512), l.ID, codexHome, l.Name, l.Version), '\n')
	// A failed write is the server's failed write: the client is gone either way.
	_, _ = stdout.Write(b)
	return true
}

// Parse decodes the first line (read[:eol], eol < 0: none yet) when it is an initialize request this
// package understands.
func Parse(read []byte, eol int) (Line, bool) {
	if eol < 0 || eol > len(read) {
		return Line{}, false
	}
	p := parser{b: read[:eol]}
	l, ok := p.request()
	if !ok {
		return Line{}, false
	}
	p.space()
	return l, p.i == len(p.b)
}

type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c when it is the next byte.
func (p *parser) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek skips white space and returns the next byte (0 at the end).
func (p *parser) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// literal consumes s (true, false, null) when it comes next.
func (p *parser) literal(s string) bool {
	p.space()
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str consumes a string without escapes or control bytes whose contents are valid UTF-8, and returns
// its contents and its raw bytes (quotes included).
func (p *parser) str() (s string, raw []byte, ok bool) {
	if !p.next('"') {
		return "", nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			v := p.b[start:p.i]
			p.i++
			if !utf8.Valid(v) {
				return "", nil, false
			}
			return string(v), p.b[start-1 : p.i], true
		case c == '\\' || c < 0x20:
			return "", nil, false
		}
		p.i++
	}
	return "", nil, false
}

// object consumes an object, calling member for each member with the cursor on its value; member
// consumes the value. A member seen twice fails the object.
func (p *parser) object(member func(key string) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	var seen []string
	for {
		key, _, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		for _, k := range seen {
			if k == key {
				return false
			}
		}
		seen = append(seen, key)
		if !member(key) {
			return false
		}
		if p.next(',') {
			continue
		}
		return p.next('}')
	}
}

// id consumes a request id: a string, or an integer that fits in an int64 (what jsonrpc.Decode
// accepts), and returns its raw bytes.
func (p *parser) id() ([]byte, bool) {
	if p.peek() == '"' {
		_, raw, ok := p.str()
		return raw, ok
	}
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || n > 1 && p.b[digits] == '0' {
		return nil, false
	}
	// An int64 has at most 19 digits; compare 19 to its bounds (package strconv sorts late, see the
	// package comment).
	limit := "9223372036854775807"
	if start < digits {
		limit = "9223372036854775808"
	}
	if n > len(limit) || n == len(limit) && string(p.b[digits:p.i]) > limit {
		return nil, false
	}
	return p.b[start:p.i], true
}

func (p *parser) request() (Line, bool) {
	var l Line
	var method, params bool
	ok := p.object(func(key string) bool {
		switch key {
		case "jsonrpc":
			_, _, ok := p.str()
			return ok
		case "id":
			var ok bool
			l.ID, ok = p.id()
			return ok
		case "method":
			m, _, ok := p.str()
			method = ok && m == "initialize"
			return method
		case "params":
			params = p.params(&l)
			return params
		}
		return false
	})
	return l, ok && l.ID != nil && method && params
}

func (p *parser) params(l *Line) bool {
	var client bool
	ok := p.object(func(key string) bool {
		switch key {
		case "clientInfo":
			client = p.clientInfo(l)
			return client
		case "capabilities":
			return p.literal("null") || p.capabilities()
		}
		return false
	})
	return ok && client
}

func (p *parser) clientInfo(l *Line) bool {
	var name, version bool
	ok := p.object(func(key string) bool {
		var ok bool
		switch key {
		case "name":
			l.Name, _, ok = p.str()
			name = ok
		case "version":
			l.Version, _, ok = p.str()
			version = ok
		case "title":
			if p.literal("null") {
				return true
			}
			var t string
			t, _, ok = p.str()
			l.Title = &t
		}
		return ok
	})
	return ok && name && version
}

func (p *parser) capabilities() bool {
	return p.object(func(key string) bool {
		switch key {
		case "experimentalApi", "explicitGatewayOauth", "mcpServerOpenaiFormElicitation", "requestAttestation",
			"requiredHumanApproval":
			return p.literal("true") || p.literal("false") || p.literal("null")
		case "optOutNotificationMethods":
			if p.literal("null") {
				return true
			}
			if !p.next('[') {
				return false
			}
			if p.next(']') {
				return true
			}
			for {
				if _, _, ok := p.str(); !ok {
					return false
				}
				if !p.next(',') {
					return p.next(']')
				}
			}
		}
		return false
	})
}
