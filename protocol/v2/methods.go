package protocol

import "sync"

// MethodSpec describes one JSON-RPC method: its name and the Go types of its params and result.
type MethodSpec struct {
	// Name is the wire method name, e.g. "thread/start".
	Name string
	// ParamsType is the Go type name of the params ("" when the schema has no params).
	ParamsType string
	// NewParams returns a pointer to a zero params value; nil when the method takes no params.
	NewParams func() any
	// ParamsRequired reports that the schema requires the params member.
	ParamsRequired bool
	// ResultType is the Go type name of the response result (requests only).
	ResultType string
	// NewResult returns a pointer to a zero result value (requests only).
	NewResult func() any
	// Experimental reports a method that exists only in the experimental schema (needs experimentalApi).
	Experimental bool
	// ExperimentalFields are the JSON names of top-level params fields that exist only in the
	// experimental schema; using one without experimentalApi is "<method>.<field> requires experimentalApi
	// capability".
	ExperimentalFields []string
}

// The indexes are built on first use, not at program start (the sandbox helper never needs them).
var (
	clientRequestIndex      = sync.OnceValue(func() map[string]*MethodSpec { return index(ClientRequests) })
	serverRequestIndex      = sync.OnceValue(func() map[string]*MethodSpec { return index(ServerRequests) })
	serverNotificationIndex = sync.OnceValue(func() map[string]*MethodSpec { return index(ServerNotifications) })
)

func index(specs []MethodSpec) map[string]*MethodSpec {
	m := make(map[string]*MethodSpec, len(specs))
	for i := range specs {
		m[specs[i].Name] = &specs[i]
	}
	return m
}

// LookupClientRequest returns the spec of a client → server request method.
func LookupClientRequest(method string) (*MethodSpec, bool) {
	s, ok := clientRequestIndex()[method]
	return s, ok
}

// LookupServerRequest returns the spec of a server → client request method.
func LookupServerRequest(method string) (*MethodSpec, bool) {
	s, ok := serverRequestIndex()[method]
	return s, ok
}

// LookupServerNotification returns the spec of a server → client notification method.
func LookupServerNotification(method string) (*MethodSpec, bool) {
	s, ok := serverNotificationIndex()[method]
	return s, ok
}

// ClientRequestNames returns every client request method name in schema order (the order the reference
// lists them in its "unknown variant" error).
func ClientRequestNames() []string {
	out := make([]string, len(ClientRequests))
	for i, s := range ClientRequests {
		out[i] = s.Name
	}
	return out
}
