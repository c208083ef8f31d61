// Command mcptestserver is the stdio MCP server of the integration tests (see package mcptest).
package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"appserver/internal/mcptest"
)

func main() {
	if dir := os.Getenv(mcptest.EnvPidDir); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o644)
	}
	switch os.Getenv(mcptest.EnvMode) {
	case "exit":
		os.Exit(3)
	case "noinit":
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return
	}
	if gate := os.Getenv(mcptest.EnvGate); gate != "" {
		for {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	name := os.Getenv(mcptest.EnvName)
	if name == "" {
		name = "test-mcp"
	}
	_ = mcptest.NewServer(name, os.Getenv(mcptest.EnvPause)).Run(context.Background(), &mcp.StdioTransport{})
}
