package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// RequestId is a JSON-RPC request id: a string or an integer. It re-encodes with the JSON type it was
// decoded from.
type RequestId struct {
	// Str is the id when IsString is true.
	Str string
	// Int is the id when IsString is false.
	Int int64
	// IsString reports a string id.
	IsString bool
}

// IntRequestID returns an integer request id.
func IntRequestID(n int64) RequestId { return RequestId{Int: n} }

// StringRequestID returns a string request id.
func StringRequestID(s string) RequestId { return RequestId{Str: s, IsString: true} }

// String formats the id for logs and map keys ("7" or "\"abc\"" so that 7 and "7" differ).
func (id RequestId) String() string {
	if id.IsString {
		return strconv.Quote(id.Str)
	}
	return strconv.FormatInt(id.Int, 10)
}

// MarshalJSON writes the id as a JSON string or number.
func (id RequestId) MarshalJSON() ([]byte, error) {
	if id.IsString {
		return json.Marshal(id.Str)
	}
	return []byte(strconv.FormatInt(id.Int, 10)), nil
}

// UnmarshalJSON accepts a JSON string or integer.
func (id *RequestId) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*id = RequestId{IsString: true}
		return json.Unmarshal(b, &id.Str)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return untaggedMismatch("RequestId")
	}
	*id = RequestId{Int: n}
	return nil
}

// StringOrList is a value that is either one string or a list of strings; it re-encodes in the form it
// was decoded from.
type StringOrList struct {
	// Values holds the string(s).
	Values []string
	// IsList reports the list form (a single string when false).
	IsList bool
}

// MarshalJSON writes a string when !IsList and exactly one value is held, else a list.
func (v StringOrList) MarshalJSON() ([]byte, error) {
	if !v.IsList && len(v.Values) == 1 {
		return json.Marshal(v.Values[0])
	}
	if v.Values == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(v.Values)
}

// UnmarshalJSON accepts a string or an array of strings.
func (v *StringOrList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = StringOrList{Values: []string{s}}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("invalid type: expected a string or a list of strings: %w", err)
	}
	*v = StringOrList{Values: l, IsList: true}
	return nil
}

// ForcedChatgptWorkspaceIds is one workspace id or a list of them.
type ForcedChatgptWorkspaceIds = StringOrList

// ThreadListCwdFilter is one cwd or a list of cwds (thread/list params).
type ThreadListCwdFilter struct{ StringOrList }

// UnmarshalJSON accepts a string or an array of strings, refusing anything else as serde does.
func (v *ThreadListCwdFilter) UnmarshalJSON(b []byte) error {
	if err := v.StringOrList.UnmarshalJSON(b); err != nil {
		return untaggedMismatch("ThreadListCwdFilter")
	}
	return nil
}

// FunctionCallOutputBody is the output of a function call: plain text, or a list of content items.
type FunctionCallOutputBody struct {
	// Text is the output when Items is nil.
	Text string
	// Items is the structured output; non-nil selects the list form.
	Items []FunctionCallOutputContentItem
}

// MarshalJSON writes Items when non-nil, else Text.
func (v FunctionCallOutputBody) MarshalJSON() ([]byte, error) {
	if v.Items != nil {
		return json.Marshal(v.Items)
	}
	return json.Marshal(v.Text)
}

// UnmarshalJSON accepts a string or a list of content items.
func (v *FunctionCallOutputBody) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*v = FunctionCallOutputBody{}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &v.Text)
	}
	if err := json.Unmarshal(b, &v.Items); err != nil {
		return untaggedMismatch("FunctionCallOutputBody")
	}
	if v.Items == nil {
		v.Items = []FunctionCallOutputContentItem{}
	}
	return nil
}
