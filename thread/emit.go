package thread

// Emit sends a notification to every subscriber of the thread, in the thread's single notification
// order (e.g. mcpServer/startupStatus/updated from the MCP layer).
func (t *Thread) Emit(method string, params any) { t.emit(method, params) }
