package shellsnapshot

import (
	"fmt"
	"strings"
)

// Protected are the variables a command's own environment keeps over the snapshot's exports (the
// reference's list of per-command variables).
var Protected = []string{
	"CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS", "CODEX_PERMISSION_PROFILE", "CODEX_PLUGIN_METRICS_OUTPUT",
	"CODEX_SESSION_ID", "CODEX_THREAD_ID", "CODEX_TOOL_CALL_ID", "CODEX_VERSION",
}

// Wrap rewrites a login-shell command [shell, "-lc", script, args...] into [s.Shell(), "-c", wrapper]: the
// wrapper sources the snapshot (ignoring its failure), puts back the protected variables as the command's
// environment had them, and execs `shell -c script args...`. Only exported state reaches the script, as in
// the reference. Any other argv, or a snapshot not ready, is returned unchanged.
func (s *Snapshot) Wrap(argv []string, protect []string) []string {
	path := s.Path()
	if path == "" || len(argv) < 3 || argv[1] != "-lc" {
		return argv
	}
	var b strings.Builder
	for i, name := range protect {
		fmt.Fprintf(&b, "__APPSERVER_SNAPSHOT_SET_%d=\"${%s+x}\"\n__APPSERVER_SNAPSHOT_%d=\"${%s-}\"\n", i, name, i, name)
	}
	fmt.Fprintf(&b, "if . %s >/dev/null 2>&1; then :; fi\n", Quote(path))
	for i, name := range protect {
		fmt.Fprintf(&b, "if [ -n \"$__APPSERVER_SNAPSHOT_SET_%d\" ]; then builtin export %s=\"$__APPSERVER_SNAPSHOT_%d\"; else builtin unset %s; fi\n",
			i, name, i, name)
		fmt.Fprintf(&b, "builtin unset __APPSERVER_SNAPSHOT_SET_%d __APPSERVER_SNAPSHOT_%d\n", i, i)
	}
	b.WriteString("exec " + Quote(argv[0]) + " -c " + Quote(argv[2]))
	for _, a := range argv[3:] {
		b.WriteString(" " + Quote(a))
	}
	return []string{s.shell, "-c", b.String()}
}

// Quote single-quotes s for a POSIX shell.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }
