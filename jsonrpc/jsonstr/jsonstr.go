// Package jsonstr encodes JSON strings as package jsonrpc writes them. It is apart from jsonrpc, and
// imports only slices and unicode/utf8, so that the early answer to initialize (internal/early/quick)
// can use it before encoding/json and log/slog are initialised.
package jsonstr

import (
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

// Append appends s as a JSON string, byte for byte as encoding/json encodes it without HTML escaping
// (invalid UTF-8 becomes \ufffd; U+2028 and U+2029 are escaped).
func Append[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			if uEscaped[b] { // a run of \u00XX escapes (binary output: NULs) is encoded in one pass
				j := i + 1
				for j < len(s) && uEscaped[s[j]] {
					j++
				}
				n := len(dst)
				dst = slices.Grow(dst, 6*(j-i))[:n+6*(j-i)]
				d := dst[n:]
				for ; i < j && len(d) >= 6; i++ {
					c := s[i]
					d[0], d[1], d[2], d[3], d[4], d[5] = '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]
					d = d[6:]
				}
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
		n := min(len(s)-i, utf8.UTFMax)
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
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
