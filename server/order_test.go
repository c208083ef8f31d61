package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/jsonrpc"
)

func TestOrderLanes(t *testing.T) {
	// Before initialize every request runs alone (see Order); after it, the lanes below.
	before := &connection{}
	require.Equal(t, jsonrpc.Order{Barrier: true}, before.Order("thread/start", []byte(`{"cwd":"/x"}`)))
	require.Equal(t, jsonrpc.Order{Barrier: true}, before.Order("turn/start", []byte(`{"threadId":"t1","input":[]}`)))
	c := &connection{initialized: true}
	for _, tc := range []struct {
		method, params string
		want           jsonrpc.Order
	}{
		{"initialize", `{"clientInfo":{}}`, jsonrpc.Order{Barrier: true}},
		{"thread/start", `{"cwd":"/x"}`, jsonrpc.Order{}},
		{"thread/loaded/list", `{}`, jsonrpc.Order{}},
		{"thread/resume", `{"threadId":"t1"}`, jsonrpc.Order{Lane: "thread:t1"}},
		{"turn/start", `{"threadId":"t1","input":[]}`, jsonrpc.Order{Lane: "thread:t1"}},
		{"turn/interrupt", `{"threadId":"t1","turnId":"u"}`, jsonrpc.Order{Lane: "thread-oob:t1"}},
		{"thread/increment_elicitation", `{"threadId":"t1"}`, jsonrpc.Order{Lane: "thread-oob:t1"}},
		{"thread/decrement_elicitation", `{"threadId":"t1"}`, jsonrpc.Order{Lane: "thread-oob:t1"}},
		{"command/exec/write", `{"processId":"p"}`, jsonrpc.Order{Lane: "process:p"}},
		{"config/value/write", `{"keyPath":"model"}`, jsonrpc.Order{Lane: "config"}},
		{"config/read", `{}`, jsonrpc.Order{Lane: "config"}},
		{"turn/start", `{"threadId":7}`, jsonrpc.Order{}},
		{"turn/start", `[1]`, jsonrpc.Order{}},
		{"turn/start", ``, jsonrpc.Order{}},
	} {
		require.Equal(t, tc.want, c.Order(tc.method, []byte(tc.params)), "%s %s", tc.method, tc.params)
	}
}
