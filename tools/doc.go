// Package tools holds the tool sets the turn engine offers the model — unified exec (exec_command,
// write_stdin), the classic shell_command, apply_patch — together with the approval flow that asks the
// client before a command or a patch runs and the sandbox wrapping of every child process.
package tools
