package thread

import (
	"appserver/model"
	protocol "appserver/protocol/v2"
)

// multiAgentRoleText tells the model, in our own words, its place among agents: the reference sends it in the
// initial context of a thread started on a multi-agent v2 model, wrapped in <multi_agent_role> on the models
// with collaboration-mode instructions (gpt-6.x) and bare on the others, and again when a turn switches to a
// model of the other form. The text names the agent tools the turn is offered: the `collaboration`
// namespace (the catalogue's multi-agent v2 code-mode models, or features.multi_agent_v2), package
// subagent's multi_agent_v1 tools (a model outside the catalogue), or none.
func multiAgentRoleText(s Settings, role agentRole) string {
	if role == roleChild {
		return wrapRole(s, childRoleText)
	}
	body := "You are `/root`, the primary agent of this session, working on the user's goals. No tools to start, " +
		"message or wait for other agents are offered in this session: carry out the work yourself with the tools you have."
	switch {
	case collaborationOffered(s):
		body = "You are `/root`, the primary agent of this session, working on the user's goals. The `collaboration` " +
			"tools let you start agents on sub-tasks (each gets a task path under yours, such as `/root/fix_tests`, and " +
			"can start agents of its own), pass them notes (send_message), give them further tasks (followup_task), " +
			"wait for their news, stop them and list them. Their final answers and messages reach you as messages " +
			"framed with their type, recipient and sender. Delegate only as the delegation mode allows."
	case agentToolsOffered(s):
		body = "You are `/root`, the primary agent of this session, working on the user's goals. The multi_agent_v1 " +
			"tools let you start sub-agents, give them work, wait for them and close them; delegate only as the " +
			"delegation mode allows."
	}
	return wrapRole(s, body)
}

// wrapRole wraps an agent role text in <multi_agent_role> on the models with collaboration-mode instructions.
func wrapRole(s Settings, body string) string {
	if model.ModeInstructions(s.Model) {
		return "<multi_agent_role>" + body + "</multi_agent_role>"
	}
	return body
}

// agentRole is the role a thread's context tells the model it has among agents.
type agentRole uint8

const (
	roleNone  agentRole = iota // not a multi-agent v2 thread: no role told
	roleRoot                   // a user's thread (or a multi_agent_v1 agent): `/root`
	roleChild                  // an agent the collaboration tools spawned
)

// role is the agent role of the thread's context (fixed when the thread is created or loaded).
func (t *Thread) role() agentRole {
	switch {
	case !t.multiAgentV2:
		return roleNone
	case t.collabChild:
		return roleChild
	}
	return roleRoot
}

// collabChildSource reports whether a session source is an agent of the collaboration tools (spawned
// under a task path).
func collabChildSource(src protocol.SessionSource) bool {
	sa := src.SubAgent
	return sa != nil && sa.ThreadSpawn != nil && sa.ThreadSpawn.AgentPath != nil && *sa.ThreadSpawn.AgentPath != ""
}

// childRoleText tells an agent the collaboration tools spawned, in our own words, its place among agents.
const childRoleText = "You are an agent of a team working on the user's goals, started by another agent (your parent) " +
	"to carry out a task. Your task path and your parent's appear in the messages that reach you, framed with their " +
	"type (NEW_TASK, MESSAGE or FINAL_ANSWER), recipient and sender; a NEW_TASK is work for you, a MESSAGE a note. " +
	"The `collaboration` tools let you start agents of your own on sub-tasks, pass them notes (send_message, which " +
	"people may read: keep it legible), give them further tasks (followup_task), wait for their news, stop them and " +
	"list them; call them directly, not from inside `exec`. Every agent works in the same workspace and directory, " +
	"so what one changes the others see at once. Your final answer goes back to your parent as a message and may be " +
	"read by people: make it complete and legible."

