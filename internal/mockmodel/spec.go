package mockmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Response scripts the answer to one POST {base}/responses; its JSON form is the conformance
// harness's response spec (mockmodel.py), so scenario files can be decoded straight into it.
type Response struct {
	ID           string            `json:"id,omitempty"`             // default "resp-<n>"
	DelayMs      int               `json:"delay_ms,omitempty"`       // sleep before the HTTP headers
	HTTPStatus   int               `json:"http_status,omitempty"`    // != 0/200: send ErrorBody and stop
	ErrorBody    any               `json:"error_body,omitempty"`     // JSON value; default a server_error object
	Headers      map[string]string `json:"headers,omitempty"`        // extra response headers (e.g. retry-after)
	EventDelayMs *int              `json:"event_delay_ms,omitempty"` // pause between SSE events (default 5)
	Usage        map[string]any    `json:"usage,omitempty"`          // merged over the default usage
	Completed    *bool             `json:"completed,omitempty"`      // false: end cleanly without response.completed
	Truncate     bool              `json:"truncate,omitempty"`       // abort the TCP connection after the items
	Items        []Item            `json:"items,omitempty"`
}

// Item is one entry of a Response's item script; Type selects which other fields matter
// (message, function_call, custom_tool_call, reasoning, sleep, hang, raw_event).
type Item struct {
	Type            string         `json:"type"`
	ID              string         `json:"id,omitempty"`
	Text            string         `json:"text,omitempty"`              // message
	Chunks          int            `json:"chunks,omitempty"`            // message: number of deltas (default 3)
	HangAfterChunks *int           `json:"hang_after_chunks,omitempty"` // message: hang after k deltas
	Phase           string         `json:"phase,omitempty"`             // message
	MaxS            float64        `json:"max_s,omitempty"`             // hang / hang_after_chunks limit (default 120)
	Name            string         `json:"name,omitempty"`              // function_call, custom_tool_call
	Namespace       string         `json:"namespace,omitempty"`         // function_call
	CallID          string         `json:"call_id,omitempty"`           // function_call, custom_tool_call
	Arguments       any            `json:"arguments,omitempty"`         // function_call: object or JSON string
	Input           string         `json:"input,omitempty"`             // custom_tool_call
	Summary         []string       `json:"summary,omitempty"`           // reasoning
	Ms              int            `json:"ms,omitempty"`                // sleep (default 100)
	Event           map[string]any `json:"event,omitempty"`             // raw_event (needs "type")
}

// Message returns a message item streamed as chunks text deltas.
func Message(text string, chunks int) Item { return Item{Type: "message", Text: text, Chunks: chunks} }

// FunctionCall returns a function_call item; args is an object (marshalled) or a JSON string.
func FunctionCall(name, callID string, args any) Item {
	return Item{Type: "function_call", Name: name, CallID: callID, Arguments: args}
}

// CustomToolCall returns a custom_tool_call item (freeform tools such as apply_patch).
func CustomToolCall(name, callID, input string) Item {
	return Item{Type: "custom_tool_call", Name: name, CallID: callID, Input: input}
}

// Reasoning returns a reasoning item with one summary part per string.
func Reasoning(summary ...string) Item { return Item{Type: "reasoning", Summary: summary} }

// Sleep returns an item that pauses the stream for ms milliseconds.
func Sleep(ms int) Item { return Item{Type: "sleep", Ms: ms} }

// Hang returns an item that keeps the stream open until the client leaves, Release or maxS seconds.
func Hang(maxS float64) Item { return Item{Type: "hang", MaxS: maxS} }

// RawEvent returns an item that sends ev verbatim as one SSE event (ev must carry "type").
func RawEvent(ev map[string]any) Item { return Item{Type: "raw_event", Event: ev} }

// Bool returns a pointer to b, for Response.Completed.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n, for Response.EventDelayMs and Item.HangAfterChunks.
func Int(n int) *int { return &n }

var defaultUsage = map[string]any{
	"input_tokens":          100,
	"input_tokens_details":  map[string]any{"cached_tokens": 0},
	"output_tokens":         20,
	"output_tokens_details": map[string]any{"reasoning_tokens": 0},
	"total_tokens":          120,
}

// fallback is served when the queue is empty, as mockmodel.py does.
var fallback = Response{Items: []Item{{Type: "message", Text: "mock: no scripted response"}}}

// split cuts text into n nearly equal pieces like mockmodel.py's _split (by runes, not bytes,
// so deltas stay valid UTF-8).
func split(text string, n int) []string {
	r := []rune(text)
	if n < 1 {
		n = 1
	}
	if n > len(r) {
		n = max(1, len(r))
	}
	if len(r) == 0 {
		return []string{""}
	}
	size := (len(r) + n - 1) / n
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}

var captureRE = regexp.MustCompile(`\{\{capture(_int)?:(.+?)\}\}`)

// toolOutputsText joins the outputs of every *_call_output item of a request body.
func toolOutputsText(body map[string]any) string {
	input, _ := body["input"].([]any)
	var out []string
	for _, it := range input {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); !strings.HasSuffix(t, "_call_output") {
			continue
		}
		if s, ok := m["output"].(string); ok {
			out = append(out, s)
		} else {
			b, _ := json.Marshal(m["output"])
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}

// applyCaptures replaces {{capture:RE}} / {{capture_int:RE}} in the string values of spec with
// group 1 of the last match of RE in the tool outputs of the request body reqBody.
func applyCaptures(spec Response, reqBody []byte) (Response, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return spec, err
	}
	if !strings.Contains(string(raw), "{{capture") {
		return spec, nil
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return spec, err
	}
	text := toolOutputsText(parseBody(reqBody))
	one := func(expr string) (string, error) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return "", fmt.Errorf("bad capture regex %q: %w", expr, err)
		}
		all := re.FindAllStringSubmatch(text, -1)
		if len(all) == 0 {
			return "", fmt.Errorf("no match for %q", expr)
		}
		last := all[len(all)-1]
		if len(last) > 1 {
			return last[1], nil
		}
		return last[0], nil
	}
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			if !strings.Contains(x, "{{capture") {
				return x, nil
			}
			if m := captureRE.FindStringSubmatch(x); m != nil && m[0] == x && m[1] != "" {
				s, err := one(m[2])
				if err != nil {
					return nil, err
				}
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("capture_int %q: %w", s, err)
				}
				return n, nil
			}
			var firstErr error
			res := captureRE.ReplaceAllStringFunc(x, func(tok string) string {
				m := captureRE.FindStringSubmatch(tok)
				s, err := one(m[2])
				if err != nil && firstErr == nil {
					firstErr = err
				}
				return s
			})
			return res, firstErr
		case []any:
			for i := range x {
				nv, err := walk(x[i])
				if err != nil {
					return nil, err
				}
				x[i] = nv
			}
			return x, nil
		case map[string]any:
			for k := range x {
				nv, err := walk(x[k])
				if err != nil {
					return nil, err
				}
				x[k] = nv
			}
			return x, nil
		}
		return v, nil
	}
	out, err := walk(generic)
	if err != nil {
		return spec, err
	}
	raw, err = json.Marshal(out)
	if err != nil {
		return spec, err
	}
	var res Response
	if err := json.Unmarshal(raw, &res); err != nil {
		return spec, err
	}
	return res, nil
}
