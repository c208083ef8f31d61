// Package subagent runs the sub-agents a thread's model starts with multi_agent_v1's tools: each agent is a
// real child thread (its own turns with the model, its own rollout) that the parent's tools message, wait
// for and close. Control is the core, independent of the tool shapes, so another tool family (the
// reference's multi-agent v2 `collaboration` namespace) can drive the same agents.
package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"appserver/model"
	protocol "appserver/protocol/v2"
	"appserver/stopwatch"
	"appserver/thread"
)

// Kind is the state an agent is in, in the model's spelling.
type Kind string

// The agent states.
const (
	PendingInit Kind = "pending_init" // started or resumed, no turn running yet
	Running     Kind = "running"
	Interrupted Kind = "interrupted"
	Completed   Kind = "completed"
	Errored     Kind = "errored"
	Shutdown    Kind = "shutdown"
	NotFound    Kind = "not_found"
)

// Status is an agent's state; Message is a completed turn's last agent message or a failed turn's error.
type Status struct {
	Kind    Kind
	Message *string
}

// Final reports whether a wait ends on this status: anything but a pending or running agent.
func (s Status) Final() bool { return s.Kind != PendingInit && s.Kind != Running }

// ErrNotFound is an agent id this thread has not started (or that was closed).
var ErrNotFound = errors.New("agent not found")

// Options are what a Control needs from the server.
type Options struct {
	Manager *thread.Manager
	// Clock times waits (nil: the real clock).
	Clock stopwatch.Clock
}

// Agent is one sub-agent of a thread.
type Agent struct {
	ID       string
	Nickname string
	// Path is the agent's task path (`/root/worker`) when the collaboration tools started it, else "".
	Path string

	mu     sync.Mutex
	child  *thread.Thread    // nil once closed
	turn   *thread.Turn      // the last turn started
	told   bool              // the parent was told how the first task ended
	notes  []json.RawMessage // send_message notes (agent_message items) for an idle agent, given with its next task
	status Status
}

// Status returns the agent's current state.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// Control holds the sub-agents of one parent thread; they close with it.
type Control struct {
	opts   Options
	parent *thread.Thread
	depth  int

	mu      sync.Mutex
	agents  map[string]*Agent // open agents
	closed  map[string]*Agent // closed agents (resumable)
	changed chan struct{}     // closed and replaced whenever an agent's status changes
	names   []string          // nicknames not handed out yet
	order   []*Agent          // open agents in the order they started
	mail    uint64            // updates for the collaboration tools' wait_agent (finished turns, messages)
	seen    uint64            // the updates a wait_agent has already reported
}

type controlKey struct{}

// For returns the Control of parent, creating it on first use; closing the parent closes its agents.
func For(parent *thread.Thread, o Options) *Control {
	return parent.AttachOnce(controlKey{}, func() any {
		if o.Clock == nil {
			o.Clock = stopwatch.RealClock()
		}
		c := &Control{opts: o, parent: parent, depth: Depth(parent), agents: map[string]*Agent{},
			closed: map[string]*Agent{}, changed: make(chan struct{}), names: shuffledNames()}
		parent.OnClose(c.closeAll)
		return c
	}).(*Control)
}

// Depth is a thread's distance from the root thread of its session (0 for a user's thread).
func Depth(t *thread.Thread) int {
	if sa := t.Info().Source.SubAgent; sa != nil && sa.ThreadSpawn != nil {
		return int(sa.ThreadSpawn.Depth)
	}
	return 0
}

// SpawnRequest is a new agent's first input and its model overrides.
type SpawnRequest struct {
	Input []protocol.UserInput
	// Messages stand in for input without a userMessage item (the collaboration tools' agent_message).
	Messages []json.RawMessage
	Model    string
	Effort   *protocol.ReasoningEffort
	// ParentTurnID is the parent's turn that spawns the agent (its first turn's root).
	ParentTurnID string
	// Fork starts the agent with a copy of the parent's conversation so far.
	Fork bool
	// Path is the agent's task path for the collaboration tools ("" for a multi_agent_v1 agent).
	Path string
	// ID is the agent's thread id, chosen ahead to announce the spawn before the thread exists ("": new).
	ID string
}

// Spawn starts a child thread and then its first turn; announce (if not nil) runs in between with the
// agent and its status then (pending_init), as the reference reports the spawn before the agent runs.
func (c *Control) Spawn(req SpawnRequest, announce func(*Agent, Status)) (*Agent, error) {
	nick := c.nickname()
	child, err := c.opts.Manager.StartSubAgent(c.parent, thread.SubAgentOptions{Nickname: nick, Depth: c.depth + 1,
		Model: req.Model, Effort: req.Effort, ForkHistory: req.Fork, AgentPath: req.Path, ID: req.ID})
	if err != nil {
		return nil, err
	}
	a := &Agent{ID: child.ID, Nickname: nick, Path: req.Path, child: child, status: Status{Kind: PendingInit}}
	c.mu.Lock()
	c.agents[a.ID] = a
	c.order = append(c.order, a)
	c.mu.Unlock()
	warnUnknownModel(child)
	if announce != nil {
		announce(a, a.Status())
	}
	c.startTurn(a, child, req.Input, req.Messages, req.ParentTurnID)
	return a, nil
}

