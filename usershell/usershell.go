// Package usershell runs the command a user types with `!` in a thread: in the thread's working
// directory with the user's login shell, streamed as a commandExecution item of source userShell, and
// rendered as a transcript the model reads on its next turn.
package usershell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"appserver/execmgr"
	protocol "appserver/protocol/v2"
	"appserver/thread"
)

// Shell is the user's shell ($SHELL, else /bin/bash).
func Shell() string {
	if s := os.Getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/bash"
}

// Run returns the task body that runs command; timeout (0 = none) kills it when it runs too long.
// shellWrap (may be nil) rewrites the login-shell argv to use the thread's shell snapshot.
func Run(exec *execmgr.Manager, command string, timeout time.Duration, shellWrap func(argv, env []string) ([]string, []string)) thread.TaskBody {
	return func(ctx context.Context, tc *thread.ToolContext) []json.RawMessage {
		cwd := tc.Settings.Cwd
		argv := []string{Shell(), "-lc", command}
		item := protocol.ThreadItemCommandExecution{
			ID: uuid.NewString(), Command: execmgr.ShellJoin(argv), Cwd: protocol.LegacyAppPathString(cwd),
			Status: protocol.CommandExecutionStatusInProgress, Source: ptr(protocol.CommandExecutionSourceUserShell),
			CommandActions: []protocol.CommandAction{{Value: protocol.CommandActionUnknown{Command: command}}},
			StartedAtMs:    ptr(time.Now().UnixMilli()),
		}
		tc.ItemStarted(protocol.ThreadItem{Value: item})
		var mu sync.Mutex // deltas from stdout and stderr readers go out one at a time
		runCtx := ctx
		if timeout > 0 {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		start := time.Now()
		p, err := exec.Spawn(runCtx, execmgr.SpawnRequest{Argv: argv, ShellWrap: shellWrap, Cwd: cwd, Env: append(os.Environ(), "CODEX_THREAD_ID="+tc.ThreadID()),
			OnOutput: func(_ execmgr.Stream, chunk []byte) {
				mu.Lock()
				defer mu.Unlock()
				tc.Emit(protocol.NotifyItemCommandExecutionOutputDelta, protocol.CommandExecutionOutputDeltaNotification{
					ThreadID: tc.ThreadID(), TurnID: tc.TurnID(), ItemID: item.ID, Delta: string(chunk)})
			}})
		code, output := -1, ""
		if err == nil {
			code, err = p.Wait(runCtx)
			if err != nil { // timed out or the turn was interrupted: the command's process group dies
				p.Kill()
				<-p.Done()
				code = 124
				if ctx.Err() != nil {
					code = -1
				}
			}
			output = p.Output()
		}
		if err != nil && output == "" {
			output = err.Error()
		}
		dur := time.Since(start)
		item.Status = protocol.CommandExecutionStatusCompleted
		if code != 0 {
			item.Status = protocol.CommandExecutionStatusFailed
		}
		item.ExitCode = ptr(int32(code))
		if output != "" {
			item.AggregatedOutput = ptr(output)
		}
		item.DurationMs = ptr(dur.Milliseconds())
		item.CompletedAtMs = ptr(time.Now().UnixMilli())
		tc.ItemCompleted(protocol.ThreadItem{Value: item})
		return []json.RawMessage{Transcript(command, code, dur, output)}
	}
}

// Transcript is the user message that tells the model what the user ran and what came out.
func Transcript(command string, exitCode int, d time.Duration, output string) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, "<user_shell_command>\n<command>\n%s\n</command>\n<result>\nExit code: %d\nDuration: %.4f seconds\nOutput:\n%s\n</result>\n</user_shell_command>",
		command, exitCode, d.Seconds(), output)
	raw, _ := json.Marshal(map[string]any{
		"type": "message", "id": "msg_" + uuid.Must(uuid.NewV7()).String(), "role": "user",
		"content": []map[string]string{{"type": "input_text", "text": b.String()}},
	})
	return raw
}

func ptr[T any](v T) *T { return &v }
