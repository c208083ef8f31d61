package server

import (
	"bytes"
	"encoding/json"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// laneKeys are the params members that name what a request acts on.
type laneKeys struct {
	ThreadID  *string `json:"threadId"`
	ProcessID *string `json:"processId"`
	SessionID *string `json:"sessionId"`     // fuzzyFileSearch/session*
	Handle    *string `json:"processHandle"` // process/*
	WatchID   *string `json:"watchId"`       // fs/watch, fs/unwatch
}

// Order implements jsonrpc.Orderer. Requests run concurrently except where a client may rely on
// arrival order without waiting for answers:
//   - initialize runs alone (a pipelined request after it sees the connection initialized), and so
//     does every request before it (it is refused as not initialized even if initialize follows at once);
//   - requests naming one thread run one at a time in arrival order (thread/resume then turn/start),
//     except turn/interrupt and the out-of-band elicitation counter, which never wait behind a slow
//     request of their thread and are ordered among themselves in a lane of their own;
//   - requests naming one process (command/exec/write, …) keep their order;
//   - config reads and writes keep their order.
func (c *connection) Order(method string, params json.RawMessage) jsonrpc.Order {
	switch method {
	case protocol.MethodInitialize:
		return jsonrpc.Order{Barrier: true}
	}
	if !c.isInitialized() {
		return jsonrpc.Order{Barrier: true}
	}
	switch method {
	case protocol.MethodConfigRead, protocol.MethodConfigValueWrite, protocol.MethodConfigBatchWrite,
		protocol.MethodSkillsConfigWrite, protocol.MethodModelProviderConfigWrite, protocol.MethodExperimentalFeatureEnablementSet:
		return jsonrpc.Order{Lane: "config"}
	}
	if len(params) == 0 || params[0] != '{' {
		return jsonrpc.Order{}
	}
	var keys laneKeys
	if !bytes.Contains(params, []byte(`"threadId"`)) && !bytes.Contains(params, []byte(`"processId"`)) &&
		!bytes.Contains(params, []byte(`"sessionId"`)) && !bytes.Contains(params, []byte(`"watchId"`)) &&
		!bytes.Contains(params, []byte(`"processHandle"`)) {
		return jsonrpc.Order{}
	}
	if err := json.Unmarshal(params, &keys); err != nil {
		return jsonrpc.Order{}
	}
	switch {
	case keys.ThreadID != nil && preempts(method):
		return jsonrpc.Order{Lane: "thread-oob:" + *keys.ThreadID}
	case keys.ThreadID != nil:
		return jsonrpc.Order{Lane: threadLane(*keys.ThreadID)}
	case keys.ProcessID != nil:
		return jsonrpc.Order{Lane: "process:" + *keys.ProcessID}
	case keys.Handle != nil:
		return jsonrpc.Order{Lane: "process:" + *keys.Handle}
	case keys.SessionID != nil:
		return jsonrpc.Order{Lane: "search-session:" + *keys.SessionID}
	case keys.WatchID != nil:
		return jsonrpc.Order{Lane: "fs-watch:" + *keys.WatchID}
	}
	return jsonrpc.Order{}
}

// preempts lists the requests that must get through while their thread is busy.
func preempts(method string) bool {
	switch method {
	case protocol.MethodTurnInterrupt, protocol.MethodThreadIncrementElicitation, protocol.MethodThreadDecrementElicitation:
		return true
	}
	return false
}

// threadLane names the lane of the requests acting on one thread. thread/start and thread/fork claim
// the new thread's lane (jsonrpc.Request.Claim) so that a request for it queues behind their
// thread/started notification.
func threadLane(id string) string { return "thread:" + id }
