package thread

import (
	"errors"
	"time"

	protocol "appserver/protocol/v2"
)

// ErrGoalExists is returned when a goal is created while an unfinished one exists.
var ErrGoalExists = errors.New("cannot create a new goal because this thread already has an unfinished goal; use update_goal to change its status")

// ErrNoGoal is returned when a goal is updated on a thread that has none.
var ErrNoGoal = errors.New("this thread has no goal")

// goalKey holds, in Thread.attached, the thread's goal (*protocol.ThreadGoal).
type goalKey struct{}

// Goal returns a copy of the thread's goal, if it has one.
func (t *Thread) Goal() (protocol.ThreadGoal, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.attached[goalKey{}].(*protocol.ThreadGoal)
	if !ok || g == nil {
		return protocol.ThreadGoal{}, false
	}
	return *g, true
}

// GoalChange is a change to a thread's goal; nil fields are left as they are.
type GoalChange struct {
	Objective   *string
	Status      *protocol.ThreadGoalStatus
	TokenBudget *int64
	// Replace starts a new goal (objective required) instead of updating the current one.
	Replace bool
}

// SetGoal creates or updates the thread's goal and announces it with thread/goal/updated (turnID, when
// set, names the turn whose tool changed it).
func (t *Thread) SetGoal(c GoalChange, turnID *string) (protocol.ThreadGoal, error) {
	now := time.Now().Unix()
	t.mu.Lock()
	if t.attached == nil {
		t.attached = map[any]any{}
	}
	cur, _ := t.attached[goalKey{}].(*protocol.ThreadGoal)
	var g protocol.ThreadGoal
	switch {
	case c.Replace || cur == nil:
		if c.Replace && cur != nil && cur.Status != protocol.ThreadGoalStatusComplete && turnID != nil {
			t.mu.Unlock()
			return protocol.ThreadGoal{}, ErrGoalExists
		}
		if c.Objective == nil {
			t.mu.Unlock()
			return protocol.ThreadGoal{}, ErrNoGoal
		}
		g = protocol.ThreadGoal{ThreadID: t.ID, Objective: *c.Objective, Status: protocol.ThreadGoalStatusActive, CreatedAt: now, UpdatedAt: now}
	default:
		g = *cur
		g.UpdatedAt = now
	}
	if c.Objective != nil {
		g.Objective = *c.Objective
	}
	if c.Status != nil {
		g.Status = *c.Status
	}
	if c.TokenBudget != nil {
		g.TokenBudget = c.TokenBudget
	}
	stored := g
	t.attached[goalKey{}] = &stored
	t.mu.Unlock()
	t.emit(protocol.NotifyThreadGoalUpdated, protocol.ThreadGoalUpdatedNotification{ThreadID: t.ID, TurnID: turnID, Goal: g})
	return g, nil
}

// ClearGoal removes the thread's goal, announcing thread/goal/cleared; it reports whether there was one.
func (t *Thread) ClearGoal() bool {
	t.mu.Lock()
	_, had := t.attached[goalKey{}].(*protocol.ThreadGoal)
	delete(t.attached, goalKey{})
	t.mu.Unlock()
	if had {
		t.emit(protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.ID})
	}
	return had
}
