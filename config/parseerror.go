package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// TOMLErrorText renders a TOML parse error of data as the reference does: "TOML parse error at line L,
// column C", the line with a caret under the column, then the parser's message in the reference's words
// where rustTOMLError knows them. An error without a position is rendered as is.
func TOMLErrorText(data []byte, err error) string {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return err.Error()
	}
	line, col := de.Position()
	line, col, msg := rustTOMLError(data, line, col, strings.TrimPrefix(de.Error(), "toml: "))
	lines := strings.Split(string(data), "\n")
	text := ""
	if line >= 1 && line <= len(lines) {
		text = strings.TrimRight(lines[line-1], "\r")
	}
	num := strconv.Itoa(line)
	pad := strings.Repeat(" ", len(num))
	return fmt.Sprintf("TOML parse error at line %d, column %d\n%s |\n%s | %s\n%s |%s^\n%s\n", line, col, pad, num, text, pad, strings.Repeat(" ", col), msg)
}

// projectSyntaxError is the reference's error for a project .codex/config.toml that is not valid TOML:
// the file is named in the text, and no position is given apart from it (so the start-up warning has
// no path or range).
func projectSyntaxError(file string, data []byte) error {
	var raw tree
	err := toml.Unmarshal(data, &raw)
	if err == nil { // not a syntax error after all
		return nil
	}
	return &Error{Msg: "Error parsing project config file " + file + ": " + TOMLErrorText(data, err), Syntax: true}
}

