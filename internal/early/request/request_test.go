package request

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	line := []byte(`{"id":"a b","method":"initialize","params":{"clientInfo":{"name":"n","version":"1"}}}` + "\n{}")
	f := Decode(line, 86)
	require.NotNil(t, f.Params)
	require.Equal(t, `"a b"`, string(f.ID))
	require.Equal(t, "n", f.Params.ClientInfo.Name)
	require.Equal(t, line, f.Read)

	for _, l := range []string{`{"id":1,"method":"initialized"}`, `{"method":"initialize","params":{"clientInfo":{"name":"n","version":"1"}}}`,
		`{"id":1,"method":"initialize","params":{}}`, `{"id":1.5,"method":"initialize","params":{"clientInfo":{"name":"n","version":"1"}}}`} {
		require.Nil(t, Decode([]byte(l+"\n"), len(l)).Params, l)
	}
	require.Nil(t, Decode(line, -1).Params)
}
