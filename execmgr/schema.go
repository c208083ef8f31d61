package execmgr

import (
	"bytes"
	"encoding/json"
	"sync"
)

// ExecCommandArgs are the arguments of the `exec_command` tool.
type ExecCommandArgs struct {
	Cmd                string   `json:"cmd"`
	Workdir            string   `json:"workdir,omitempty"`
	Shell              string   `json:"shell,omitempty"`
	Login              *bool    `json:"login,omitempty"`
	TTY                bool     `json:"tty,omitempty"`
	YieldTimeMs        *uint64  `json:"yield_time_ms,omitempty"`
	MaxOutputTokens    *uint64  `json:"max_output_tokens,omitempty"`
	SandboxPermissions string   `json:"sandbox_permissions,omitempty"`
	Justification      string   `json:"justification,omitempty"`
	PrefixRule         []string `json:"prefix_rule,omitempty"`
}

// WriteStdinArgs are the arguments of the `write_stdin` tool.
type WriteStdinArgs struct {
	SessionID       int     `json:"session_id"`
	Chars           string  `json:"chars,omitempty"`
	YieldTimeMs     *uint64 `json:"yield_time_ms,omitempty"`
	MaxOutputTokens *uint64 `json:"max_output_tokens,omitempty"`
}

// ShellCommandArgs are the arguments of the classic `shell_command` tool.
type ShellCommandArgs struct {
	Command            string   `json:"command"`
	Workdir            string   `json:"workdir,omitempty"`
	TimeoutMs          *uint64  `json:"timeout_ms,omitempty"`
	Login              *bool    `json:"login,omitempty"`
	SandboxPermissions string   `json:"sandbox_permissions,omitempty"`
	Justification      string   `json:"justification,omitempty"`
	PrefixRule         []string `json:"prefix_rule,omitempty"`
}

// Tool schemas as sent in the `tools` array of a Responses request (parameter schemas as the reference).
const execCommandSchema = `{"type":"function","name":"exec_command",
"description":"Runs a command in a PTY, returning output or a session ID for ongoing interaction.",
"strict":false,"parameters":{"type":"object","properties":{
"cmd":{"type":"string","description":"Shell command to execute."},
"justification":{"type":"string","description":"User-facing approval question for ` + "`require_escalated`" + `; omit otherwise."},
"login":{"type":"boolean","description":"True runs the shell with -l/-i semantics; false disables them. Defaults to true."},
"max_output_tokens":{"type":"number","description":"Output token budget. Defaults to 10000 tokens; larger requests may be capped by policy."},
"prefix_rule":{"type":"array","description":"Reusable approval prefix for ` + "`cmd`" + `, only with ` + "`sandbox_permissions: \\\"require_escalated\\\"`" + `; for example [\"git\", \"pull\"].","items":{"type":"string"}},
"sandbox_permissions":{"type":"string","description":"Per-command sandbox override. Defaults to ` + "`use_default`" + `; use ` + "`require_escalated`" + ` for unsandboxed execution.","enum":["use_default","require_escalated"]},
"shell":{"type":"string","description":"Shell binary to launch. Defaults to the user's default shell."},
"tty":{"type":"boolean","description":"True allocates a PTY for the command; false or omitted uses plain pipes."},
"workdir":{"type":"string","description":"Working directory for the command. Defaults to the turn cwd."},
"yield_time_ms":{"type":"number","description":"Wait before yielding output. Defaults to 10000 ms; effective range is 250-30000 ms."}},
"required":["cmd"],"additionalProperties":false}}`

const writeStdinSchema = `{"type":"function","name":"write_stdin",
"description":"Writes characters to an existing unified exec session and returns recent output.",
"strict":false,"parameters":{"type":"object","properties":{
"chars":{"type":"string","description":"Bytes to write to stdin. Defaults to empty, which polls without writing."},
"max_output_tokens":{"type":"number","description":"Output token budget. Defaults to 10000 tokens; larger requests may be capped by policy."},
"session_id":{"type":"number","description":"Identifier of the running unified exec session."},
"yield_time_ms":{"type":"number","description":"Wait before yielding output. Non-empty writes default to 250 ms and cap at 30000 ms; empty polls wait 5000-300000 ms by default."}},
"required":["session_id"],"additionalProperties":false}}`

const shellCommandSchema = `{"type":"function","name":"shell_command",
"description":"Runs a shell command string and returns its exit code and output once it finishes.",
"strict":false,"parameters":{"type":"object","properties":{
"command":{"type":"string","description":"Command line to run in the user's shell."},
"justification":{"type":"string","description":"Question shown to the user when asking for ` + "`require_escalated`" + `; leave out otherwise."},
"login":{"type":"boolean","description":"Run the shell as a login shell (-l). Defaults to true."},
"prefix_rule":{"type":"array","description":"Command prefix to approve for reuse, only together with ` + "`sandbox_permissions: \\\"require_escalated\\\"`" + `.","items":{"type":"string"}},
"sandbox_permissions":{"type":"string","description":"Sandbox override for this command: ` + "`use_default`" + ` (default) or ` + "`require_escalated`" + `.","enum":["use_default","require_escalated"]},
"timeout_ms":{"type":"number","description":"Time limit in milliseconds; the command is killed when it runs out. Defaults to 10000."},
"workdir":{"type":"string","description":"Directory to run in. Defaults to the turn cwd."}},
"required":["command"],"additionalProperties":false}}`

func compactJSON(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic("execmgr: bad embedded schema: " + err.Error())
	}
	return b.Bytes()
}

// The schemas are compacted on first use (not at every start: the sandbox helper and most servers never
// need them before a turn).
var (
	execCommandTool  = sync.OnceValue(func() json.RawMessage { return compactJSON(execCommandSchema) })
	writeStdinTool   = sync.OnceValue(func() json.RawMessage { return compactJSON(writeStdinSchema) })
	shellCommandTool = sync.OnceValue(func() json.RawMessage { return compactJSON(shellCommandSchema) })
)

// UnifiedExecToolSchemas returns the `exec_command` and `write_stdin` tool definitions, in that order, as
// JSON objects ready for the `tools` array of a model request.
func UnifiedExecToolSchemas() []json.RawMessage {
	return []json.RawMessage{bytes.Clone(execCommandTool()), bytes.Clone(writeStdinTool())}
}

// ShellCommandToolSchema returns the `shell_command` tool definition.
func ShellCommandToolSchema() json.RawMessage { return bytes.Clone(shellCommandTool()) }
