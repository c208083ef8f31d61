package tools

import (
	"os"

	"appserver/shellsnapshot"
	"appserver/thread"
	"appserver/usershell"
)

type snapshotKey struct{}

// ThreadLoaded returns the hook the thread manager runs when a thread is loaded (started, resumed,
// forked): with the shell_snapshot feature on, it prepares the capture of the user's login shell, which
// the loader begins (ShellSnapshot(t).Begin) once its reply is out; the snapshot is deleted when the
// thread closes.
func ThreadLoaded(d Deps) func(t *thread.Thread) {
	return func(t *thread.Thread) {
		s := t.Settings()
		cfg := s.EffectiveConfig(d.Config)
		if !featureOr(cfg, "shell_snapshot", true) {
			return
		}
		snap := shellsnapshot.Prepare(shellsnapshot.Options{CodexHome: cfg.CodexHome, ThreadID: t.ID, Shell: usershell.Shell(),
			Cwd: s.Cwd, Env: os.Environ(), Logger: d.Logger})
		if snap == nil {
			return
		}
		t.Attach(snapshotKey{}, snap)
		t.OnClose(snap.Close)
	}
}

// ShellSnapshot returns the thread's shell snapshot, or nil when it has none.
func ShellSnapshot(t *thread.Thread) *shellsnapshot.Snapshot {
	snap, _ := t.Attached(snapshotKey{}).(*shellsnapshot.Snapshot)
	return snap
}

// ShellWrap returns the hook that runs a thread's login-shell commands (`shell -lc script`) with its shell
// snapshot, or nil when the thread has none. A command started before the snapshot is ready runs
// unchanged.
func ShellWrap(t *thread.Thread) func(argv, env []string) ([]string, []string) {
	snap := ShellSnapshot(t)
	if snap == nil {
		return nil
	}
	return func(argv, env []string) ([]string, []string) { return snap.Apply(argv, env, shellsnapshot.Protected) }
}
