package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"appserver/stopwatch"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrToolTimeout matches (errors.Is) the error of a tool call whose tool_timeout_sec ran out.
var ErrToolTimeout = errors.New("MCP tool call timed out")

// TimeoutError reports a tools/call that used up its tool timeout (paused time excluded).
type TimeoutError struct {
	Server, Tool string
	Timeout      time.Duration
}

// Error words the timeout like the reference (whose cause names the tools/call wait; the budget
// is the server's tool_timeout_sec).
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("tool call failed for `%s/%s`\n\nCaused by:\n    timed out awaiting tools/call after %dms",
		e.Server, e.Tool, e.Timeout.Milliseconds())
}

// Is makes errors.Is(err, ErrToolTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrToolTimeout }

// CallResult is an MCP tools/call result.
type CallResult struct {
	Content           json.RawMessage // JSON array of MCP content blocks (never null)
	StructuredContent json.RawMessage // nil when absent
	IsError           bool
	Meta              json.RawMessage // the result's _meta; nil when absent
	Duration          time.Duration   // wall time of the request
}

// CallTool calls tool on server with the JSON object args (null/empty = {}) and meta as the
// request's _meta (e.g. callId, x-codex-turn-metadata). The server's ToolTimeout is a stopwatch
// registered with ctl (nil = an unmanaged stopwatch), so a paused controller freezes it; it is
// also paused while an Elicit hook call of this server is pending. Errors: unknown/not ready
// server, *TimeoutError, ctx's error, or the failure of the request (e.g. the server crashed).
func (m *Manager) CallTool(ctx context.Context, ctl *stopwatch.Controller, server, tool string, args json.RawMessage, meta map[string]any) (CallResult, error) {
	s, sess, err := m.ready(server)
	if err != nil {
		return CallResult{}, err
	}
	var arguments any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if !json.Valid(args) {
			return CallResult{}, fmt.Errorf("invalid arguments for MCP tool `%s`: not valid JSON", tool)
		}
		arguments = args
	}
	timeout := s.cfg.toolTimeout()
	var sw *stopwatch.Stopwatch
	release := func() {}
	if ctl != nil {
		sw, release = ctl.NewStopwatch(timeout, stopwatch.WithClock(m.hooks.Clock))
	} else {
		sw = stopwatch.New(timeout, stopwatch.WithClock(m.hooks.Clock))
	}
	defer release()
	defer sw.Stop()

	token := m.tokens.Add(1)
	callID, _ := meta["callId"].(string)
	s.mu.Lock()
	s.calls[token] = sw
	if s.elicits > 0 {
		sw.Pause()
	}
	s.progress[token] = callID
	raw := s.raw
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, token)
		delete(s.progress, token)
		s.mu.Unlock()
	}()

	params := &mcp.CallToolParams{Name: tool, Arguments: arguments, Meta: mcp.Meta{}}
	maps.Copy(params.Meta, meta)
	params.SetProgressToken(int(token))

	cctx, cancel := sw.Context(ctx)
	defer cancel()
	start := time.Now()
	res, err := sess.CallTool(cctx, params)
	dur := time.Since(start)
	// Progress the server sent before its result is reported before the call ends (a closing
	// Manager drops what is left).
	raw.awaitProgress(ctx, m.ctx.Done(), token)
	if err != nil {
		switch {
		case errors.Is(context.Cause(cctx), stopwatch.ErrExpired):
			return CallResult{Duration: dur}, &TimeoutError{Server: server, Tool: tool, Timeout: timeout}
		case ctx.Err() != nil:
			return CallResult{Duration: dur}, ctx.Err()
		}
		return CallResult{Duration: dur}, fmt.Errorf("tool call failed for `%s/%s`\n\nCaused by:\n    %w", server, tool, err)
	}
	out := CallResult{IsError: res.IsError, Duration: dur, Content: json.RawMessage(`[]`)}
	if len(res.Content) > 0 {
		if b, err := json.Marshal(res.Content); err == nil {
			out.Content = b
		}
	}
	if res.StructuredContent != nil {
		out.StructuredContent, _ = json.Marshal(res.StructuredContent)
	}
	if len(res.Meta) > 0 {
		out.Meta, _ = json.Marshal(res.Meta)
	}
	return out, nil
}

// FormatForModel renders a tool result as the function_call_output content array the reference
// sends: a "Wall time: N seconds\nOutput:" input_text, then one item per content block (text →
// input_text, image → input_image data URL, anything else → its JSON as input_text). Without
// content blocks the structured content (if any) is sent as JSON text.
func FormatForModel(res CallResult, wall time.Duration) json.RawMessage {
	items := []map[string]string{textItem(fmt.Sprintf("Wall time: %.4f seconds\nOutput:", wall.Seconds()))}
	var blocks []json.RawMessage
	_ = json.Unmarshal(res.Content, &blocks)
	for _, b := range blocks {
		var c struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}
		if json.Unmarshal(b, &c) != nil {
			continue
		}
		switch c.Type {
		case "text":
			items = append(items, textItem(c.Text))
		case "image":
			items = append(items, map[string]string{"type": "input_image", "image_url": "data:" + c.MimeType + ";base64," + c.Data})
		default:
			items = append(items, textItem(string(b)))
		}
	}
	if len(blocks) == 0 && len(res.StructuredContent) > 0 {
		items = append(items, textItem(string(res.StructuredContent)))
	}
	b, _ := json.Marshal(items)
	return b
}

// FormatErrorForModel renders a failed call (an error from CallTool) as the reference does: the
// wall-time item, then "tool call error: <err>".
func FormatErrorForModel(err error, wall time.Duration) json.RawMessage {
	b, _ := json.Marshal([]map[string]string{
		textItem(fmt.Sprintf("Wall time: %.4f seconds\nOutput:", wall.Seconds())),
		textItem("tool call error: " + err.Error()),
	})
	return b
}

func textItem(text string) map[string]string {
	return map[string]string{"type": "input_text", "text": text}
}
