// Package jsonstr encodes JSON strings as package jsonrpc writes them. It is apart from jsonrpc, and
// imports only math/bits, slices and unicode/utf8, so that the early answer to initialize
// (internal/early/quick) can use it before encoding/json and log/slog are initialised.
package jsonstr

import (
	"math/bits"
	"slices"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// uEscaped marks the bytes a JSON string holds as \u00XX: the control bytes without a short escape.
var uEscaped = func() (t [256]bool) {
	for b := range 0x20 {
		switch b {
		case '\b', '\f', '\n', '\r', '\t':
		default:
			t[b] = true
		}
	}
	return t
}()

// uEscapes holds the \u00XX escape of each control byte as a little-endian word (two bytes of zeros after).
var uEscapes = func() (t [0x20]uint64) {
	for c := range t {
		e := [8]byte{'\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]}
		t[c] = load64(e[:], 0)
	}
	return t
}()

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// special8 flags the bytes of x (a little-endian load of 8 bytes) that need escaping or UTF-8 decoding:
// control bytes, quotes, backslashes and bytes from 0x80 get their top bit set. A plain byte may be
// flagged too, but only above a special one: the lowest flag is always right.
func special8(x uint64) uint64 {
	q, bs := x^(lsbs*'"'), x^(lsbs*'\\')
	flag := (x - lsbs*0x20) & ^x // bytes below 0x20
	flag |= (q - lsbs) & ^q      // '"'
	flag |= (bs - lsbs) & ^bs    // '\\'
	return (flag | x) & msbs
}

// load64 reads the 8 bytes of s from i as a little-endian word (the compiler makes it one load).
func load64[S ~string | ~[]byte](s S, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// store64 writes x to the first 8 bytes of d, little-endian (one store).
func store64(d []byte, x uint64) {
	_ = d[7]
	d[0], d[1], d[2], d[3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
	d[4], d[5], d[6], d[7] = byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56)
}

// Append appends s as a JSON string, byte for byte as encoding/json encodes it without HTML escaping
// (invalid UTF-8 becomes \ufffd; U+2028 and U+2029 are escaped).
func Append[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	dst, _ = appendBody(dst, s, true)
	return append(dst, '"')
}

// appendBody appends the encoding of s without the quotes and returns how many bytes of s it encoded:
// all of them when final, else all but an incomplete UTF-8 sequence at the end of s (one that the bytes
// following s decide), which the caller encodes with them.
func appendBody[S ~string | ~[]byte](dst []byte, s S, final bool) ([]byte, int) {
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				for i+8 <= len(s) { // ordinary text: skip the plain bytes of the next 8 at once
					m := special8(load64(s, i))
					if m != 0 {
						i += bits.TrailingZeros64(m) >> 3 // s[i] is special
						break
					}
					i += 8
				}
				continue
			}
			dst = append(dst, s[start:i]...)
			if uEscaped[b] { // a run of \u00XX escapes (binary output: NULs) is encoded in one pass
				j := i + 1
				for j < len(s) && uEscaped[s[j]] {
					j++
				}
				n := len(dst)
				dst = slices.Grow(dst, 6*(j-i)+2)[:n+6*(j-i)+2] // each escape is stored as 8 bytes
				d := dst[n:]
				for ; i < j && len(d) >= 8; i++ {
					store64(d, uEscapes[s[i]&0x1f])
					d = d[6:]
				}
				dst = dst[:len(dst)-2]
				start = i
				continue
			}
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		if b := s[i]; b >= 0xc2 && b < 0xe0 && i+1 < len(s) && s[i+1]&0xc0 == 0x80 { // a valid 2-byte sequence
			i += 2
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		if !final && n < utf8.UTFMax && !utf8.FullRune([]byte(s[i:i+n])) {
			return append(dst, s[start:i]...), i
		}
		r, size := utf8.DecodeRune([]byte(s[i : i+n]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...), len(s)
}

// Encoder encodes one JSON string given in consecutive pieces, so that a large one need not be held
// whole: Begin, then Write for each piece, then End append byte for byte what Append appends for the
// pieces' concatenation. The zero value is ready to Begin.
type Encoder struct {
	pend [utf8.UTFMax]byte // the start of a UTF-8 sequence cut by the end of the last piece
	np   int
}

// Begin appends the opening quote and resets e.
func (e *Encoder) Begin(dst []byte) []byte {
	e.np = 0
	return append(dst, '"')
}

// Write appends the encoding of the next piece; up to 3 bytes of an incomplete UTF-8 sequence at its end
// wait for the next piece (or End). Its output is at most 6*(len(p)+3) bytes.
func (e *Encoder) Write(dst []byte, p []byte) []byte {
	for e.np > 0 && len(p) > 0 { // complete the cut sequence a byte at a time: 4 bytes always decide
		e.pend[e.np] = p[0]
		e.np++
		p = p[1:]
		var k int
		dst, k = appendBody(dst, e.pend[:e.np], false)
		e.np = copy(e.pend[:], e.pend[k:e.np])
	}
	dst, k := appendBody(dst, p, false)
	e.np += copy(e.pend[e.np:], p[k:])
	return dst
}

// End appends what waits of a cut sequence (as invalid UTF-8) and the closing quote.
func (e *Encoder) End(dst []byte) []byte {
	dst, _ = appendBody(dst, e.pend[:e.np], true)
	e.np = 0
	return append(dst, '"')
}
