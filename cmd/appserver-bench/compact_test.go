package main

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// compactAll feeds line to a compactor in fragments of the given sizes
// (cycled) and returns the result.
func compactAll(t *testing.T, line string, sizes ...int) (string, error) {
	t.Helper()
	var c compactor
	for i, k := 0, 0; i < len(line); k++ {
		n := min(sizes[k%len(sizes)], len(line)-i)
		if err := c.write([]byte(line[i : i+n])); err != nil {
			return "", err
		}
		i += n
	}
	return string(c.bytes()), nil
}

func TestCompactor(t *testing.T) {
	long := func(unit string, n int) string { return strings.Repeat(unit, n) }
	cases := []struct {
		name, value string // value is Go text; it is JSON-encoded into the line
		wantLen     int64
		kept        bool
	}{
		{"short", "hello \"world\"\n", 14, true},
		{"empty", "", 0, true},
		{"nuls", long("\x00", 1000), 1000, false},
		{"ascii", long("abc", 500), 1500, false},
		{"controls", long("\n\t\"\\\x1f", 200), 1000, false},
		{"two byte", long("é", 300), 600, false},
		{"three byte", long("€", 300), 900, false},
		{"four byte", long("😀", 300), 1200, false},
		{"mixed", long("a\x00é€😀\\/\"", 100), 1400, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := json.Marshal(tc.value)
			require.NoError(t, err)
			// \uXXXX escapes for non-ASCII, as serde and other encoders may write.
			var ascii strings.Builder
			for _, r := range string(enc) {
				switch {
				case r > 0xFFFF:
					r -= 0x10000
					ascii.WriteString(strings.ToLower(jsonEscape(0xD800+(r>>10)) + jsonEscape(0xDC00+(r&0x3FF))))
				case r > 0x7E:
					ascii.WriteString(jsonEscape(r))
				default:
					ascii.WriteRune(r)
				}
			}
			for _, s := range []string{string(enc), ascii.String()} {
				line := `{"id":7,"result":{"exitCode":0,"stdout":` + s + `,"stderr":"x"}}` + "\n"
				for _, sizes := range [][]int{{len(line)}, {1}, {5}, {7, 3, 64}, {rand.IntN(50) + 1, rand.IntN(50) + 1}} {
					got, err := compactAll(t, line, sizes...)
					require.NoError(t, err)
					var m message
					require.NoError(t, json.Unmarshal([]byte(got), &m), got)
					require.Equal(t, "7", string(m.ID))
					var res struct {
						Stdout, Stderr string
						ExitCode       int
					}
					require.NoError(t, json.Unmarshal(m.Result, &res), got)
					require.Equal(t, "x", res.Stderr)
					require.Equal(t, tc.wantLen, decodedLen(res.Stdout), "sizes %v", sizes)
					if tc.kept {
						require.Equal(t, tc.value, res.Stdout)
					} else {
						require.True(t, strings.HasPrefix(res.Stdout, truncatedPrefix))
						require.Less(t, len(got), 200)
					}
				}
			}
		})
	}
	t.Run("bad escape", func(t *testing.T) {
		_, err := compactAll(t, `{"a":"\u00zz"}`, 3)
		require.Error(t, err)
	})
	t.Run("huge skeleton", func(t *testing.T) {
		_, err := compactAll(t, "["+strings.Repeat("1,", maxCompactBytes)+"1]", 4096)
		require.ErrorIs(t, err, errCompactTooLong)
	})
	t.Run("lone surrogate", func(t *testing.T) {
		got, err := compactAll(t, `["`+long(`\udc00`, 100)+`"]`, 9)
		require.NoError(t, err)
		var v []string
		require.NoError(t, json.Unmarshal([]byte(got), &v))
		require.EqualValues(t, 300, decodedLen(v[0]))
	})
}

func jsonEscape(r rune) string {
	const hex = "0123456789abcdef"
	return `\u` + string([]byte{hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15]})
}

func TestDecodedLen(t *testing.T) {
	require.EqualValues(t, 3, decodedLen("abc"))
	require.EqualValues(t, 42, decodedLen(truncatedPrefix+"42"))
	require.EqualValues(t, len(truncatedPrefix)+2, decodedLen(truncatedPrefix+"x1"), "not a number: taken literally")
}

func TestParseMessage(t *testing.T) {
	payload := []byte("hello, world")
	b64 := base64.StdEncoding.EncodeToString(payload)
	for _, line := range []string{
		`{"method":"command/exec/outputDelta","params":{"processId":"p","stream":"stdout","deltaBase64":"` + b64 + `","capReached":false}}`,
		`{"params":{"deltaBase64":"` + b64 + `"},"method":"command/exec/outputDelta"}`,     // slow path: other key order
		`{"method": "command/exec/outputDelta", "params": {"deltaBase64": "` + b64 + `"}}`, // slow path: spaces
	} {
		m, ok := parseMessage([]byte(line + "\n"))
		require.True(t, ok, line)
		require.Equal(t, "command/exec/outputDelta", m.Method)
		require.EqualValues(t, len(payload), m.deltaBytes, line)
	}
	for _, bad := range []string{
		"not json",
		`{"method":"command/exec/outputDelta","params":{"deltaBase64":"abc"}}`,
		`{"method":"command/exec/outputDelta","params":[]}`,
	} {
		_, ok := parseMessage([]byte(bad))
		require.False(t, ok, bad)
	}
	m, ok := parseMessage([]byte(`{"id":3,"result":{}}`))
	require.True(t, ok)
	require.True(t, m.isResponse(3))
	require.False(t, m.isResponse(4))

	for s, want := range map[string]int64{"": 0, "YQ==": 1, "YWI=": 2, "YWJj": 3, "YWJjZA==": 4} {
		n, ok := base64Len([]byte(s))
		require.True(t, ok, s)
		require.Equal(t, want, n, s)
	}
	_, ok = base64Len([]byte("YWJ"))
	require.False(t, ok)
}

// BenchmarkCompactor measures the client side of a buffered throughput run,
// which must stay well above any server's rate.
func BenchmarkCompactor(b *testing.B) {
	chunk := []byte(strings.Repeat(`\u0000`, 1<<20))
	b.SetBytes(int64(len(chunk)))
	var c compactor
	_ = c.write([]byte(`{"id":1,"result":{"stdout":"`))
	for b.Loop() {
		if err := c.write(chunk); err != nil {
			b.Fatal(err)
		}
	}
}
