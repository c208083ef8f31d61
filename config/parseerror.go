package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// TOMLErrorText renders a TOML parse error of data as the reference does: "TOML parse error at line L,
// column C", the line with a caret under the column, then the parser's message (go-toml's wording, not
// the reference's). An error without a position is rendered as is.
func TOMLErrorText(data []byte, err error) string {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return err.Error()
	}
	line, col := de.Position()
	lines := strings.Split(string(data), "\n")
	text := ""
	if line >= 1 && line <= len(lines) {
		text = strings.TrimRight(lines[line-1], "\r")
	}
	num := strconv.Itoa(line)
	pad := strings.Repeat(" ", len(num))
	msg := strings.TrimPrefix(de.Error(), "toml: ")
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
