package jsonrpc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		line   string
		kind   Kind
		method string
		params string
		bad    bool
	}{
		{line: `{"id":1,"method":"a","params":{"x":1}}`, kind: KindRequest, method: "a", params: `{"x":1}`},
		{line: `{"id":"s","method":"a"}`, kind: KindRequest, method: "a"},
		{line: `{"id":1,"method":"a","params":null}`, kind: KindRequest, method: "a"},
		{line: `{"method":"n"}`, kind: KindNotification, method: "n"},
		{line: `{"id":1,"result":{}}`, kind: KindResponse},
		{line: `{"id":1,"error":{"code":1,"message":"m"}}`, kind: KindError},
		{line: `{"id":null,"method":"n"}`, kind: KindNotification, method: "n"},
		{line: `{}`, bad: true},
		{line: `{"id":902}`, bad: true},
		{line: `[]`, bad: true},
		{line: `{nope`, bad: true},
		{line: `{"id":[1],"method":"a"}`, bad: true},
		{line: `{"id":1,"method":5}`, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			m, err := Decode([]byte(tc.line))
			if tc.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.kind, m.Kind)
			require.Equal(t, tc.method, m.Method)
			if tc.params == "" {
				require.Nil(t, m.Params)
			} else {
				require.JSONEq(t, tc.params, string(m.Params))
			}
		})
	}
}

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	b, err := Marshal(map[string]string{"s": "<a&b>"})
	require.NoError(t, err)
	require.Equal(t, `{"s":"<a&b>"}`, string(b))
}
