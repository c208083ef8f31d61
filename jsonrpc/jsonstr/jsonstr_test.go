package jsonstr

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodePieces encodes s with an Encoder, cut at the given offsets.
func encodePieces(s []byte, cuts []int) []byte {
	var e Encoder
	dst := e.Begin(nil)
	prev := 0
	for _, c := range cuts {
		c = min(max(c, prev), len(s))
		dst = e.Write(dst, s[prev:c])
		prev = c
	}
	dst = e.Write(dst, s[prev:])
	return e.End(dst)
}

// TestEncoderCutEverywhere: an Encoder writes what Append writes for every cut of strings whose UTF-8
// sequences (valid, truncated, overlong, surrogates, out of range) can be split between pieces.
func TestEncoderCutEverywhere(t *testing.T) {
	inputs := []string{
		"", "a", "café", "\U0001F600", "\u2028x\u2029", "\xf0\x9f\x98", "\xf0\x9f", "\xe2\x80", "\xc3",
		"\xff\xfe", "\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xf0\x9f\x98\x80\xf0\x9f",
		"\x00\x00\x01\"\\\t\n\r\b\f\x1f\x7f", "a\xf0\x9fb\xe2\x80\xa8c", "\xe2\xe2\x80\xa8", "\xf0\xf0\x9f\x98\x80",
	}
	for _, in := range inputs {
		want := string(Append(nil, in))
		s := []byte(in)
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				require.Equal(t, want, string(encodePieces(s, []int{i, j})), "%q cut at %d, %d", in, i, j)
				// every byte in a piece of its own
				if i == 0 && j == 0 {
					cuts := make([]int, len(s))
					for k := range cuts {
						cuts[k] = k + 1
					}
					require.Equal(t, want, string(encodePieces(s, cuts)), "%q byte by byte", in)
				}
			}
		}
	}
}

// TestEncoderRandom: random byte strings weighted towards UTF-8 lead and continuation bytes, cut at random.
func TestEncoderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("a\x00\"\\\n\x80\x9f\xa8\xbf\xc3\xe2\xed\xf0\xf4\xff")
	for range 5000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		cuts := make([]int, r.IntN(6))
		for i := range cuts {
			cuts[i] = r.IntN(len(s) + 1)
		}
		require.Equal(t, string(Append(nil, s)), string(encodePieces(s, cuts)), "%q cuts %v", s, cuts)
	}
}

// FuzzEncoder: any input, any two cuts.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte("caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8"), 4, 9)
	f.Add([]byte("\xf0\x9f\x98"), 1, 2)
	f.Fuzz(func(t *testing.T, s []byte, i, j int) {
		if i < 0 || j < 0 {
			return
		}
		require.Equal(t, string(Append(nil, s)), string(encodePieces(s, []int{i, j})))
	})
}

// TestEncoderReuse: Begin resets what a previous string left.
func TestEncoderReuse(t *testing.T) {
	var e Encoder
	_ = e.Write(e.Begin(nil), []byte("x\xf0\x9f"))
	require.Equal(t, `"ok"`, string(e.End(e.Write(e.Begin(nil), []byte("ok")))))
}

func BenchmarkAppendNUL(b *testing.B) {
	s := strings.Repeat("\x00", 1<<20)
	dst := make([]byte, 0, 6<<20+2)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}

func BenchmarkAppendText(b *testing.B) {
	s := strings.Repeat("line of ordinary output, with a number 12345\n", 1<<14)
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}

func BenchmarkAppendUTF8(b *testing.B) {
	s := strings.Repeat("café ünïcödé \U0001F600 текст ", 1<<14)
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}

// TestSpecial8: the lowest byte special8 flags is the first byte that needs escaping or decoding, and
// nothing is flagged when no byte does, for words mixing every kind of byte around the thresholds.
func TestSpecial8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	kinds := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 'a', 0x7e, 0x7f, 0x80, 0xc3, 0xff}
	special := func(b byte) bool { return b < 0x20 || b == '"' || b == '\\' || b >= 0x80 }
	for range 200000 {
		var w [8]byte
		for i := range w {
			w[i] = kinds[r.IntN(len(kinds))]
		}
		first := 8
		for i, b := range w {
			if special(b) {
				first = i
				break
			}
		}
		m := special8(load64(w[:], 0))
		if first == 8 {
			require.Zero(t, m, "%q", w)
		} else {
			require.Equal(t, first, bits.TrailingZeros64(m)>>3, "%q", w)
		}
	}
}
