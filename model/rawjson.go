package model

// compactValid reports whether b is one complete JSON value without insignificant whitespace, i.e. bytes
// that encoding/json would copy unchanged when encoding b as a json.RawMessage with HTML escaping off.
// It is conservative: false only means the caller must let encoding/json check (and compact) b.
func compactValid(b []byte) bool {
	i, ok := scanValue(b, 0, 0)
	return ok && i == len(b)
}

const maxRawDepth = 1000

// scanValue scans the value starting at b[i] and returns the index after it.
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		return scanContainer(b, i, depth)
	case c == '"':
		return scanString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return i, false
}

// scanContainer scans the object or array opening at b[i]: its members are "key":value pairs for an object,
// values for an array.
func scanContainer(b []byte, i, depth int) (int, bool) {
	if depth >= maxRawDepth {
		return i, false
	}
	obj, end := b[i] == '{', byte(']')
	if obj {
		end = '}'
	}
	i++
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if obj {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = scanString(b, i); !ok {
				return i, false
			}
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i++
		}
		if i, ok = scanValue(b, i, depth+1); !ok {
			return i, false
		}
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i++
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanString scans the string starting at the quote b[i].
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? starting at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
