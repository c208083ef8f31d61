// Package execmgr runs the agent's shell commands: child processes in their own process group (pipes) or
// session (PTY), with bounded head+tail transcripts, live output callbacks and group kills (Manager,
// Process); the unified-exec session table behind the `exec_command` / `write_stdin` tools (Sessions);
// the classic `shell_command` tool (Manager.ShellCommand); and the connection-scoped processes of the
// `command/exec*` client methods (CommandExecRegistry).
//
// Every model-facing deadline is a stopwatch from the caller's stopwatch.Controller, so pausing the
// thread's controller (a human is being asked something) freezes yield deadlines and shell timeouts.
package execmgr
