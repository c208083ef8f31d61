package thread

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"appserver/compaction"
	"appserver/model"
	protocol "appserver/protocol/v2"
)

// ConverseOptions describe a conversation a task turn holds with the model apart from the thread's
// history (a reviewer sub-agent).
type ConverseOptions struct {
	// Developer is the conversation's first message: it takes the place of the base instructions.
	Developer string
	// Input follows the environment context (the skills list, if any, comes before it).
	Input []json.RawMessage
	// Tools filters the thread's tool sets for the conversation (nil: no tools are offered).
	Tools func([]ToolSet) []ToolSet
	// Settings are the conversation's settings (zero: the turn's).
	Settings *Settings
	// Subagent names the sub-agent kind the requests declare ("review"); the conversation then gets
	// its own thread id in them, with this thread as its parent, and TurnID as its turn.
	Subagent string
	TurnID   string
}

// ErrConverseSteps ends a conversation whose model kept calling tools past the step bound.
var ErrConverseSteps = errors.New("the model did not answer within the step bound")

// maxConverseSteps bounds the model requests of one conversation.
const maxConverseSteps = 500

// Converse runs a model conversation for a task turn: requests go out with the options' tool sets and
// their calls run (reporting their items on this turn) until the model answers without a tool call;
// the result is the text of that answer. The conversation is not the thread's: its items join neither
// the history nor the rollout, and its token usage is not announced. The model's messages are
// announced as started items only: the caller reports what the answer means.
func (tc *ToolContext) Converse(ctx context.Context, o ConverseOptions) (string, error) {
	t, tn := tc.Thread, tc.Turn
	s := tc.Settings
	if o.Settings != nil {
		s = *o.Settings
	}
	sub := &ToolContext{Thread: t, Turn: tn, Settings: s, Log: tc.Log}
	client, err := t.mgr.modelClient(s.EffectiveConfig(t.mgr.Config()), s.ModelProvider)
	if err != nil {
		return "", err
	}
	var sets []ToolSet
	if o.Tools != nil && t.mgr.deps.Tools != nil {
		sets = o.Tools(t.mgr.deps.Tools(t, s))
	}
	conv := []json.RawMessage{messageItem("developer", o.Developer)}
	if t.mgr.deps.SkillsPrompt != nil {
		if text := t.mgr.deps.SkillsPrompt(s.Cwd); text != "" {
			conv = append(conv, messageItem("developer", text))
		}
	}
	conv = append(conv, messageItem("user", environmentContext(s, time.Now())))
	tn.mu.Lock()
	convID := tn.subThread // the announced sub-agent turn's thread, if any
	tn.mu.Unlock()
	if convID == "" {
		convID = uuid.Must(uuid.NewV7()).String()
	}
	var sr *subRollout
	if o.Subagent != "" {
		turnID := o.TurnID
		if turnID == "" {
			turnID = tn.ID
		}
		sr = newSubRollout(tn, convID, o.Subagent, turnID, o.Developer, s)
		sr.items(conv[1:]...) // the developer message is the file's base instructions
		sr.turnContext(s)
		sr.items(o.Input...)
	}
	conv = append(conv, o.Input...)
	var answer string
	// Deferred, so that the file is ended and closed however the conversation returns (also by a panic).
	defer func() { sr.end(answer, ctx.Err() != nil) }()
	answer, err = converse(ctx, tn, sub, client, s, sets, conv, convID, o, sr)
	return answer, err
}

// converse is Converse's request loop; sr (nil: none) records the conversation's items.
func converse(ctx context.Context, tn *Turn, sub *ToolContext, client *model.Client, s Settings, sets []ToolSet,
	conv []json.RawMessage, convID string, o ConverseOptions, sr *subRollout) (string, error) {
	t := tn.thread
	for step := 0; ; step++ {
		if step == maxConverseSteps {
			return "", ErrConverseSteps
		}
		req := tn.buildRequest(s, sets)
		req.Input = append(leadItems(sets), conv...)
		req.Refresh = nil
		if o.Subagent != "" {
			subagentRequest(req, t.ID, tn.ID, convID, o)
		}
		comp, err := client.Stream(ctx, req, func(ev model.Event) {
			if add, ok := ev.(model.ItemAddedEvent); ok && add.Type == "message" {
				id := add.ID
				if id == "" {
					id = "msg_" + uuid.Must(uuid.NewV7()).String()
				}
				sub.ItemStarted(protocol.ThreadItem{Value: protocol.ThreadItemAgentMessage{ID: id, StartedAtMs: ptr(time.Now().UnixMilli())}})
			}
		})
		if err != nil {
			return "", err
		}
		conv = append(conv, comp.Items...)
		sr.items(comp.Items...)
		calls := toolCalls(comp.Items)
		if len(calls) == 0 {
			return compaction.OutputText(comp.Items), nil
		}
		for _, call := range calls {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			out := outputItems(dispatchTool(ctx, sub, sets, call))
			conv = append(conv, out...)
			sr.items(out...)
		}
	}
}

// subagentRequest makes req a sub-agent's: its own thread id (convID) and window, this thread as its
// parent and the task turn as its parent and root turn.
func subagentRequest(req *model.Request, parentID, parentTurn, convID string, o ConverseOptions) {
	window := convID + ":0"
	turnID := o.TurnID
	if turnID == "" {
		turnID = parentTurn
	}
	var meta map[string]any
	if json.Unmarshal([]byte(req.Headers["x-codex-turn-metadata"]), &meta) != nil {
		meta = map[string]any{}
	}
	meta["thread_id"], meta["turn_id"], meta["window_id"] = convID, turnID, window
	meta["parent_thread_id"], meta["parent_turn_id"], meta["root_turn_id"] = parentID, parentTurn, parentTurn
	meta["subagent_kind"], meta["thread_source"] = o.Subagent, "subagent"
	metaJSON, _ := json.Marshal(meta)
	for k, v := range map[string]string{
		"thread_id": convID, "x-codex-window-id": window, "turn_id": turnID, "root_turn_id": parentTurn,
		"parent_turn_id": parentTurn, "x-codex-parent-thread-id": parentID, "x-openai-subagent": o.Subagent,
		"x-codex-turn-metadata": string(metaJSON),
	} {
		req.ClientMetadata[k] = v
	}
	for k, v := range map[string]string{
		"thread-id": convID, "x-client-request-id": convID, "x-codex-window-id": window,
		"x-codex-parent-thread-id": parentID, "x-openai-subagent": o.Subagent, "x-codex-turn-metadata": string(metaJSON),
	} {
		req.Headers[k] = v
	}
}

// MessageItem is a Responses API message item with the given role and text.
func MessageItem(role, text string) json.RawMessage { return messageItem(role, text) }
