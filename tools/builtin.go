package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// toolSwitches are the tools a thread's effective configuration turns on, read the way the reference
// reads them: `[features]` flags, `tools.<name>.enabled` tables, `web_search` and the model's catalogue entry.
type toolSwitches struct {
	commands, applyPatch         bool
	updatePlan, requestUserInput bool
	viewImage, goals             bool
	webSearch                    string // "disabled", "cached" or "live"
	searchImages                 bool   // web_search with search_content_types text and image
	// codeMode nests the tools in a JavaScript exec tool (a code-mode model: in an additional_tools
	// item; features.code_mode_only: exec and wait in the plain tools); codeModeAlongside adds exec and
	// wait before the usual tools (features.code_mode).
	codeMode, codeModePlain, codeModeAlongside bool
}

func switchesOf(cfg *config.Config, modelID string) toolSwitches {
	// The command tools are exec_command and write_stdin whenever features.shell_tool is on: like the
	// reference, features.unified_exec = false does not bring back a classic shell tool. apply_patch is
	// offered by model, to catalogue models only (the reference has no include_apply_patch_tool: the key
	// is ignored); a model outside the catalogue is answered "unsupported custom tool call".
	entry, known := model.LookupModel(modelID)
	sw := toolSwitches{
		commands:         featureOr(cfg, "shell_tool", true),
		applyPatch:       known,
		updatePlan:       rawBool(cfg, false, "tools", "update_plan", "enabled"),
		requestUserInput: rawBool(cfg, true, "tools", "experimental_request_user_input", "enabled"),
		viewImage:        featureOr(cfg, "view_image", true),
		goals:            featureOr(cfg, "goals", true),
		webSearch:        "cached",
	}
	if v, ok := cfg.Scalar("web_search").(string); ok && v != "" {
		sw.webSearch = v
	}
	// The catalogue's web_search_tool_type is text_and_image for every entry; a code-mode model gets no
	// hosted web_search from the reference whatever web_search says.
	sw.searchImages = known
	if entry.CodeMode {
		sw.webSearch = "disabled"
		sw.codeMode = true
	} else if featureOr(cfg, "code_mode_only", false) {
		// A model outside code mode gets it from the feature flags, in the plain tools array (its
		// hosted web_search stays); for a code-mode model the flags change nothing.
		sw.codeMode, sw.codeModePlain = true, true
	} else if featureOr(cfg, "code_mode", false) {
		sw.codeModeAlongside = true
	}
	return sw
}

func featureOr(cfg *config.Config, name string, def bool) bool {
	if v, ok := cfg.Features[name]; ok {
		return v
	}
	if _, known := config.DefaultFeatures[name]; known {
		return config.DefaultFeatures[name]
	}
	return def
}

// rawBool reads a boolean at path in the raw configuration (def when absent or not a boolean).
func rawBool(cfg *config.Config, def bool, path ...string) bool {
	if b, ok := cfg.Scalar(path...).(bool); ok {
		return b
	}
	return def
}

// functionSpec renders a Responses function tool in the reference's shape (strict false, closed objects).
func functionSpec(name, description string, properties map[string]any, required []string) json.RawMessage {
	if required == nil {
		required = []string{}
	}
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Strict      bool   `json:"strict"`
		Parameters  any    `json:"parameters"`
	}{"function", name, description, false, map[string]any{
		"type": "object", "properties": properties, "required": required, "additionalProperties": false,
	}})
	return b
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// ---- update_plan ----

type planSet struct{}

var planSpec = sync.OnceValue(func() json.RawMessage {
	return functionSpec("update_plan",
		"Record or revise your step-by-step plan for the task. Send the whole plan each time; keep at most one step in_progress.",
		map[string]any{
			"explanation": str("Optional note on why the plan changed."),
			"plan": map[string]any{"type": "array", "description": "Every step of the plan, in order.", "items": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"step", "status"},
				"properties": map[string]any{
					"step":   str("What the step does."),
					"status": map[string]any{"type": "string", "description": "Where the step stands.", "enum": []string{"pending", "in_progress", "completed"}},
				},
			}},
		}, []string{"plan"})
})

func (planSet) Specs() []json.RawMessage { return []json.RawMessage{planSpec()} }