// Nickname is the nickname of an agent this thread started, open or closed ("" when unknown).
func (c *Control) Nickname(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.agents[id]; ok {
		return a.Nickname
	}
	if a, ok := c.closed[id]; ok {
		return a.Nickname
	}
	return ""
}

// Child returns the thread of an open agent.
func (c *Control) Child(id string) (*thread.Thread, bool) {
	a, ok := c.agent(id)
	if !ok {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.child, a.child != nil
}

func (c *Control) agent(id string) (*Agent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.agents[id]
	return a, ok
}

// startTurn gives the agent's thread the input (and the items that stand in for input, see
// thread.TurnOptions.Messages): a new turn, or more input for the running one.
func (c *Control) startTurn(a *Agent, child *thread.Thread, input []protocol.UserInput, msgs []json.RawMessage, parentTurn string) string {
	tn, folded := child.BeginTurn(input, thread.TurnOptions{ParentTurnID: parentTurn, Messages: msgs})
	if folded {
		tn.RestartStream()
		return tn.PublicID()
	}
	a.mu.Lock()
	a.turn = tn
	a.mu.Unlock()
	c.setStatus(a, Status{Kind: Running})
	tn.Run()
	go c.watch(a, child, tn) // ends with the turn, which ends at the latest when the child thread closes
	return tn.PublicID()
}

// watch records the outcome of the agent's turn when it ends.
func (c *Control) watch(a *Agent, child *thread.Thread, tn *thread.Turn) {
	<-tn.Done()
	st := Status{Kind: Errored}
	turns := child.TurnsSnapshot()
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].ID != tn.ID {
			continue
		}
		st = turnStatus(turns[i])
		break
	}
	a.mu.Lock()
	last := a.child == child && a.turn == tn
	first := last && !a.told && a.Path == ""
	if first {
		a.told = true
	}
	a.mu.Unlock()
	if last && a.Path != "" {
		c.reportFinished(a, tn, st)
		return
	}
	if first {
		// The parent hears how its agent's first task ended, before its next model request (as the
		// reference tells it once); queued before a wait can see the status, so the request after the
		// wait carries it.
		c.parent.QueueUserContext(notification(a.ID, st))
	}
	if last {
		c.setStatus(a, st)
	}
}

// notification is the message that tells a parent how an agent's task ended, in the reference's form.
func notification(id string, st Status) string {
	b, _ := json.Marshal(struct {
		AgentPath string `json:"agent_path"`
		Status    Status `json:"status"`
	}{id, st})
	return "<subagent_notification>\n" + string(b) + "\n</subagent_notification>"
}

// turnStatus is the agent status a finished turn leaves.
func turnStatus(t protocol.Turn) Status {
	switch t.Status {
	case protocol.TurnStatusCompleted:
		var msg *string
		for i := len(t.Items) - 1; i >= 0; i-- {
			if am, ok := t.Items[i].Value.(protocol.ThreadItemAgentMessage); ok {
				text := am.Text
				msg = &text
				break
			}
		}
		return Status{Kind: Completed, Message: msg}
	case protocol.TurnStatusInterrupted:
		return Status{Kind: Interrupted}
	default:
		var msg *string
		if t.Error != nil {
			m := t.Error.Message
			msg = &m
		}
		return Status{Kind: Errored, Message: msg}
	}
}

func (c *Control) setStatus(a *Agent, st Status) { c.setStatusMail(a, st, false) }

