package thread

import (
	"bytes"
	"encoding/json"
	"strings"

	"appserver/model"
	protocol "appserver/protocol/v2"
)

// personalitySection is the part of appserver's base instructions that gives catalogue models their manner of
// speaking; personality "none" leaves it out (friendly and pragmatic no longer select different styles, as in the
// reference).
const personalitySection = `

# Personality

Be a steady, candid collaborator: direct and warm, never flattering. Say plainly when you disagree or when something will not work, and why. Prefer plain words and concrete examples to jargon; keep answers as short as the question allows, and do not pad them with apologies or summaries of what you did not do.`

// modelInstructionsOpen and modelInstructionsClose wrap the developer message that replaces the base
// instructions mid-thread (the reference's tag, our own wording).
const (
	modelInstructionsOpen  = "<model_instructions>\nFrom now on, these instructions replace your earlier base instructions:\n\n"
	modelInstructionsClose = "\n</model_instructions>"
)

// defaultInstructions returns appserver's base instructions for model mdl and personality p: catalogue models
// get the personality section unless p is "none"; other models never do (the reference ignores the
// personality for models it has no metadata for).
func defaultInstructions(mdl string, p *protocol.Personality) string {
	if _, known := model.LookupModel(mdl); !known || (p != nil && *p == protocol.PersonalityNone) {
		return baseInstructions
	}
	return baseInstructions + personalitySection
}

// isDefaultInstructions reports whether text is one of appserver's own base instructions (not a client's).
func isDefaultInstructions(text string) bool {
	return text == baseInstructions || text == baseInstructions+personalitySection
}

// instructions returns the base instructions the settings call for: the client's own, else ours for the model
// and personality.
func (s Settings) instructions() string {
	if s.BaseInstructions != "" {
		return s.BaseInstructions
	}
	return defaultInstructions(s.Model, s.Personality)
}

// swapInstructions records the instructions s calls for as the ones the model was told and returns the
// developer message that tells it, or nil when they did not change (a turn after a personality change tells the
// model its new instructions, as the reference does).
func (t *Thread) swapInstructions(s Settings) json.RawMessage {
	want := s.instructions()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.told == want {
		return nil
	}
	t.told = want
	return messageItem("developer", modelInstructionsOpen+want+modelInstructionsClose)
}

// modelSwitchOpen and modelSwitchClose wrap the developer message that gives a model the thread switched to
// its base instructions (the reference's tag, our own wording).
const (
	modelSwitchOpen  = "<model_switch>\nThe conversation so far was held with another model. From here on, follow these instructions:\n\n"
	modelSwitchClose = "\n</model_switch>"
)

// currentModelLine opens a <model_instructions> message that follows a switch between catalogue models.
const currentModelLine = "The current model is "

// swapModel records s's model as the one the model was last told about and, when a turn on another model came
// before, returns the developer message that gives the new model the base instructions s calls for (they are
// then the ones it was told); nil on the first turn and when the model did not change. As the reference does,
// a switch to a catalogue model in a thread started on a catalogue model with a multi-agent version (see
// Thread.namesModel) names the new one in a <model_instructions> message; any other switch sends a
// <model_switch> message.
func (t *Thread) swapModel(s Settings) json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.toldModel
	t.toldModel = s.Model
	if prev == "" || prev == s.Model {
		return nil
	}
	want := s.instructions()
	if want == "" {
		return nil
	}
	t.told = want
	_, nextKnown := model.LookupModel(s.Model)
	if t.namesModel && nextKnown {
		const tag = "<model_instructions>\n"
		return messageItem("developer", tag+currentModelLine+s.Model+".\n"+strings.TrimPrefix(modelInstructionsOpen, tag)+want+modelInstructionsClose)
	}
	return messageItem("developer", modelSwitchOpen+want+modelSwitchClose)
}

// instructionsIn returns the base instructions a <model_instructions> or <model_switch> message of ours gives.
func instructionsIn(text string) (string, bool) {
	const tag = "<model_instructions>\n"
	if rest, ok := strings.CutPrefix(text, tag+currentModelLine); ok {
		if _, after, found := strings.Cut(rest, "\n"); found {
			text = tag + after
		}
	}
	for _, w := range [][2]string{{modelInstructionsOpen, modelInstructionsClose}, {modelSwitchOpen, modelSwitchClose}} {
		if strings.HasPrefix(text, w[0]) && strings.HasSuffix(text, w[1]) && len(text) >= len(w[0])+len(w[1]) {
			return text[len(w[0]) : len(text)-len(w[1])], true
		}
	}
	return "", false
}

// toldFromHistory finds, in a stored history, the last instructions and permissions text the model was given:
// the latest model-instructions or model-switch message (base when there is none) and the latest permissions message ("" when
// there is none), so a resumed thread tells the model only what changed since.
func toldFromHistory(history []json.RawMessage, base string) (instr, perms string) {
	instr = base
	foundInstr := false
	for i := len(history) - 1; i >= 0 && (!foundInstr || perms == ""); i-- {
		it := history[i]
		if !bytes.Contains(it, []byte(`"developer"`)) {
			continue
		}
		var msg struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(it, &msg) != nil || msg.Role != "developer" || len(msg.Content) == 0 {
			continue
		}
		text := msg.Content[0].Text
		switch {
		case !foundInstr && (strings.HasPrefix(text, "<model_instructions>") || strings.HasPrefix(text, "<model_switch>")):
			instr, foundInstr = instructionsIn(text)
			if !foundInstr {
				instr = base
			}
		case perms == "":
			// the permissions may share their message with instructions, skills and the collaboration mode
			for _, part := range msg.Content {
				if strings.HasPrefix(part.Text, "<permissions instructions>") {
					perms = part.Text
				}
			}
		}
	}
	return instr, perms
}
