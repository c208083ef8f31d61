package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// addThreadExtraRoutes routes thread/timeline/list, thread/prepareApprovedPlan and the Guardian
// (auto-reviewer) methods thread/guardianReview and thread/approveGuardianDeniedAction.
func (s *Server) addThreadExtraRoutes(r map[string]route) {
	r[protocol.MethodThreadTimelineList] = handle(s.threadTimelineList)
	r[protocol.MethodThreadPrepareApprovedPlan] = handle(s.threadPrepareApprovedPlan)
	r[protocol.MethodThreadGuardianReview] = handle(s.threadGuardianReview)
	r[protocol.MethodThreadApproveGuardianDeniedAction] = handle(s.threadApproveGuardianDeniedAction)
}

// timelineUnavailable is the reference's answer for a thread it cannot read a timeline of and for a
// cursor it cannot parse.
func timelineUnavailable() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: protocol.MethodThreadTimelineList + " is not supported yet"}
}

// timelineCursor is the opaque nextCursor of thread/timeline/list.
type timelineCursor struct {
	ThreadID string `json:"threadId"`
	Position uint64 `json:"position"`
}

func (s *Server) threadTimelineList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadTimelineListParams) (any, error) {
	if err := validateThreadID(p.ThreadID); err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	var turns []protocol.Turn
	if t, ok := s.threads.Get(p.ThreadID); ok {
		turns = t.TurnsSnapshot()
	} else if th, err := s.threads.ReadStored(p.ThreadID, true); err == nil {
		turns = th.Turns
	} else {
		return nil, timelineUnavailable()
	}
	var before uint64
	if p.Cursor != nil {
		var c timelineCursor
		if err := json.Unmarshal([]byte(*p.Cursor), &c); err != nil || c.ThreadID != p.ThreadID || c.Position == 0 {
			return nil, timelineUnavailable()
		}
		before = c.Position
	}
	limit := 0
	if p.Limit != nil {
		limit = int(*p.Limit)
	}
	page, next := thread.TimelinePage(thread.Timeline(turns), before, limit)
	resp := protocol.ThreadTimelineListResponse{Data: page}
	if next > 0 {
		b, _ := json.Marshal(timelineCursor{ThreadID: p.ThreadID, Position: next})
		resp.NextCursor = ptr(string(b))
	}
	return resp, nil
}

func (s *Server) threadPrepareApprovedPlan(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadPrepareApprovedPlanParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	return protocol.ThreadPrepareApprovedPlanResponse{Prompt: t.PrepareApprovedPlan(p.Markdown)}, nil
}

// threadGuardianReview checks, as the reference does, that the thread ends with a completed tool call
// the auto-reviewer could assess. appserver has no auto-reviewer model, so a reviewable call is
// answered with an error that says so.
func (s *Server) threadGuardianReview(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadGuardianReviewParams) (any, error) {
	t, err := s.loadedThread(p.ThreadID)
	if err != nil {
		return nil, err
	}
	turns := t.TurnsSnapshot()
	if len(turns) == 0 {
		return nil, jsonrpc.InvalidRequest("expected a final plaintext exec_command, apply_patch, request_permissions, or MCP call")
	}
	items := turns[len(turns)-1].Items
	if len(items) > 0 && reviewableItem(items[len(items)-1]) {
		return nil, jsonrpc.InvalidRequest("Guardian review is not available in appserver: it has no auto-reviewer")
	}
	return nil, jsonrpc.InvalidRequest("expected a completed plaintext exec_command, apply_patch, request_permissions, or MCP call with a nonempty call ID")
}

func reviewableItem(it protocol.ThreadItem) bool {
	switch v := it.Value.(type) {
	case protocol.ThreadItemCommandExecution:
		return v.Status == protocol.CommandExecutionStatusCompleted
	case protocol.ThreadItemFileChange:
		return v.Status == protocol.PatchApplyStatusCompleted
	case protocol.ThreadItemMcpToolCall:
		return v.Status == protocol.McpToolCallStatusCompleted
	}
	return false
}

// guardianEvent is the part of a GuardianAssessmentEvent appserver checks: the fields without defaults.
type guardianEvent struct {
	ID     *string          `json:"id"`
	Status *string          `json:"status"`
	Action *json.RawMessage `json:"action"`
}

// guardianStatuses are the GuardianAssessmentStatus values.
var guardianStatuses = map[string]bool{"in_progress": true, "approved": true, "denied": true, "timed_out": true, "aborted": true}

// threadApproveGuardianDeniedAction validates the denial event with the reference's messages and
// accepts it for a loaded thread, as the reference does. appserver runs no auto-reviewer, so no later
// review exists for the approval to short-circuit: accepting it changes nothing.
func (s *Server) threadApproveGuardianDeniedAction(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.ThreadApproveGuardianDeniedActionParams) (any, error) {
	if _, err := parseGuardianEvent(p.Event); err != nil {
		return nil, jsonrpc.InvalidRequest("invalid Guardian denial event: " + err.Error())
	}
	if _, err := s.loadedThread(p.ThreadID); err != nil {
		return nil, err
	}
	return protocol.ThreadApproveGuardianDeniedActionResponse{}, nil
}

func parseGuardianEvent(raw json.RawMessage) (guardianEvent, error) {
	var ev guardianEvent
	trimmed := strings.TrimSpace(string(raw))
	switch {
	case trimmed == "" || trimmed == "null":
		return ev, fmt.Errorf("invalid type: null, expected struct GuardianAssessmentEvent")
	case !strings.HasPrefix(trimmed, "{"):
		var v any
		_ = json.Unmarshal(raw, &v)
		return ev, fmt.Errorf("invalid type: %s, expected struct GuardianAssessmentEvent", serdeKind(v))
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, err
	}
	switch {
	case ev.ID == nil:
		return ev, fmt.Errorf("missing field `id`")
	case ev.Status == nil:
		return ev, fmt.Errorf("missing field `status`")
	case !guardianStatuses[*ev.Status]:
		return ev, fmt.Errorf("unknown variant `%s`, expected one of `in_progress`, `approved`, `denied`, `timed_out`, `aborted`", *ev.Status)
	case ev.Action == nil:
		return ev, fmt.Errorf("missing field `action`")
	}
	return ev, nil
}

// serdeKind names a JSON value the way serde's "invalid type" errors do.
func serdeKind(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean `%v`", x)
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("integer `%d`", int64(x))
		}
		return fmt.Sprintf("floating point `%v`", x)
	case []any:
		return "sequence"
	}
	return "value"
}