// setStatusMail records an agent's status and wakes the waits; mail also counts an update for wait_agent.
func (c *Control) setStatusMail(a *Agent, st Status, mail bool) {
	a.mu.Lock()
	a.status = st
	a.mu.Unlock()
	c.mu.Lock()
	if mail {
		c.mail++
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Send gives an open agent more input and returns the turn that takes it with the agent's status before;
// interrupt first ends the agent's running turn (waiting for its end within ctx). parentTurn is the
// parent's turn that sent it (the new turn's root); announce (if not nil) runs just before the input is
// handed over.
func (c *Control) Send(ctx context.Context, id string, input []protocol.UserInput, interrupt bool, parentTurn string, announce func(before Status)) (string, Status, error) {
	return c.send(ctx, id, input, nil, interrupt, parentTurn, announce)
}

// send is Send with items that stand in for input (agent_message items).
func (c *Control) send(ctx context.Context, id string, input []protocol.UserInput, msgs []json.RawMessage, interrupt bool, parentTurn string, announce func(before Status)) (string, Status, error) {
	a, ok := c.agent(id)
	if !ok {
		return "", Status{Kind: NotFound}, ErrNotFound
	}
	a.mu.Lock()
	child, before := a.child, a.status
	a.mu.Unlock()
	if child == nil {
		return "", Status{Kind: NotFound}, ErrNotFound
	}
	if tn := child.ActiveTurn(); interrupt && tn != nil {
		a.mu.Lock()
		a.turn = nil // the interrupted turn's end is not the agent's outcome: the new input's turn is
		a.mu.Unlock()
		_ = child.Interrupt(tn.ID)
		select {
		case <-tn.Done():
		case <-ctx.Done():
			return "", before, ctx.Err()
		}
	}
	if child.ActiveTurn() == nil {
		warnUnknownModel(child)
	}
	if announce != nil {
		announce(before)
	}
	return c.startTurn(a, child, input, msgs, parentTurn), before, nil
}

// Wait returns the final statuses among the targets as soon as one is final, or timedOut after timeout
// (timed on the Control's clock, armed before started runs); unknown ids are final (not_found) at once.
// ctx ends the wait early with its error (the parent's turn interrupted).
func (c *Control) Wait(ctx context.Context, ids []string, timeout time.Duration, started func()) (statuses map[string]Status, timedOut bool, err error) {
	fired := make(chan struct{})
	timer := c.opts.Clock.AfterFunc(timeout, func() { close(fired) })
	defer timer.Stop()
	if started != nil {
		started()
	}
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		out := map[string]Status{}
		for _, id := range ids {
			a, ok := c.agent(id)
			if !ok {
				out[id] = Status{Kind: NotFound}
				continue
			}
			if st := a.Status(); st.Final() {
				out[id] = st
			}
		}
		if len(out) > 0 {
			return out, false, nil
		}
		select {
		case <-changed:
		case <-fired:
			return map[string]Status{}, true, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Close shuts an open agent's thread down (interrupting its turn) and returns its status before.
func (c *Control) Close(id string) (Status, error) {
	c.mu.Lock()
	a, ok := c.agents[id]
	if ok {
		delete(c.agents, id)
		c.closed[id] = a
		for i, o := range c.order {
			if o == a {
				c.order = append(c.order[:i:i], c.order[i+1:]...)
				break
			}
		}
	}
	c.mu.Unlock()
	if !ok {
		return Status{Kind: NotFound}, ErrNotFound
	}
	a.mu.Lock()
	child, before := a.child, a.status
	a.child = nil
	a.mu.Unlock()
	if child != nil {
		c.opts.Manager.CloseSubAgent(child.ID)
	}
	c.setStatus(a, Status{Kind: Shutdown})
	return before, nil
}

// Resume loads a closed agent's thread again (pending_init: it runs no turn until it gets input).
func (c *Control) Resume(ctx context.Context, id string) (Status, error) {
	c.mu.Lock()
	a, open := c.agents[id]
	closedA, wasClosed := c.closed[id]
	c.mu.Unlock()
	if open {
		return a.Status(), nil
	}
	if !wasClosed {
		return Status{Kind: NotFound}, ErrNotFound
	}
	child, err := c.opts.Manager.ResumeSubAgent(ctx, c.parent, id)
	if err != nil {
		return Status{}, fmt.Errorf("resume agent %s: %w", id, err)
	}
	c.mu.Lock()
	delete(c.closed, id)
	c.agents[id] = closedA
	c.order = append(c.order, closedA)
	c.mu.Unlock()
	closedA.mu.Lock()
	closedA.child = child
	closedA.mu.Unlock()
	st := Status{Kind: PendingInit}
	c.setStatus(closedA, st)
	return st, nil
}

// closeAll closes every open agent (the parent thread is closing).
func (c *Control) closeAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.agents))
	for id := range c.agents {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		_, _ = c.Close(id)
	}
}

// nickname hands out a name not used yet by this thread's agents (numbered once all are taken).
func (c *Control) nickname() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.agents) + len(c.closed)
	if len(c.names) == 0 {
		return fmt.Sprintf("Agent %d", n+1)
	}
	name := c.names[0]
	c.names = c.names[1:]
	return name
}

func shuffledNames() []string {
	names := []string{"Bohr", "Babbage", "Curie", "Darwin", "Euler", "Faraday", "Gauss", "Hopper", "Hypatia", "Kepler",
		"Lovelace", "Maxwell", "Noether", "Pascal", "Ramanujan", "Shannon", "Tesla", "Turing", "Volta", "Wu"}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}

// warnUnknownModel tells the agent's audience, as turn/start tells a client, that a turn about to start runs
// on a model without catalogue metadata.
func warnUnknownModel(child *thread.Thread) {
	if m := child.Settings().Model; m != "" {
		if _, known := model.LookupModel(m); !known {
			child.Warn(model.UnknownModelWarning(m))
		}
	}
}
