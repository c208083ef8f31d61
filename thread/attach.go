package thread

// Attach stores per-thread state owned by another package (tool caches, MCP connections) under key.
func (t *Thread) Attach(key, value any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.attached == nil {
		t.attached = map[any]any{}
	}
	t.attached[key] = value
}

// Attached returns the value stored under key, or nil.
func (t *Thread) Attached(key any) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attached[key]
}

// AttachOnce returns the value under key, creating it with mk on first use; mk runs without the
// thread's lock (it may call OnClose) and at most once per key.
func (t *Thread) AttachOnce(key any, mk func() any) any {
	t.attachMu.Lock()
	defer t.attachMu.Unlock()
	if v := t.Attached(key); v != nil {
		return v
	}
	v := mk()
	t.Attach(key, v)
	return v
}

// OnClose registers cleanup that runs when the thread is unloaded or the server ends (last registered
// runs first).
func (t *Thread) OnClose(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closers = append(t.closers, f)
}

func (t *Thread) runClosers() {
	t.mu.Lock()
	fs := t.closers
	t.closers = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