// rustTOMLError rewords a go-toml syntax error (its 1-based line and column, and message) in the words of
// the Rust toml crate the reference parses config.toml with, moving the position where that parser
// reports it; a message without a known counterpart is returned as is.
func rustTOMLError(data []byte, line, col int, msg string) (int, int, string) {
	lines := strings.Split(string(data), "\n")
	text := ""
	if line >= 1 && line <= len(lines) {
		text = strings.TrimRight(lines[line-1], "\r")
	}
	at := func(c int) byte { // the byte at 1-based column c of the line, 0 past its end
		if c >= 1 && c <= len(text) {
			return text[c-1]
		}
		return 0
	}
	isSpace := func(b byte) bool { return b == ' ' || b == '\t' }
	// valueStart is the column of the value of the line's key-value (after "=" and blanks), 0 when none.
	valueStart := func() int {
		i := strings.IndexByte(text, '=')
		if i < 0 {
			return 0
		}
		j := i + 1
		for j < len(text) && isSpace(text[j]) {
			j++
		}
		return j + 1
	}
	const quoted = "string values must be quoted, expected literal string"
	switch {
	case msg == "array is incomplete":
		return line, col, "unclosed array, expected `]`"
	case msg == "expected ',' or ']' after array value":
		if at(col) != 0 && isSpace(at(col-1)) {
			// Another value on the same line: the element is read as one bare value with a blank in it.
			c := col - 1
			for c > 1 && isSpace(at(c-1)) {
				c--
			}
			for c > 1 && !isSpace(at(c-1)) && at(c-1) != ',' && at(c-1) != '[' {
				c--
			}
			return line, c, quoted
		}
		return line, col, "missing comma between array elements, expected `,`"
	case msg == "inline table is incomplete":
		return line, col, "unclosed inline table, expected `}`"
	case msg == "expected ',' or '}' after inline table key-value":
		// Reported at the "=" of the key-value that follows without a comma.
		if m := strings.IndexByte(text[min(col-1, len(text)):], '='); col >= 1 && m >= 0 {
			col += m
		}
		return line, col, "extra assignment between key-value pairs, expected `,`"
	case msg == "basic strings cannot have new lines" || msg == "literal strings cannot have new lines":
		if l, c, m, ok := openStringInContainer(data, line, col, msg[0] == 'b'); ok {
			return l, c, m
		}
		q, invalid := "\"", "invalid basic string, expected `\"`"
		if msg[0] == 'l' {
			q, invalid = "'", "invalid literal string, expected `'`"
		}
		if t := strings.TrimLeft(text, " \t"); strings.HasPrefix(t, q) && !strings.Contains(t[1:], q) {
			return line, col, "key with no value, expected `=`" // a quoted key left open
		}
		if v := valueStart(); v > 0 && at(v) == q[0] {
			// A value's string left open with more lines after it: the Rust parser reports the next
			// non-blank line, when it holds no "=", as a key without a value (at its end).
			for n := line; n < len(lines); n++ {
				next := strings.TrimRight(lines[n], "\r")
				if strings.TrimSpace(next) == "" {
					continue
				}
				if !strings.Contains(next, "=") {
					end := len(next) + 1
					if i := strings.IndexByte(next, '#'); i >= 0 {
						end = i + 1 // up to a comment
					}
					return n + 1, end, "key with no value, expected `=`"
				}
				break
			}
		}
		return line, col, invalid
	case strings.HasPrefix(msg, "multiline basic string not terminated"):
		return line, col + 1, "invalid multi-line basic string, expected `\"`"
	case strings.HasPrefix(msg, "multiline literal string not terminated"):
		return line, col + 1, "invalid multi-line literal string, expected `'`"
	case msg == "basic strings cannot have control characters":
		return line, col, "invalid basic string, expected non-double-quote visible characters, `\\`"
	case msg == "control characters are not allowed in comments":
		return line, col, "invalid comment character, expected printable characters"
	case msg == "expected ']' to close table name":
		for col > 1 && isSpace(at(col-1)) {
			col--
		}
		return line, col, "unclosed table, expected `]`"
	case msg == "expected ']]' to close array table name":
		if at(col) == ']' {
			col++
		}
		return line, col, "unclosed array table, expected `]`"
	case msg == "expected '=' after key":
		return line, col, "key with no value, expected `=`"
	case strings.HasPrefix(msg, "unexpected character U+003D") && strings.HasSuffix(msg, "at start of value"):
		return line, col, "extra `=`, expected nothing"
	case strings.HasPrefix(msg, "unexpected character") && strings.HasSuffix(msg, "at start of value"):
		return line, col, quoted
	case strings.HasPrefix(msg, "invalid character at start of key"):
		return line, col, "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`"
	case msg == `expected keyword "true"`:
		return line, col, "invalid boolean, expected `true`"
	case msg == `expected keyword "false"`:
		return line, col, "invalid boolean, expected `false`"
	case strings.HasPrefix(msg, "expected newline but got"):
		if b := at(col); b == '}' || b == ']' {
			return line, col, "unexpected key or value, expected newline, `#`"
		}
		v := valueStart()
		if v > 0 {
			if m, ok := rustDatetimeError(text[v-1:]); ok {
				if m == "" {
					m = "invalid datetime" // a datetime with something after it
				}
				return line, v, m
			}
		}
		if s := tokenStart(text, col); s > 0 {
			tok := text[s-1 : col-1]
			sign := 0
			if tok != "" && (tok[0] == '+' || tok[0] == '-') {
				sign = 1
			}
			switch {
			case tok[sign:] == "inf" || tok[sign:] == "nan":
				return line, s + sign, "invalid float, expected `" + tok[sign:] + "`"
			case at(col) == '.' && strings.Contains(tok, ".") && strings.Trim(tok[sign:], "0123456789._") == "":
				return line, col, "invalid float, expected nothing"
			}
		}
		switch {
		case v == 0:
		case !isSpace(at(col-1)) && strings.HasPrefix(text[v-1:], "true"):
			return line, v, "invalid boolean, expected `true`"
		case !isSpace(at(col-1)) && strings.HasPrefix(text[v-1:], "false"):
			return line, v, "invalid boolean, expected `false`"
		case isSpace(at(col-1)) && (isDigit(at(v)) || isLetter(at(v))):
			return line, v, quoted // a bare value with a blank in it
		}
	case strings.HasPrefix(msg, "invalid escape character"):
		return line, col + 1, "missing escaped value, expected `b`, `e`, `f`, `n`, `r`, `\\`, `\"`, `x`, `u`, `U`"
	case msg == "invalid hexadecimal digit in unicode escape sequence":
		return line, col, "too few unicode value digits, expected unicode hexadecimal value"
	case msg == "number must have at least one digit between underscores":
		return line, col, "`_` may only go between digits, expected nothing"
	case msg == "integers cannot have leading zeroes":
		return line, col, "unexpected leading zero, expected nothing"
	case msg == "exponent must contain at least one digit":
		return line, col, "invalid exponent, expected digits"
	case isDatetimeMessage(msg):
		if s := datetimeStart(text, col); s > 0 {
			if m, ok := rustDatetimeError(text[s-1:]); ok && m != "" {
				return line, s, m
			}
		}
	case msg == "decimal point must be followed by a digit":
		return line, col, "invalid fraction, expected digits"
	case msg == "radix prefix must be followed by at least one digit":
		if b := at(col + 2); b == 0 || isSpace(b) || b == '#' {
			return line, col, "integer number overflowed"
		}
		kind := map[byte]string{'x': "hexadecimal", 'o': "octal", 'b': "binary"}[at(col+1)]
		if kind != "" {
			return line, col + 2, "invalid " + kind + " number"
		}
	case strings.HasPrefix(msg, "key ") && strings.HasSuffix(msg, " is already defined"):
		// Reported at the last part of the repeated key, the last one written "part =" on the line.
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "key "), " is already defined")
		if t := strings.TrimLeft(text, " \t"); strings.HasPrefix(t, name) && strings.HasPrefix(strings.TrimLeft(t[len(name):], " \t"), ".") {
			// A dotted key under a key that holds a value.
			var before map[string]any
			if toml.Unmarshal([]byte(strings.Join(lines[:line-1], "\n")), &before) == nil {
				if kind := tomlKind(before[name]); kind != "" {
					return line, col, "cannot extend value of type " + kind + " with a dotted key"
				}
			}
		}
		if i := lastKeyAt(text, name); i > 0 {
			col = i
		}
		return line, col, "duplicate key"
	case strings.HasPrefix(msg, "table ") && strings.Contains(msg, " already exists"),
		strings.HasPrefix(msg, "key ") && strings.HasSuffix(msg, " should be a table, not a value"),
		strings.HasPrefix(msg, "key ") && strings.Contains(msg, " already exists as a value"):
		return line, col, "duplicate key"
	}
	return line, col, msg
}

