package execmgr

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommandExecResponseAppendJSON: the hand-written encoding is byte for byte what encoding/json
// (without HTML escaping, as the wire uses) writes, for every kind of byte an output can hold.
func TestCommandExecResponseAppendJSON(t *testing.T) {
	outputs := []string{
		"", "hello\n", "\x00\x01\x1f\x7f", "quote\" back\\slash", "<tag>&amp;", "caf\xc3\xa9 \xff\xfe bad",
		"\u2028\u2029", "tab\tcr\r", strings.Repeat("\x00", 1000), "emoji \U0001F600",
	}
	for _, out := range outputs {
		r := CommandExecResponse{ExitCode: -1, Stdout: out, Stderr: out + "err"}
		var want strings.Builder
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(r))
		require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(r.AppendJSON(nil)), "%q", out)
	}
}
