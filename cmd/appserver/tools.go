package main

import (
	"appserver/config"
	"appserver/thread"
)

// toolsFor wires the tools offered to the model. TODO(lead): exec, apply_patch, MCP.
func toolsFor(_ *config.Config) thread.ToolProvider {
	return nil
}