// datetimeMessages are go-toml's messages about a date, time or offset.
var datetimeMessages = []string{
	"impossible date", "hour cannot be greater", "minutes cannot be greater", "seconds cannot be greater",
	"dates are expected to have the format", "invalid timezone offset", "need at least one digit after fraction point",
	"times are expected to have the format", "invalid date-time timezone", "extra characters at the end of a local time",
}

func isDatetimeMessage(msg string) bool {
	for _, m := range datetimeMessages {
		if strings.HasPrefix(msg, m) {
			return true
		}
	}
	return false
}

// tokenStart returns the 1-based column where the bare value token ending before column col of text
// starts (letters, digits, "+-._:"), 0 when there is none.
func tokenStart(text string, col int) int {
	i := min(col-1, len(text))
	j := i
	for j > 0 && (isDigit(text[j-1]) || isLetter(text[j-1]) || strings.IndexByte("+-._:", text[j-1]) >= 0) {
		j--
	}
	if j == i {
		return 0
	}
	return j + 1
}

// datetimeStart returns the 1-based column where the date or time around column col of text starts (a
// date's time may follow it after a blank), 0 when there is none.
func datetimeStart(text string, col int) int {
	s := tokenStart(text, min(col+1, len(text)+1))
	for c := col; s == 0 && c > 1; c-- {
		s = tokenStart(text, c)
	}
	if s == 0 {
		return 0
	}
	// "1979-05-27 07:32:61": the date before the blank starts the value.
	if s > 2 && text[s-2] == ' ' {
		if d := tokenStart(text, s-1); d > 0 && isDate(text[d-1:s-2]) {
			return d
		}
	}
	return s
}

func isDate(s string) bool {
	return len(s) == 10 && s[4] == '-' && s[7] == '-' && strings.Trim(s[:4]+s[5:7]+s[8:], "0123456789") == ""
}

