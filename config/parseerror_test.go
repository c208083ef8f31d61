package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTOMLSyntaxErrorWording pins the reference's (0.169.0, the Rust toml crate) message and position for
// common config.toml syntax errors, each seen on it with the same file ("<file>:line:col: message").
func TestTOMLSyntaxErrorWording(t *testing.T) {
	for _, c := range []struct {
		name, file string
		line, col  int
		msg        string
	}{
		{"unclosed_array", "x = [1\n", 1, 7, "unclosed array, expected `]`"},
		{"unclosed_array2", "x = [1, 2\ny = 3\n", 2, 1, "missing comma between array elements, expected `,`"},
		{"unclosed_inline_table", "x = {a = 1\n", 1, 11, "unclosed inline table, expected `}`"},
		{"unclosed_string", "x = \"abc\n", 1, 9, "invalid basic string, expected `\"`"},
		{"unclosed_literal", "x = 'abc\n", 1, 9, "invalid literal string, expected `'`"},
		{"unclosed_ml_string", "x = \"\"\"abc\n", 1, 12, "invalid multi-line basic string, expected `\"`"},
		{"unclosed_table_header", "[tbl\n", 1, 5, "unclosed table, expected `]`"},
		{"unclosed_array_table", "[[tbl]\n", 1, 7, "unclosed array table, expected `]`"},
		{"missing_eq", "x 1\n", 1, 3, "key with no value, expected `=`"},
		{"missing_value", "x =\n", 1, 4, "string values must be quoted, expected literal string"},
		{"missing_value_nl", "x =\ny = 1\n", 1, 4, "string values must be quoted, expected literal string"},
		{"dup_key", "x = 1\nx = 2\n", 2, 1, "duplicate key"},
		{"dup_table", "[a]\nb=1\n[a]\nc=2\n", 3, 2, "duplicate key"},
		{"dup_key_in_table", "[a]\nb=1\nb=2\n", 3, 1, "duplicate key"},
		{"bad_value", "x = abc\n", 1, 5, "string values must be quoted, expected literal string"},
		{"bad_value2", "x = tru\n", 1, 5, "invalid boolean, expected `true`"},
		{"invalid_escape", "x = \"a\\qb\"\n", 1, 8, "missing escaped value, expected `b`, `e`, `f`, `n`, `r`, `\\`, `\"`, `x`, `u`, `U`"},
		{"bare_key_bad", "a b = 1\n", 1, 3, "key with no value, expected `=`"},
		{"bad_number", "x = 1__2\n", 1, 6, "`_` may only go between digits, expected nothing"},
		{"leading_zero", "x = 01\n", 1, 5, "unexpected leading zero, expected nothing"},
		{"bad_float", "x = 1.\n", 1, 7, "invalid fraction, expected digits"},
		{"double_eq", "x == 1\n", 1, 4, "extra `=`, expected nothing"},
		{"key_only", "x\n", 1, 2, "key with no value, expected `=`"},
		{"empty_key", "= 1\n", 1, 1, "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`"},
		{"table_redefine_as_value", "a = 1\n[a]\n", 2, 2, "duplicate key"},
		{"dotted_conflict", "a = 1\na.b = 2\n", 2, 1, "cannot extend value of type integer with a dotted key"},
		{"inline_extend", "a = {b = 1}\n[a]\nc = 1\n", 2, 2, "duplicate key"},
		{"array_table_conflict", "a = [1]\n[[a]]\n", 2, 3, "duplicate key"},
		{"extra_after_value", "x = 1 2\n", 1, 5, "string values must be quoted, expected literal string"},
		{"unicode_escape_bad", "x = \"\\uZZZZ\"\n", 1, 8, "too few unicode value digits, expected unicode hexadecimal value"},
		{"control_char", "x = \"a\u0001b\"\n", 1, 7, "invalid basic string, expected non-double-quote visible characters, `\\`"},
		{"bad_header_chars", "[a b]\n", 1, 3, "unclosed table, expected `]`"},
		{"empty_header", "[]\n", 1, 2, "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`"},
		{"hex_bad", "x = 0xZZ\n", 1, 7, "invalid hexadecimal number"},
		{"comment_ctrl", "# a\u0001\n", 1, 4, "invalid comment character, expected printable characters"},
		{"missing_comma_array", "x = [1 2]\n", 1, 6, "string values must be quoted, expected literal string"},
		{"missing_comma_inline", "x = {a = 1 b = 2}\n", 1, 14, "extra assignment between key-value pairs, expected `,`"},
		{"unclosed_after_key", "model = \"gpt\n", 1, 13, "invalid basic string, expected `\"`"},
		{"unclosed_ml_literal", "x = '''abc\n", 1, 12, "invalid multi-line literal string, expected `'`"},
		{"bad_false", "x = fals\n", 1, 5, "invalid boolean, expected `false`"},
		{"oct_bad", "x = 0o9\n", 1, 7, "invalid octal number"},
		{"bin_bad", "x = 0b2\n", 1, 7, "invalid binary number"},
		{"hex_empty", "x = 0x\n", 1, 5, "integer number overflowed"},
		{"dup_in_inline", "x = {a = 1, a = 2}\n", 1, 13, "duplicate key"},
		{"dup_array_table_value", "[[a]]\n[a]\n", 2, 2, "duplicate key"},
		{"inline_dotted_dup", "a.b = 1\na.b = 2\n", 2, 3, "duplicate key"},
		{"missing_comma_inline2", "x = {a = 1 }}\n", 1, 13, "unexpected key or value, expected newline, `#`"},
		{"bad_bool_true2", "x = truex\n", 1, 5, "invalid boolean, expected `true`"},
		{"ws_key_header", "[ a b ]\n", 1, 4, "unclosed table, expected `]`"},
		{"quote_key_unclosed", "\"abc = 1\n", 1, 9, "key with no value, expected `=`"},
		{"datetime_trailing", "x = 1979-05-27T07:32:00Zx\n", 1, 5, "invalid datetime"},
		{"datetime_trailing_word", "x = 1979-05-27T07:32:00Z x\n", 1, 5, "invalid datetime"},
		{"date_month", "x = 1979-13-27\n", 1, 5, "invalid date, expected month between 01 and 12"},
		{"date_day", "x = 1979-05-32\n", 1, 5, "invalid date, expected day between 01 and 31"},
		{"date_day_february", "x = 1979-02-30\n", 1, 5, "invalid date, expected day between 01 and 28"},
		{"date_short", "x = 1979-05\n", 1, 5, "invalid date, expected `-` (MM-DD)"},
		{"time_hour", "x = 1979-05-27T25:00:00\n", 1, 5, "invalid time, expected hour between 00 and 23"},
		{"time_minute", "x = 1979-05-27T07:61:00\n", 1, 5, "invalid time, expected minute between 00 and 59"},
		{"time_second", "x = 07:32:61\n", 1, 5, "invalid time, expected second between 00 and 60"},
		{"time_one_digit_hour", "x = 7:32:00\n", 1, 5, "invalid time, expected a two-digit hour (HH)"},
		{"time_missing", "x = 1979-05-27T\n", 1, 5, "invalid time, expected hour"},
		{"time_fraction", "x = 1979-05-27T07:32:00.\n", 1, 5, "invalid time, expected nanosecond"},
		{"offset_hours", "x = 1979-05-27T07:32:00+25:00\n", 1, 5, "invalid offset, expected hours between 00 and 23"},
		{"offset_colon", "x = 1979-05-27T07:32:00+05\n", 1, 5, "invalid offset, expected `:` (HH:MM)"},
		{"string_newline_next_line", "x = \"ab\ncd\"\ny = 1\n", 2, 4, "key with no value, expected `=`"},
		{"string_newline_comment", "y = \"a\nb\" # c\n", 2, 4, "key with no value, expected `=`"},
		{"string_newline_blank_line", "x = \"ab\n\ncd\"\n", 3, 4, "key with no value, expected `=`"},
		{"string_newline_assignment", "x = \"ab\ncd\" = 1\n", 1, 8, "invalid basic string, expected `\"`"},
		{"plus_infx", "x = +infx\n", 1, 6, "invalid float, expected `inf`"},
		{"infx", "x = infx\n", 1, 5, "invalid float, expected `inf`"},
		{"plus_nanx", "x = +nanx\n", 1, 6, "invalid float, expected `nan`"},
		{"exponent", "x = 1e+\n", 1, 8, "invalid exponent, expected digits"},
		{"two_points", "x = 1.2.3\n", 1, 8, "invalid float, expected nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := loadErr(t, c.file)
			require.True(t, e.Syntax, e.Error())
			require.Equal(t, c.msg, e.Msg)
			require.Equal(t, []int{c.line, c.col}, []int{e.Line, e.Column}, e.Msg)
		})
	}
}
