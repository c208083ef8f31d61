package execmgr

import (
	"errors"
	"math"
)

// Session id parse failures, worded as the reference (Rust's integer parser) words them.
var (
	ErrSessionIDEmpty    = errors.New("cannot parse integer from empty string")
	ErrSessionIDDigit    = errors.New("invalid digit found in string")
	ErrSessionIDTooLarge = errors.New("number too large to fit in target type")
	ErrSessionIDTooSmall = errors.New("number too small to fit in target type")
)

// ParseSessionID parses a unified-exec session number as the reference does (a signed 32-bit decimal with an
// optional sign, ASCII digits only), failing with the reference's texts: the first problem met left to right
// wins, as in Rust's parser (so "3000000000x" is too large, not an invalid digit).
func ParseSessionID(s string) (int, error) {
	if s == "" {
		return 0, ErrSessionIDEmpty
	}
	neg := false
	digits := s
	switch s[0] {
	case '+':
		digits = s[1:]
	case '-':
		neg, digits = true, s[1:]
	}
	if digits == "" {
		return 0, ErrSessionIDDigit
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, ErrSessionIDDigit
		}
		d := int64(c - '0')
		if neg {
			n = n*10 - d
			if n < math.MinInt32 {
				return 0, ErrSessionIDTooSmall
			}
		} else {
			n = n*10 + d
			if n > math.MaxInt32 {
				return 0, ErrSessionIDTooLarge
			}
		}
	}
	return int(n), nil
}