// rustDatetimeError reads the date, time or date-time at the start of v as the Rust toml crate does and
// returns its message for the first fault ("" when it reads whole up to a blank, "#", ",", "]", "}" or
// the end); ok is false when v does not start as a date or time (two digits and ":", or four and "-").
func rustDatetimeError(v string) (msg string, ok bool) {
	digits := func(i int) int { // how many digits start v[i:]
		n := 0
		for i+n < len(v) && isDigit(v[i+n]) {
			n++
		}
		return n
	}
	num := func(i, n int) int {
		x := 0
		for _, c := range v[i : i+n] {
			x = x*10 + int(c-'0')
		}
		return x
	}
	i := 0
	switch d := digits(0); {
	case d == 4 && len(v) > 4 && v[4] == '-':
		if digits(5) != 2 {
			return "invalid date, expected a two-digit month (MM)", true
		}
		if len(v) <= 7 || v[7] != '-' {
			return "invalid date, expected `-` (MM-DD)", true
		}
		if digits(8) != 2 {
			return "invalid date, expected a two-digit day (DD)", true
		}
		year, month, day := num(0, 4), num(5, 2), num(8, 2)
		if month < 1 || month > 12 {
			return "invalid date, expected month between 01 and 12", true
		}
		days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month]
		if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			days = 29
		}
		if day < 1 || day > days {
			return fmt.Sprintf("invalid date, expected day between 01 and %02d", days), true
		}
		i = 10
		switch {
		case i < len(v) && (v[i] == 'T' || v[i] == 't'):
			i++
		case i+1 < len(v) && v[i] == ' ' && isDigit(v[i+1]):
			i++
		default:
			return datetimeEnd(v[i:]), true
		}
	case d >= 1 && d <= 2 && len(v) > d && v[d] == ':':
	default:
		return "", false
	}
	switch digits(i) {
	case 0:
		return "invalid time, expected hour", true
	case 1:
		return "invalid time, expected a two-digit hour (HH)", true
	}
	if num(i, 2) > 23 {
		return "invalid time, expected hour between 00 and 23", true
	}
	i += 2
	if i >= len(v) || v[i] != ':' {
		return "invalid time, expected `:` (HH:MM)", true
	}
	i++
	if digits(i) != 2 {
		return "invalid time, expected a two-digit minute (MM)", true
	}
	if num(i, 2) > 59 {
		return "invalid time, expected minute between 00 and 59", true
	}
	i += 2
	if i < len(v) && v[i] == ':' {
		i++
		if digits(i) != 2 {
			return "invalid time, expected a two-digit second (SS)", true
		}
		if num(i, 2) > 60 {
			return "invalid time, expected second between 00 and 60", true
		}
		i += 2
		if i < len(v) && v[i] == '.' {
			i++
			n := digits(i)
			if n == 0 {
				return "invalid time, expected nanosecond", true
			}
			i += n
		}
	}
	switch {
	case i < len(v) && (v[i] == 'Z' || v[i] == 'z'):
		i++
	case i < len(v) && (v[i] == '+' || v[i] == '-'):
		i++
		if digits(i) != 2 {
			return "invalid offset, expected a two-digit hour (HH)", true
		}
		if num(i, 2) > 23 {
			return "invalid offset, expected hours between 00 and 23", true
		}
		i += 2
		if i >= len(v) || v[i] != ':' {
			return "invalid offset, expected `:` (HH:MM)", true
		}
		i++
		if digits(i) != 2 {
			return "invalid offset, expected a two-digit minute (MM)", true
		}
		if num(i, 2) > 59 {
			return "invalid offset, expected minutes between 00 and 59", true
		}
		i += 2
	}
	return datetimeEnd(v[i:]), true
}

// datetimeEnd is the Rust toml crate's message for what follows a date or time: "" at its end, else
// "invalid datetime".
func datetimeEnd(rest string) string {
	t := strings.TrimLeft(rest, " \t")
	if t == "" || strings.IndexByte("#,]}\r\n", t[0]) >= 0 {
		return ""
	}
	return "invalid datetime"
}

