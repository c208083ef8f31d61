package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// The agent tree of the collaboration tools: agents are addressed by task path, the root thread being
// RootPath and each agent its parent's path plus its task name.

// RootPath is the task path of a session's root thread.
const RootPath = "/root"

// ErrRoot is an operation the root agent cannot be the target of.
var ErrRoot = errors.New("the root agent cannot be the target")

// Path is the task path of the Control's thread: RootPath for a user's thread, else the path it was
// spawned under.
func (c *Control) Path() string { return threadPath(c.parent) }

func threadPath(t *thread.Thread) string {
	if sa := t.Info().Source.SubAgent; sa != nil && sa.ThreadSpawn != nil {
		if p := sa.ThreadSpawn.AgentPath; p != nil && *p != "" {
			return *p
		}
		return RootPath + "/" + t.ID
	}
	return RootPath
}

// root is the Control of the session's root thread (this one when its parent of record is not loaded).
func (c *Control) root() *Control {
	t := c.parent
	for i := 0; i < 64; i++ { // bounded: a source chain never loops, but a broken one must not wedge
		sa := t.Info().Source.SubAgent
		if sa == nil || sa.ThreadSpawn == nil {
			break
		}
		pt, ok := c.opts.Manager.Get(string(sa.ThreadSpawn.ParentThreadID))
		if !ok {
			break
		}
		t = pt
	}
	if t == c.parent {
		return c
	}
	return For(t, c.opts)
}

// existing is the Control already attached to a thread (nil: the thread started no agents).
func existing(t *thread.Thread) *Control {
	c, _ := t.Attached(controlKey{}).(*Control)
	return c
}

// Located is an agent found in the tree with the Control that owns it; Agent is nil for the root.
type Located struct {
	Owner *Control
	Agent *Agent
	Path  string
}

// walk calls f for every open agent of the tree under c, depth first in spawn order.
func (c *Control) walk(f func(owner *Control, a *Agent) bool) bool {
	c.mu.Lock()
	agents := append([]*Agent(nil), c.order...)
	c.mu.Unlock()
	for _, a := range agents {
		if !f(c, a) {
			return false
		}
		a.mu.Lock()
		child := a.child
		a.mu.Unlock()
		if child == nil {
			continue
		}
		if sub := existing(child); sub != nil && !sub.walk(f) {
			return false
		}
	}
	return true
}

// Resolve finds the live agent a target names: a path relative to this thread's (`worker`), a canonical
// path (`/root/worker`) or an agent's thread id.
func (c *Control) Resolve(target string) (Located, bool) {
	root := c.root()
	path := target
	if !strings.HasPrefix(target, "/") {
		path = c.Path() + "/" + target
	}
	if target == RootPath || path == RootPath {
		return Located{Owner: root, Path: RootPath}, true
	}
	var found Located
	ok := false
	root.walk(func(owner *Control, a *Agent) bool {
		if a.Path == path || a.ID == target {
			found, ok = Located{Owner: owner, Agent: a, Path: a.Path}, true
			return false
		}
		return true
	})
	return found, ok
}

// Listed is one live agent of list_agents.
type Listed struct {
	Path   string
	Status Status
}

// List returns the live agents of the session's tree (the root first) whose path is prefix or under it
// (every agent for "").
func (c *Control) List(prefix string) []Listed {
	root := c.root()
	prefix = strings.TrimSuffix(prefix, "/")
	match := func(p string) bool { return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/") }
	var out []Listed
	if match(RootPath) {
		st := Status{Kind: PendingInit}
		if root.parent.ActiveTurn() != nil {
			st = Status{Kind: Running}
		}
		out = append(out, Listed{RootPath, st})
	}
	root.walk(func(_ *Control, a *Agent) bool {
		if match(a.Path) {
			out = append(out, Listed{a.Path, a.Status()})
		}
		return true
	})
	return out
}

// Message queues an agent_message item for the located agent's next model request (in its running turn,
// else its next one) without starting a turn, and counts it as an update for that agent's own wait_agent.
func (l Located) Message(item json.RawMessage) error {
	var t *thread.Thread
	var owner *Control
	if l.Agent == nil {
		t, owner = l.Owner.parent, l.Owner
	} else {
		a := l.Agent
		a.mu.Lock()
		t = a.child
		idle := t != nil && t.ActiveTurn() == nil
		if idle {
			// Kept for the agent's next task, ahead of it, as the reference orders them.
			a.notes = append(a.notes, item)
		}
		a.mu.Unlock()
		if t == nil {
			return ErrNotFound
		}
		owner = existing(t)
		if idle {
			if owner != nil {
				owner.post()
			}
			return nil
		}
	}
	t.QueueContext(item)
	if owner != nil {
		owner.post()
	}
	return nil
}

// Interrupt ends the located agent's running turn (waiting for its end within ctx) and returns its status
// before.
func (l Located) Interrupt(ctx context.Context) (Status, error) {
	if l.Agent == nil {
		return Status{}, ErrRoot
	}
	a := l.Agent
	a.mu.Lock()
	child, before := a.child, a.status
	a.mu.Unlock()
	if child == nil {
		return Status{}, ErrNotFound
	}
	if tn := child.ActiveTurn(); tn != nil {
		_ = child.Interrupt(tn.ID)
		select {
		case <-tn.Done():
		case <-ctx.Done():
			return before, ctx.Err()
		}
	}
	return before, nil
}

// takeNotes returns (and forgets) the notes kept for an idle agent's next task.
func (a *Agent) takeNotes() []json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.notes
	a.notes = nil
	return n
}

