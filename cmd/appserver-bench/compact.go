package main

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// truncatedPrefix starts the replacement of a JSON string too long to keep;
// the decoded length in bytes follows. It begins with U+0001, which a real
// string of that size practically never does; truncatedJSON is its JSON form.
const (
	truncatedPrefix = "\x01appserver-bench-truncated:"
	truncatedJSON   = `\u0001appserver-bench-truncated:`
)

const (
	maxKeptString   = 256     // raw bytes of a string kept verbatim
	maxCompactBytes = 1 << 20 // limit of the compacted line
)

var errCompactTooLong = errors.New("line too long even after dropping long strings")

// compactor rewrites one arbitrarily long JSON line, fed in fragments, into
// a short one: every string longer than maxKeptString raw bytes is replaced
// by truncatedPrefix+<decoded length>. Everything outside strings is kept,
// so the result is still the same JSON shape.
type compactor struct {
	out      []byte
	inStr    bool
	esc      int   // 0: none; 1: after '\'; 2..5: hex digits of \u seen +1
	hex      rune  // \u value being read
	n        int64 // decoded bytes of the current string
	raw      int64 // raw bytes of the current string
	start    int   // index in out where the current string's content begins
	highSurr bool  // last \u escape was a high surrogate
}

// write feeds the next fragment of the line.
func (c *compactor) write(p []byte) error {
	for i := 0; i < len(p); {
		if !c.inStr {
			b := p[i]
			c.out = append(c.out, b)
			i++
			if b == '"' {
				c.inStr, c.n, c.raw, c.start, c.esc, c.highSurr = true, 0, 0, len(c.out), 0, false
			}
			if len(c.out) > maxCompactBytes {
				return errCompactTooLong
			}
			continue
		}
		// Fast path for the bulk of a long string: plain bytes and \u00XX
		// escapes of ASCII characters (what 256 MiB of NULs looks like).
		if c.esc == 0 {
			j := i
			for j < len(p) {
				b := p[j]
				if b == '\\' {
					if j+6 <= len(p) && p[j+1] == 'u' && p[j+2] == '0' && p[j+3] == '0' && p[j+4] >= '0' && p[j+4] <= '7' && isHex(p[j+5]) {
						c.n++
						j += 6
						continue
					}
					break
				}
				if b == '"' {
					break
				}
				c.n++
				j++
			}
			if j > i {
				c.keep(p[i:j])
				c.highSurr = false
				i = j
				continue
			}
		}
		b := p[i]
		c.keep(p[i : i+1])
		i++
		switch {
		case c.esc == 0 && b == '"':
			c.endString()
		case c.esc == 0 && b == '\\':
			c.esc = 1
		case c.esc == 0:
			c.n++
			c.highSurr = false
		case c.esc == 1 && b == 'u':
			c.esc, c.hex = 2, 0
		case c.esc == 1:
			c.esc = 0
			c.n++
			c.highSurr = false
		default: // hex digit of \uXXXX
			v, ok := hexVal(b)
			if !ok {
				return errors.New("bad \\u escape")
			}
			c.hex = c.hex<<4 | v
			c.esc++
			if c.esc == 6 {
				c.esc = 0
				c.unicode(c.hex)
			}
		}
	}
	return nil
}

// keep appends raw string content while the string is still short enough.
func (c *compactor) keep(b []byte) {
	c.raw += int64(len(b))
	if c.raw <= maxKeptString {
		c.out = append(c.out, b...)
	}
}

// unicode accounts for one \uXXXX escape as its UTF-8 size.
func (c *compactor) unicode(r rune) {
	switch {
	case r >= 0xD800 && r < 0xDC00:
		c.n += 4 // with the low surrogate that follows
		c.highSurr = true
		return
	case r >= 0xDC00 && r < 0xE000:
		if !c.highSurr {
			c.n += 3 // lone surrogate: U+FFFD
		}
	default:
		c.n += int64(utf8.RuneLen(r))
	}
	c.highSurr = false
}

// endString closes the current string; its closing quote is in out already
// unless the string was too long, in which case the content is replaced.
func (c *compactor) endString() {
	c.inStr = false
	if c.raw <= maxKeptString {
		return
	}
	c.out = append(c.out[:c.start], truncatedJSON+strconv.FormatInt(c.n, 10)+`"`...)
}

// bytes returns the compacted line.
func (c *compactor) bytes() []byte { return c.out }

// decodedLen returns the byte length of a string read from a possibly
// compacted line.
func decodedLen(s string) int64 {
	if rest, ok := strings.CutPrefix(s, truncatedPrefix); ok {
		if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
			return n
		}
	}
	return int64(len(s))
}

func isHex(b byte) bool { _, ok := hexVal(b); return ok }

func hexVal(b byte) (rune, bool) {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0'), true
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10, true
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10, true
	}
	return 0, false
}
