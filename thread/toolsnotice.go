package thread

// The `<tools>` notes tell the model which namespaces hold tools it finds with tool_search, as the reference
// does: the opening one ends a context's first developer message (a new thread's first turn, a compaction)
// and names the namespaces of that moment, MCP servers still starting included only once they are ready; a
// later turn that has namespaces its model's last request had not (a server became ready since) names them
// in a developer message of their own before the turn's input.

// deferredNamespaces finds a turn's DeferredTools set and the namespaces it names.
func deferredNamespaces(sets []ToolSet) (DeferredTools, []string) {
	for _, set := range sets {
		if dt, ok := set.(DeferredTools); ok {
			return dt, dt.DeferredNamespaces()
		}
	}
	return nil, nil
}

func nameSet(names []string) map[string]bool {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		seen[n] = true
	}
	return seen
}

// toolSets builds the sets a turn with settings s offers now (none without a provider).
func (t *Thread) toolSets(s Settings) []ToolSet {
	if t.mgr.deps.Tools == nil {
		return nil
	}
	return t.mgr.deps.Tools(t, s)
}

// openingToolsNotice is the `<tools>` note of a context's opening ("" when nothing is deferred); the model is
// then told of its namespaces.
func (t *Thread) openingToolsNotice(s Settings) string {
	dt, names := deferredNamespaces(t.toolSets(s))
	t.mu.Lock()
	t.deferredSeen = nameSet(names)
	t.mu.Unlock()
	if dt == nil || len(names) == 0 {
		return ""
	}
	return dt.ToolsNotice(names, false)
}

// tellDeferredAdded appends the note naming the namespaces the model's last request did not have (nothing
// on a thread that does not know what that request had: it learns it now).
func (t *Thread) tellDeferredAdded(s Settings) {
	dt, names := deferredNamespaces(t.toolSets(s))
	t.mu.Lock()
	seen := t.deferredSeen
	t.deferredSeen = nameSet(names)
	t.mu.Unlock()
	if dt == nil || seen == nil {
		return
	}
	var added []string
	for _, n := range names {
		if !seen[n] {
			added = append(added, n)
		}
	}
	if len(added) > 0 {
		t.appendHistory(messageItem("developer", dt.ToolsNotice(added, true)))
	}
}

// noteDeferred remembers the namespaces a request's sets offer through tool_search.
func (t *Thread) noteDeferred(sets []ToolSet) {
	_, names := deferredNamespaces(sets)
	t.mu.Lock()
	t.deferredSeen = nameSet(names)
	t.mu.Unlock()
}
