package rollout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"sync"

	fastjson "github.com/segmentio/encoding/json"
)

// maxLineBytes bounds one record when a whole record is needed (a reader keeps at most this much of a line).
const maxLineBytes = 256 << 20

// lineReader streams lines without ever holding more than one (bounded) line.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	off int64 // byte offset of the next line
}

// readerPool recycles the 64 KiB read buffers: an index build reads tens of thousands of rollouts.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func newLineReader(r io.Reader) *lineReader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return &lineReader{br: br}
}

// release returns the read buffer for reuse; lr must not be used afterwards.
func (lr *lineReader) release() {
	if lr.br != nil {
		lr.br.Reset(nil)
		readerPool.Put(lr.br)
		lr.br = nil
	}
}

// next returns the next line without its newline. At most limit bytes are kept (truncated reports that more were
// dropped); complete reports that the line was terminated by '\n'. The slice is reused by the next call. It returns
// io.EOF when no bytes are left.
func (lr *lineReader) next(limit int) (ln []byte, truncated, complete bool, err error) {
	lr.buf = lr.buf[:0]
	read := 0
	for {
		chunk, e := lr.br.ReadSlice('\n')
		read += len(chunk)
		if room := limit - len(lr.buf); room > 0 {
			if len(chunk) <= room {
				lr.buf = append(lr.buf, chunk...)
			} else {
				lr.buf = append(lr.buf, chunk[:room]...)
				truncated = true
			}
		} else if len(chunk) > 0 {
			truncated = true
		}
		if e == nil {
			complete = true
			break
		}
		if errors.Is(e, bufio.ErrBufferFull) {
			continue
		}
		if e == io.EOF {
			if read == 0 {
				return nil, false, false, io.EOF
			}
			break
		}
		return nil, false, false, e
	}
	lr.off += int64(read)
	contentLen := read
	if complete {
		contentLen--
	}
	truncated = contentLen > limit
	ln = lr.buf
	if len(ln) > contentLen {
		ln = ln[:contentLen]
	}
	return ln, truncated, complete, nil
}

var (
	typeKey    = []byte(`"type"`)
	ordinalKey = []byte(`"ordinal"`)
	payloadKey = []byte(`"payload"`)
	tsKey      = []byte(`"timestamp"`)
)

// stringAfterKey returns the JSON string value following key in b ("key": "value"), scanning only the start.
func stringAfterKey(b, key []byte) (string, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return "", false
	}
	rest := bytes.TrimLeft(b[i+len(key):], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return "", false
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	if len(rest) == 0 || rest[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		return "", false
	}
	return string(rest[1 : 1+end]), true
}

// prefixType returns the envelope's record type from the start of a line without decoding it; ok is false when the
// envelope puts "payload" before "type" (then the caller must decode).
func prefixType(ln []byte) (string, bool) {
	head := ln
	if len(head) > 512 {
		head = head[:512]
	}
	ti := bytes.Index(head, typeKey)
	if ti < 0 {
		return "", false
	}
	if pi := bytes.Index(head, payloadKey); pi >= 0 && pi < ti {
		return "", false
	}
	return stringAfterKey(head[ti:], typeKey)
}

