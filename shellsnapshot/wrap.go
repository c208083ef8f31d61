package shellsnapshot

import (
	"slices"
	"strings"

	"appserver/execmgr"
)

// Protected are the variables a command's own environment keeps over the snapshot's exports (the
// reference's list of per-command variables).
var Protected = []string{
	"CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS", "CODEX_PERMISSION_PROFILE", "CODEX_PLUGIN_METRICS_OUTPUT",
	"CODEX_SESSION_ID", "CODEX_THREAD_ID", "CODEX_TOOL_CALL_ID", "CODEX_VERSION",
}

// Apply rewrites a login-shell command for the snapshot: [shell, "-lc", script, args...] becomes
// [shell, "-c", script, args...] and env gets the snapshot's exports on top, except the protected
// variables, which keep env's values (or stay unset). The script sees what the reference's wrapper gives
// it (`bash -c` sourcing the snapshot, then exec of `shell -c script`): the exported state, not the
// functions, aliases or options, and no login scripts run. Any other argv, or a snapshot not ready, is
// returned unchanged.
func (s *Snapshot) Apply(argv, env []string, protect []string) ([]string, []string) {
	if s == nil || len(argv) < 3 || argv[1] != "-lc" {
		return argv, env
	}
	s.mu.Lock()
	ready, exports := s.path != "", s.exports
	s.mu.Unlock()
	if !ready {
		return argv, env
	}
	kept := make([]string, 0, len(exports))
	for _, kv := range exports {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(protect, k) {
			kept = append(kept, kv)
		}
	}
	argv = slices.Concat([]string{argv[0], "-c"}, argv[2:])
	return argv, execmgr.MergeEnv(env, kept...)
}