// spawnedChildText opens a forked agent's own part of a history it inherited, in our own words.
const spawnedChildText = "You are now an agent started by the agent whose conversation comes above: that conversation " +
	"is context you inherited. Your own role and task follow; the identities, tasks and approvals above belong to the " +
	"agents before you. Tool calls above are a record only: their sessions and processes are not yours. Report your " +
	"result to your parent."

// multiAgentModeText tells the model, in our own words, when it may delegate to sub-agents (turn/start's
// multiAgentMode; explicit requests only unless proactive).
func multiAgentModeText(s Settings) string {
	body := "Do not delegate to sub-agents on your own initiative: only when the user, or AGENTS.md or skill " +
		"instructions that apply, explicitly ask for sub-agents, delegation or parallel agent work."
	if s.MultiAgentMode != nil && s.MultiAgentMode.Name == protocol.MultiAgentModeProactive {
		body = "You may delegate well-defined sub-tasks to sub-agents on your own initiative when that is faster " +
			"or more thorough, whenever tools for it are offered."
	}
	return "<multi_agent_mode>" + body + "</multi_agent_mode>"
}

// modelModeText is the collaboration mode message a model change sends (see modelChangeContext): the mode's
// instructions on a model that has them, else an empty <collaboration_mode>, as the reference's.
func modelModeText(s Settings) string {
	if model.ModeInstructions(s.Model) {
		return collaborationModeText(s)
	}
	return "<collaboration_mode></collaboration_mode>"
}

// modeAndAgentContext is what an initial context tells of the collaboration mode and the agent's role, as the
// reference's: the mode (with the permissions) on the models with collaboration-mode instructions, and in a
// multi-agent v2 thread the role and the delegation mode.
func modeAndAgentContext(s Settings, role agentRole) (mode string, agent []string) {
	if model.ModeInstructions(s.Model) {
		mode = collaborationModeText(s)
	}
	if role != roleNone {
		agent = []string{multiAgentRoleText(s, role), multiAgentModeText(s)}
	}
	return mode, agent
}

// modelChangeContext is what a turn on another model than the last one tells of the collaboration mode and
// the agent's role, as the reference does: the mode when either model has collaboration-mode instructions
// (empty on a model without), and, in a multi-agent v2 thread, the role and the delegation mode again when
// the role's form changes with the model.
func modelChangeContext(prev string, s Settings, role agentRole) (mode string, agent []string) {
	prevMI, nextMI := model.ModeInstructions(prev), model.ModeInstructions(s.Model)
	if prevMI || nextMI {
		mode = modelModeText(s)
	}
	if role != roleNone && prevMI != nextMI {
		agent = []string{multiAgentRoleText(s, role), multiAgentModeText(s)}
	}
	return mode, agent
}

// agentToolsOffered reports whether a turn with these settings is offered the multi_agent_v1 tools, as
// package subagent decides it for a root thread (a model outside the catalogue or gpt-5.5, the catalogue's
// model outside code mode, which finds them through tool search; features.multi_agent on,
// features.multi_agent_v2 off).
func agentToolsOffered(s Settings) bool {
	if m, known := model.LookupModel(s.Model); known && m.CodeMode {
		return false
	}
	on := func(name string, def bool) bool {
		if s.Config != nil {
			if v, ok := s.Config.Features[name]; ok {
				return v
			}
		}
		return def
	}
	return on("multi_agent", true) && !on("multi_agent_v2", false)
}

// collaborationOffered reports whether a turn with these settings is offered the `collaboration` namespace,
// as package subagent decides it: features.multi_agent on and a multi-agent v2 code-mode catalogue model, or
// a model outside the catalogue with features.multi_agent_v2 on.
func collaborationOffered(s Settings) bool {
	on := func(name string, def bool) bool {
		if s.Config != nil {
			if v, ok := s.Config.Features[name]; ok {
				return v
			}
		}
		return def
	}
	if !on("multi_agent", true) {
		return false
	}
	if m, known := model.LookupModel(s.Model); known {
		return m.CodeMode && model.MultiAgentV2(s.Model)
	}
	return on("multi_agent_v2", false)
}