// prefixOrdinal returns the envelope's ordinal from the start of a line.
func prefixOrdinal(ln []byte) (int64, bool) {
	if _, ord, _, _, ok := canonicalEnvelope(ln); ok {
		// The same answer as the search below gives for such a line, without searching.
		if ord == nil {
			return 0, false
		}
		n, err := strconv.ParseInt(string(ord), 10, 64)
		return n, err == nil
	}
	head := ln
	if len(head) > 256 {
		head = head[:256]
	}
	i := bytes.Index(head, ordinalKey)
	if i < 0 {
		return 0, false
	}
	if pi := bytes.Index(head, payloadKey); pi >= 0 && pi < i {
		return 0, false
	}
	rest := bytes.TrimLeft(head[i+len(ordinalKey):], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}

// prefixTimestamp returns the envelope's timestamp string from the start of a line.
func prefixTimestamp(ln []byte) (string, bool) {
	head := ln
	if len(head) > 256 {
		head = head[:256]
	}
	i := bytes.Index(head, tsKey)
	if i < 0 {
		return "", false
	}
	if pi := bytes.Index(head, payloadKey); pi >= 0 && pi < i {
		return "", false
	}
	return stringAfterKey(head[i:], tsKey)
}

// canonicalHead parses the start of a record written the way our recorder and the reference write it,
// {"timestamp":"…",("ordinal":N,)?"type":"…","payload":, within the first 256 bytes, with plain strings (see
// plainString), and returns the timestamp, the type and the offset of the payload; the slices alias ln. ok is
// false for any other shape. When it is true, prefixType and prefixTimestamp give the same type and timestamp.
func canonicalHead(ln []byte) (ts, typ []byte, payload int, ok bool) {
	ts, _, typ, payload, ok = canonicalEnvelope(ln)
	return ts, typ, payload, ok
}

// canonicalEnvelope is canonicalHead that also returns the ordinal's digits (nil when the record has none).
func canonicalEnvelope(ln []byte) (ts, ord, typ []byte, payload int, ok bool) {
	const (
		tsKey   = `{"timestamp":`
		ordKey  = `,"ordinal":`
		typeKey = `,"type":`
		payKey  = `,"payload":`
	)
	head := ln[:min(len(ln), 256)]
	if !bytes.HasPrefix(head, []byte(tsKey)) {
		return nil, nil, nil, 0, false
	}
	if ts, payload, ok = plainBytes(head, len(tsKey)); !ok {
		return nil, nil, nil, 0, false
	}
	if bytes.HasPrefix(head[payload:], []byte(ordKey)) {
		j := payload + len(ordKey)
		k := j
		for k < len(head) && head[k] >= '0' && head[k] <= '9' {
			k++
		}
		if k == j {
			return nil, nil, nil, 0, false
		}
		ord = head[j:k]
		payload = k
	}
	if !bytes.HasPrefix(head[payload:], []byte(typeKey)) {
		return nil, nil, nil, 0, false
	}
	if typ, payload, ok = plainBytes(head, payload+len(typeKey)); !ok {
		return nil, nil, nil, 0, false
	}
	if !bytes.HasPrefix(head[payload:], []byte(payKey)) {
		return nil, nil, nil, 0, false
	}
	return ts, ord, typ, payload + len(payKey), true
}

// plainBytes is plainString without the copy: the string's bytes alias b.
func plainBytes(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return b[i+1 : j], j + 1, true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// decodeLine parses a complete record line. The payload may alias ln: callers decode or copy it before reading
// the next line.
func decodeLine(ln []byte) (line, error) {
	if rec, ok := quickEnvelope(ln); ok {
		return rec, nil
	}
	var rec line
	if err := json.Unmarshal(ln, &rec); err != nil {
		return rec, err
	}
	if rec.Type == "" {
		return rec, errors.New("record without type")
	}
	return rec, nil
}

// quickEnvelope parses the envelope our recorder and the reference write, {"timestamp":"…","ordinal":N,
// "type":"…","payload":…} (ordinal optional, keys in any order but payload last), without decoding the payload:
// it only checks that the payload is one valid JSON value. Anything else (escapes, whitespace, other keys, a
// payload before the end) is left to the full decoder, so the result is always the one json.Unmarshal gives.
func quickEnvelope(ln []byte) (line, bool) {
	var rec line
	n := len(ln)
	if n < 2 || ln[0] != '{' || ln[n-1] != '}' {
		return rec, false
	}
	i := 1
	seen := 0
	for {
		key, next, ok := plainString(ln, i)
		if !ok || next >= n || ln[next] != ':' {
			return rec, false
		}
		i = next + 1
		var bit int
		switch key {
		case "timestamp":
			bit = 1
			if rec.Timestamp, i, ok = plainString(ln, i); !ok {
				return rec, false
			}
		case "type":
			bit = 2
			if rec.Type, i, ok = plainString(ln, i); !ok {
				return rec, false
			}
		case "ordinal":
			bit = 4
			j := i
			for j < n && ln[j] >= '0' && ln[j] <= '9' {
				j++
			}
			if j == i || (ln[i] == '0' && j > i+1) {
				return rec, false
			}
			v, err := strconv.ParseInt(string(ln[i:j]), 10, 64)
			if err != nil {
				return rec, false
			}
			rec.Ordinal = &v
			i = j
		case "payload":
			p := ln[i : n-1]
			if seen&2 == 0 || len(p) == 0 || isSpace(p[0]) || isSpace(p[len(p)-1]) || !validJSON(p) {
				return rec, false
			}
			rec.Payload = p
			return rec, rec.Type != ""
		default:
			return rec, false
		}
		if seen&bit != 0 || i >= n || ln[i] != ',' {
			return rec, false
		}
		seen |= bit
		i++
	}
}

// validJSON is json.Valid, several times faster: segmentio's validator agrees with the standard library's except
// that it has no nesting limit, so values that could nest deeper than the standard library's 10 000 levels are
// left to it.
func validJSON(b []byte) bool {
	if !fastjson.Valid(b) {
		return false
	}
	if len(b) > maxFastNesting && bytes.Count(b, []byte{'['})+bytes.Count(b, []byte{'{'}) > maxFastNesting {
		return json.Valid(b)
	}
	return true
}

// unmarshal is json.Unmarshal, several times faster. segmentio's decoder gives the same values as the standard
// library's when it succeeds; when it fails (the standard library then still fills what it can, which some
// callers use) the value is reset and decoded again by the standard library. Inputs are parts of lines that
// passed validJSON, so none nests deeper than the standard library allows. Targets holding maps or `any` are
// decoded by the standard library: segmentio makes every map with room for 64 entries.
func unmarshal(b []byte, v any) error {
	if fastjson.Unmarshal(b, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(b, v)
}

// maxFastNesting is the standard library decoder's nesting limit.
const maxFastNesting = 10000

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// plainString reads the JSON string starting at b[i] when it holds only printable ASCII without escapes (the
// bytes json.Unmarshal would return unchanged); next is the index after its closing quote.
func plainString(b []byte, i int) (s string, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return string(b[i+1 : j]), j + 1, true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return "", 0, false
		}
	}
	return "", 0, false
}

// leadingType returns the "type" of a valid JSON object whose first member is a plain "type" string, as event
// payloads are written, without decoding the rest.
func leadingType(payload []byte) (string, bool) {
	const head = `{"type":`
	if len(payload) < len(head) || string(payload[:len(head)]) != head {
		return "", false
	}
	typ, _, ok := plainString(payload, len(head))
	return typ, ok
}
