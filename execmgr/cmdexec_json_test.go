package execmgr

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wireResponse is CommandExecResponse as plain strings, for encoding/json.
type wireResponse struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

func marshalNoHTML(t *testing.T, v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(b.String(), "\n")
}

// recordingWriter keeps what is written and the size of each write.
type recordingWriter struct {
	buf   bytes.Buffer
	sizes []int
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.buf.Write(p)
}

// largeOutputs are outputs spanning several blocks, with multi-byte and invalid UTF-8 sequences cut by
// the block boundaries (4 KiB, then every 1 MiB) and by WriteJSON's pieces (32 KiB).
func largeOutputs() map[string]string {
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 2<<20+77)
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	outs := map[string]string{
		"nul":    strings.Repeat("\x00", 1<<20+4<<10+5),
		"random": string(random),
		"text":   strings.Repeat("line of output 12345\n", 60000),
	}
	for shift := range 4 { // each cut of a 4-byte sequence by a boundary
		outs["emoji+"+string(rune('0'+shift))] = strings.Repeat("x", shift) + strings.Repeat("\U0001F600\u2028é\xf0\x9f", 100000)
	}
	return outs
}

// TestCommandExecResponseAppendJSON: the hand-written encoding is byte for byte what encoding/json
// (without HTML escaping, as the wire uses) writes, for every kind of byte an output can hold, whether
// encoded whole (AppendJSON) or written in pieces (WriteJSON).
func TestCommandExecResponseAppendJSON(t *testing.T) {
	outputs := []string{
		"", "hello\n", "\x00\x01\x1f\x7f", "quote\" back\\slash", "<tag>&amp;", "caf\xc3\xa9 \xff\xfe bad",
		"\u2028\u2029", "tab\tcr\r", strings.Repeat("\x00", 1000), "emoji \U0001F600",
		strings.Repeat("é", 3000), "\xf0\x9f", // the first spans the first block's end
	}
	for _, out := range largeOutputs() {
		outputs = append(outputs, out)
	}
	for _, out := range outputs {
		r := CommandExecResponse{ExitCode: -1, Stdout: OutputOf(out), Stderr: OutputOf(out + "err")}
		want := marshalNoHTML(t, wireResponse{-1, out, out + "err"})
		require.Equal(t, want, string(r.AppendJSON(nil)), "%.40q", out)
		require.Equal(t, want, marshalNoHTML(t, r), "%.40q", out)
		var w recordingWriter
		require.NoError(t, r.WriteJSON(&w))
		require.True(t, want == w.buf.String(), "WriteJSON differs for %.40q", out)
	}
}

// TestCommandExecResponseWriteJSONPieces: a large response is written in pieces of at least 128 KiB
// (but the last) and never more than a few hundred KiB at once.
func TestCommandExecResponseWriteJSONPieces(t *testing.T) {
	r := CommandExecResponse{Stdout: OutputOf(strings.Repeat("\x00", 8<<20))}
	require.True(t, r.Large())
	var w recordingWriter
	require.NoError(t, r.WriteJSON(&w))
	require.Equal(t, 6*(8<<20)+len(`{"exitCode":0,"stdout":"","stderr":""}`), w.buf.Len())
	require.Greater(t, len(w.sizes), 200)
	for i, n := range w.sizes {
		require.LessOrEqual(t, n, writeBuf, "write %d", i)
		if i < len(w.sizes)-1 {
			require.GreaterOrEqual(t, n, writeFlush, "write %d", i)
		}
	}
	require.False(t, CommandExecResponse{Stdout: OutputOf("small")}.Large())
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("broken pipe")
	}
	w.n--
	return len(p), nil
}

// TestCommandExecResponseWriteJSONError: a failed write ends WriteJSON with its error.
func TestCommandExecResponseWriteJSONError(t *testing.T) {
	r := CommandExecResponse{Stdout: OutputOf(strings.Repeat("\x00", 1<<20)), Stderr: OutputOf(strings.Repeat("\x00", 1<<20))}
	for n := range 3 {
		require.EqualError(t, r.WriteJSON(&failingWriter{n: n}), "broken pipe")
	}
	require.EqualError(t, r.WriteJSON(&failingWriter{n: 48}), "broken pipe") // the stderr part or the closing brace
}

// TestOutputBlocks: the blocks depend on the bytes only, not on the sizes of the writes.
func TestOutputBlocks(t *testing.T) {
	s := strings.Repeat("0123456789", 250000)
	var o Output
	for rest := s; rest != ""; {
		k := min(len(rest), 7777)
		o.write([]byte(rest[:k]))
		rest = rest[k:]
	}
	require.Equal(t, OutputOf(s), o)
	require.Equal(t, len(s), o.Len())
	require.Equal(t, s, o.String())
	require.Len(t, o.blocks, 4) // 4 KiB, 1 MiB, 1 MiB, the rest
	require.Equal(t, "", Output{}.String())
	require.Equal(t, "abc", OutputOf("abc").String())
}