func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// lastKeyAt returns the 1-based column of the last bare key name followed by "=" (blanks allowed) in text,
// 0 when there is none.
func lastKeyAt(text, name string) int {
	best := 0
	for i := 0; i+len(name) <= len(text); i++ {
		if text[i:i+len(name)] != name || (i > 0 && (isDigit(text[i-1]) || isLetter(text[i-1]) || text[i-1] == '_' || text[i-1] == '-')) {
			continue
		}
		rest := strings.TrimLeft(text[i+len(name):], " \t")
		if strings.HasPrefix(rest, "=") {
			best = i + 1
		}
	}
	return best
}

// tomlKind names the TOML type of a decoded value as the Rust toml crate does ("" when not a plain value).
func tomlKind(v any) string {
	switch v.(type) {
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return ""
}

// FileSyntaxErrorText is TOMLErrorText for the TOML file at path, "" when it reads and parses.
func FileSyntaxErrorText(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var raw tree
	if err := toml.Unmarshal(data, &raw); err != nil {
		return TOMLErrorText(data, err)
	}
	return ""
}

// openStringInContainer words a one-line string left open at the end of line (the newline at column col)
// inside an array or inline table as the Rust parser does: it reads on past blanks, newlines and comments
// and reports the next token as a value without a comma before it; a closing bracket or comma there (or
// the end of the file) makes it report the string (or the container) itself, at the newline. ok is false
// when the string is not inside a container.
func openStringInContainer(data []byte, line, col int, basic bool) (int, int, string, bool) {
	off := offsetOf(data, line, col)
	if off < 0 {
		return 0, 0, "", false
	}
	stack := openContainers(data[:off])
	if len(stack) == 0 {
		return 0, 0, "", false
	}
	inner := stack[len(stack)-1]
	i := off
	for i < len(data) {
		switch c := data[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		}
		break
	}
	switch {
	case i >= len(data) && inner == '[':
		return line, col, "unclosed array, expected `]`", true
	case i >= len(data):
		return line, col, "unclosed inline table, expected `}`", true
	case data[i] == ']' || data[i] == '}' || data[i] == ',':
		if basic {
			return line, col, "invalid basic string, expected `\"`", true
		}
		return line, col, "invalid literal string, expected `'`", true
	}
	l, c := lineCol(data, i+1) // the byte at i
	if inner == '[' {
		return l, c, "missing comma between array elements, expected `,`", true
	}
	return l, c, "missing comma between key-value pairs, expected `,`", true
}

// offsetOf is the byte offset of 1-based line and column in data (-1 when out of range).
func offsetOf(data []byte, line, col int) int {
	l, start := 1, 0
	for i := 0; i < len(data) && l < line; i++ {
		if data[i] == '\n' {
			l++
			start = i + 1
		}
	}
	if l != line || start+col-1 > len(data) {
		return -1
	}
	return start + col - 1
}

// openContainers is the stack of arrays ('[') and inline tables ('{') open at the end of data, a TOML
// document's prefix: strings and comments are skipped, and a '[' that starts a line outside any value
// opens a table header, not an array.
func openContainers(data []byte) []byte {
	var stack []byte
	lineStart := true
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			lineStart = true
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '"' || c == '\'':
			i = skipString(data, i)
		case c == '[' && lineStart && len(stack) == 0:
			for i < len(data) && data[i] != '\n' { // a table header
				i++
			}
			i--
		case c == '[' || c == '{':
			stack = append(stack, c)
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
		lineStart = false
	}
	return stack
}

// skipString returns the offset of the last byte of the string starting at data[i] (a quote): its
// closing quote, the end of its line for a one-line string left open, or the end of data.
func skipString(data []byte, i int) int {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q { // multi-line
		for j := i + 3; j+2 < len(data); j++ {
			if q == '"' && data[j] == '\\' {
				j++
				continue
			}
			if data[j] == q && data[j+1] == q && data[j+2] == q {
				return j + 2
			}
		}
		return len(data) - 1
	}
	for j := i + 1; j < len(data); j++ {
		switch {
		case q == '"' && data[j] == '\\':
			j++
		case data[j] == q:
			return j
		case data[j] == '\n':
			return j - 1
		}
	}
	return len(data) - 1
}
