package firstline

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadFirstLine(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		for _, chunk := range []string{`{"id":1,`, `"method"`, ":\"x\"}\n{\"id\":2}\n"} {
			_, _ = pw.Write([]byte(chunk)) // one Read each
		}
		_ = pw.Close()
	}()
	read, eol := ReadFirstLine(pr)
	require.Equal(t, `{"id":1,"method":"x"}`, string(read[:eol]))
	rest, err := io.ReadAll(io.MultiReader(bytes.NewReader(read[eol+1:]), pr))
	require.NoError(t, err)
	require.Equal(t, "{\"id\":2}\n", string(rest))
}