// post counts an update for wait_agent and wakes the waits.
func (c *Control) post() {
	c.mu.Lock()
	c.mail++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// WaitEnd is how a WaitMail ended.
type WaitEnd int

// The ends of a WaitMail.
const (
	MailArrived WaitEnd = iota
	MailTimedOut
	MailSteered
)

// WaitMail waits for an update from this thread's agents not yet reported by an earlier WaitMail (one of
// them finished a turn, or a message arrived), at most timeout on the Control's clock (armed before
// started runs); new input for the waiting turn (steered) ends it too, ctx with its error.
func (c *Control) WaitMail(ctx context.Context, timeout time.Duration, steered <-chan struct{}, started func()) (WaitEnd, error) {
	fired := make(chan struct{})
	timer := c.opts.Clock.AfterFunc(timeout, func() { close(fired) })
	defer timer.Stop()
	if started != nil {
		started()
	}
	for {
		c.mu.Lock()
		changed, fresh := c.changed, c.mail > c.seen
		c.seen = c.mail
		c.mu.Unlock()
		if fresh {
			return MailArrived, nil
		}
		select {
		case <-changed:
		case <-fired:
			return MailTimedOut, nil
		case <-steered:
			return MailSteered, nil
		case <-ctx.Done():
			return MailTimedOut, ctx.Err()
		}
	}
}

// reportFinished tells a collaboration agent's parent how a turn of the agent ended: a completed or
// failed turn's answer is queued for the parent's next request, shown to its client as a
// subAgentActivity item of the parent's running turn, and counted as an update for wait_agent; an
// interrupted turn only changes the status.
func (c *Control) reportFinished(a *Agent, tn *thread.Turn, st Status) {
	if st.Kind != Completed && st.Kind != Errored {
		c.setStatus(a, st)
		return
	}
	answer := ""
	if st.Message != nil {
		answer = *st.Message
	}
	c.parent.QueueContext(AgentMessage("FINAL_ANSWER", c.Path(), a.Path, answer))
	if pt := c.parent.ActiveTurn(); pt != nil {
		now := time.Now().UnixMilli()
		it := protocol.ThreadItemSubAgentActivity{ID: "subagent-completed-" + tn.PublicID(), Kind: protocol.SubAgentActivityKindCompleted,
			AgentThreadID: a.ID, AgentPath: a.Path, StartedAtMs: &now}
		started := protocol.ThreadItem{Value: it}
		it.CompletedAtMs = &now
		pt.ReportItem(started, protocol.ThreadItem{Value: it})
	}
	c.setStatusMail(a, st, true)
}

// Envelope is how the collaboration tools hand one agent's words to another, in the reference's framing:
// the kind (NEW_TASK, MESSAGE or FINAL_ANSWER), the recipient's and the sender's task paths, the text.
func Envelope(kind, recipient, sender, payload string) string {
	return "Message Type: " + kind + "\nTask name: " + recipient + "\nSender: " + sender + "\nPayload:\n" + payload
}

// agentMessageItem is the reference's agent_message input item, in its field order.
type agentMessageItem struct {
	Type      string             `json:"type"`
	ID        string             `json:"id"`
	Author    string             `json:"author"`
	Recipient string             `json:"recipient"`
	Content   []agentMessagePart `json:"content"`
}

type agentMessagePart struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Encrypted string `json:"encrypted_content,omitempty"`
}

// AgentMessage is the model-input item that hands one agent's words to another, as the reference builds
// it: an agent_message from sender to recipient whose text is the Envelope; a task or a note (NEW_TASK,
// MESSAGE) carries its payload apart, as encrypted_content after the framing, a FINAL_ANSWER inline.
func AgentMessage(kind, recipient, sender, payload string) json.RawMessage {
	parts := []agentMessagePart{{Type: "input_text", Text: Envelope(kind, recipient, sender, payload)}}
	if kind != "FINAL_ANSWER" {
		parts = []agentMessagePart{{Type: "input_text", Text: Envelope(kind, recipient, sender, "")},
			{Type: "encrypted_content", Encrypted: payload}}
	}
	b, _ := json.Marshal(agentMessageItem{Type: "agent_message", ID: "amsg_" + uuid.Must(uuid.NewV7()).String(),
		Author: sender, Recipient: recipient, Content: parts})
	return b
}
