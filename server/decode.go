package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// legacyMethods are the three v1 methods the reference's request enum still holds (after account/read),
// outside the v2 schema: its "unknown variant" error lists them.
var legacyMethods = []string{"getConversationSummary", "gitDiffToRemote", "getAuthStatus"}

// unknownMethodSuffix lists every client method the way serde's error does (built on first use).
var unknownMethodSuffix = sync.OnceValue(func() string {
	var quoted []string
	for _, n := range protocol.ClientRequestNames() {
		quoted = append(quoted, "`"+n+"`")
		if n == protocol.MethodAccountRead {
			for _, l := range legacyMethods {
				quoted = append(quoted, "`"+l+"`")
			}
		}
	}
	return strings.Join(quoted, ", ")
})

// unknownMethodError is the reference's serde wording for a method outside ClientRequest.
func unknownMethodError(method string) error {
	return jsonrpc.InvalidRequest("Invalid request: unknown variant `" + method + "`, expected one of " + unknownMethodSuffix())
}

func invalidParams(format string, args ...any) error {
	return jsonrpc.InvalidRequest("Invalid request: " + fmt.Sprintf(format, args...))
}

// topFields decodes a params object's top-level members at most once, for the checks that need them.
type topFields struct {
	raw  []byte
	obj  map[string]json.RawMessage
	done bool
	ok   bool
}

// get returns the members (ok false when raw is not an object).
func (f *topFields) get() (map[string]json.RawMessage, bool) {
	if !f.done {
		f.done = true
		f.ok = f.raw != nil && json.Unmarshal(f.raw, &f.obj) == nil
	}
	return f.obj, f.ok
}

// decodeParams decodes raw params into the method's params type, with serde-like error messages.
func decodeParams(spec *protocol.MethodSpec, raw json.RawMessage) (any, error) {
	return decodeParamsFields(spec, raw, &topFields{raw: raw})
}

// decodeParamsFields is decodeParams sharing the top-level members' decoding through f (f.raw is raw).
func decodeParamsFields(spec *protocol.MethodSpec, raw json.RawMessage, f *topFields) (any, error) {
	p, err := protocol.DecodeParams(spec, raw, f.get)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	return p, nil
}

// usedExperimentalField names the first experimental top-level field raw params set to a value other
// than its default, as the reference gates them: null is unset, and so is false for a boolean the schema
// defaults to false (experimentalRawEvents: false is accepted without the capability), while any other
// value, an empty list included, counts as used.
func usedExperimentalField(spec *protocol.MethodSpec, f *topFields) string {
	if len(spec.ExperimentalFields) == 0 {
		return ""
	}
	present, ok := f.get()
	if !ok {
		return ""
	}
	for _, f := range spec.ExperimentalFields {
		v, ok := present[f]
		if !ok {
			continue
		}
		switch string(bytes.TrimSpace(v)) {
		case "null":
			continue
		case "false":
			if defaultsToFalse(spec, f) {
				continue
			}
		}
		return f
	}
	return ""
}

// defaultsToFalse reports whether the params field with JSON name field is a boolean the schema gives
// a false default (generated as an omitzero bool).
func defaultsToFalse(spec *protocol.MethodSpec, field string) bool {
	if spec.NewParams == nil {
		return false
	}
	t := reflect.TypeOf(spec.NewParams())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name != field {
			continue
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		return ft.Kind() == reflect.Bool && strings.Contains(opts, "omitzero")
	}
	return false
}