func (planSet) Call(_ context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "update_plan" || call.Namespace != "" {
		return nil, false
	}
	var args struct {
		Explanation *string `json:"explanation"`
		Plan        []struct {
			Step   string `json:"step"`
			Status string `json:"status"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return thread.FunctionOutput(call.CallID, "failed to parse function arguments: "+err.Error()), true
	}
	plan := make([]protocol.TurnPlanStep, 0, len(args.Plan))
	for _, st := range args.Plan {
		status := protocol.TurnPlanStepStatusPending
		switch st.Status {
		case "in_progress":
			status = protocol.TurnPlanStepStatusInProgress
		case "completed":
			status = protocol.TurnPlanStepStatusCompleted
		}
		plan = append(plan, protocol.TurnPlanStep{Step: st.Step, Status: status})
	}
	tc.Emit(protocol.NotifyTurnPlanUpdated, protocol.TurnPlanUpdatedNotification{ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), Explanation: args.Explanation, Plan: plan})
	return thread.FunctionOutput(call.CallID, "Plan updated"), true
}

// ---- request_user_input ----

type userInputSet struct{}

var userInputSpec = sync.OnceValue(func() json.RawMessage {
	return functionSpec("request_user_input",
		"Ask the user one to three short multiple-choice questions and wait for the answers. Only works in Plan mode.",
		map[string]any{
			"questions": map[string]any{"type": "array", "description": "The questions, ideally one and never more than three.", "items": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"id", "header", "question", "options"},
				"properties": map[string]any{
					"id":       str("Stable snake_case key for the answer."),
					"header":   str("Short label for the UI, 12 characters at most."),
					"question": str("The question, in one sentence."),
					"options": map[string]any{"type": "array", "description": "Two or three exclusive choices, the recommended one first; the client adds a free-form choice itself.", "items": map[string]any{
						"type": "object", "additionalProperties": false, "required": []string{"label", "description"},
						"properties": map[string]any{"label": str("Choice label, one to five words."), "description": str("One sentence on what choosing it means.")},
					}},
				},
			}},
		}, []string{"questions"})
})

func (userInputSet) Specs() []json.RawMessage { return []json.RawMessage{userInputSpec()} }

func (userInputSet) Call(ctx context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "request_user_input" || call.Namespace != "" {
		return nil, false
	}
	if tc.Settings.Mode != protocol.ModeKindPlan {
		// The reference's answer outside Plan mode (the model keys on it).
		return thread.FunctionOutput(call.CallID, "request_user_input is unavailable in Default mode"), true
	}
	var args struct {
		Questions []protocol.ToolRequestUserInputQuestion `json:"questions"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return thread.FunctionOutput(call.CallID, "failed to parse function arguments: "+err.Error()), true
	}
	for i := range args.Questions {
		if args.Questions[i].Options == nil {
			args.Questions[i].Options = []protocol.ToolRequestUserInputOption{}
		}
		args.Questions[i].IsOther = ptr(true)
		if args.Questions[i].IsSecret == nil {
			args.Questions[i].IsSecret = ptr(false)
		}
	}
	tc.Thread.SetWaitingOnUserInput(true)
	raw, err := tc.Request(ctx, protocol.ServerRequestItemToolRequestUserInput, protocol.ToolRequestUserInputParams{
		ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: call.CallID, Questions: args.Questions, IsBlocking: true,
	})
	tc.Thread.SetWaitingOnUserInput(false)
	if err != nil {
		return thread.FunctionOutput(call.CallID, "request_user_input was not answered: "+err.Error()), true
	}
	var resp protocol.ToolRequestUserInputResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return thread.FunctionOutput(call.CallID, "request_user_input got an invalid answer: "+err.Error()), true
	}
	if resp.Answers == nil {
		resp.Answers = map[string]protocol.ToolRequestUserInputAnswer{}
	}
	out, _ := json.Marshal(map[string]any{"answers": resp.Answers})
	return thread.FunctionOutput(call.CallID, string(out)), true
}

// ---- view_image ----

type viewImageSet struct{}

var viewImageSpec = sync.OnceValue(func() json.RawMessage {
	return functionSpec("view_image",
		"Look at an image file on the local disk (a screenshot, a diagram, a rendered chart).",
		map[string]any{"path": str("Path of the image file, absolute or relative to the working directory.")}, []string{"path"})
})

func (viewImageSet) Specs() []json.RawMessage { return []json.RawMessage{viewImageSpec()} }

func (viewImageSet) Call(_ context.Context, tc *thread.ToolContext, call thread.ToolCall) (json.RawMessage, bool) {
	if call.Name != "view_image" || call.Namespace != "" {
		return nil, false
	}
	var args struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args.Path == "" {
		return thread.FunctionOutput(call.CallID, "view_image needs a `path`"), true
	}
	path := args.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(tc.Settings.Cwd, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return thread.FunctionOutput(call.CallID, fmt.Sprintf("unable to locate image at `%s`: %v", path, err)), true
	}
	mt := http.DetectContentType(data)
	if !strings.HasPrefix(mt, "image/") {
		if byExt := mime.TypeByExtension(filepath.Ext(path)); strings.HasPrefix(byExt, "image/") {
			mt = byExt
		} else {
			return thread.FunctionOutput(call.CallID, fmt.Sprintf("`%s` is not an image file", path)), true
		}
	}
	now := time.Now().UnixMilli()
	item := protocol.ThreadItemImageView{ID: call.CallID, Path: protocol.LegacyAppPathString(path), StartedAtMs: &now}
	tc.ItemStarted(protocol.ThreadItem{Value: item})
	done := time.Now().UnixMilli()
	item.CompletedAtMs = &done
	tc.ItemCompleted(protocol.ThreadItem{Value: item})
	type inputImage struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
		Detail   string `json:"detail"`
	}
	detail, _ := model.RecordedImageDetail(tc.Settings.Model, "")
	content, _ := json.Marshal([]inputImage{{Type: "input_image", ImageURL: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data), Detail: detail}})
	return thread.FunctionOutputRaw(call.CallID, content), true
}

// ---- web_search (hosted by the provider) ----

type webSearchSet struct{ live, images bool }

// webSearchSpecs are the four possible specs, by external_web_access and search_content_types.
var webSearchSpecs = sync.OnceValue(func() (specs [2][2][]json.RawMessage) {
	for i, live := range []bool{false, true} {
		for j, images := range []bool{false, true} {
			spec := map[string]any{"type": "web_search", "external_web_access": live}
			if images {
				spec["search_content_types"] = []string{"text", "image"}
			}
			b, _ := json.Marshal(spec)
			specs[i][j] = []json.RawMessage{b}
		}
	}
	return specs
})

func (w webSearchSet) Specs() []json.RawMessage {
	i, j := 0, 0
	if w.live {
		i = 1
	}
	if w.images {
		j = 1
	}
	return webSearchSpecs()[i][j]
}

func (webSearchSet) Call(context.Context, *thread.ToolContext, thread.ToolCall) (json.RawMessage, bool) {
	return nil, false // the provider runs it; its web_search_call items become webSearch items
}
