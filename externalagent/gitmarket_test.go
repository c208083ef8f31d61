package externalagent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
	"appserver/stopwatch/stopwatchtest"
)

// gitRun runs a real git command in dir.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// bareMarketplace makes a bare git repository holding a Claude marketplace named "git-market" with plugins gp
// (version 2.1.0, one skill) and gp2 (no version) on main, and a branch "other" where the marketplace calls
// itself "other-market".
func bareMarketplace(t *testing.T, root string) string {
	src := filepath.Join(root, "src")
	write(t, filepath.Join(src, ".claude-plugin", "marketplace.json"), `{"name":"git-market","plugins":[{"name":"gp","source":"./plugins/gp"},{"name":"gp2","source":"./plugins/gp2"}]}`)
	write(t, filepath.Join(src, "plugins", "gp", ".claude-plugin", "plugin.json"), `{"name":"gp","version":"2.1.0"}`)
	write(t, filepath.Join(src, "plugins", "gp", "skills", "s", "SKILL.md"), "---\nname: s\ndescription: d\n---\nbody\n")
	write(t, filepath.Join(src, "plugins", "gp2", ".claude-plugin", "plugin.json"), `{"name":"gp2"}`)
	gitRun(t, src, "init", "-q")
	gitRun(t, src, "add", ".")
	gitRun(t, src, "commit", "-qm", "init")
	gitRun(t, src, "checkout", "-qb", "other")
	write(t, filepath.Join(src, ".claude-plugin", "marketplace.json"), `{"name":"other-market","plugins":[{"name":"gp","source":"./plugins/gp"}]}`)
	gitRun(t, src, "commit", "-qam", "other")
	gitRun(t, src, "checkout", "-q", "main")
	bare := filepath.Join(root, "bare.git")
	gitRun(t, root, "clone", "-q", "--bare", src, bare)
	return bare
}

func pluginsItem(groups ...protocol.PluginsMigration) []protocol.ExternalAgentConfigMigrationItem {
	return []protocol.ExternalAgentConfigMigrationItem{{ItemType: TypePlugins, Details: &protocol.MigrationDetails{Plugins: groups}}}
}

func messages(r Result) []string {
	var out []string
	for _, f := range r.Failures {
		out = append(out, *f.Source+": "+f.Message)
	}
	return out
}

func TestImportGitMarketplace(t *testing.T) {
	f := newFixture(t)
	bare := bareMarketplace(t, f.root)
	f.gitRewrites(t, map[string]string{"https://github.com/owner/repo.git": bare, "https://example.invalid/x.git": bare})
	write(t, f.claude("settings.json"), `{"enabledPlugins":{"gp@ghmkt":true,"gp2@ghmkt":true,"nope@ghmkt":true,"gp@httpsmkt":true},
	  "extraKnownMarketplaces":{"ghmkt":{"source":{"source":"github","repo":"owner/repo"}},"httpsmkt":{"source":{"source":"git","url":"https://example.invalid/x.git"}}}}`)

	items, err := f.svc.Detect(DetectOptions{IncludeHome: true})
	require.NoError(t, err)
	require.Equal(t, []protocol.PluginsMigration{{MarketplaceName: "ghmkt", PluginNames: []string{"gp", "gp2", "nope"}}, {MarketplaceName: "httpsmkt", PluginNames: []string{"gp"}}}, items[0].Details.Plugins)

	// As the reference: the marketplace is cloned and installed from under its own name; a second source
	// naming itself the same is refused.
	out := f.svc.Import(context.Background(), items)
	require.Len(t, out.Immediate, 1)
	require.Empty(t, out.Immediate[0].Successes)
	require.Empty(t, out.Immediate[0].Failures)
	require.Len(t, out.Later, 1)
	gp, gp2 := "gp@ghmkt", "gp2@ghmkt"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &gp, Target: &gp}, {ItemType: TypePlugins, Source: &gp2, Target: &gp2}}, out.Later[0].Successes)
	require.Equal(t, []string{"nope@ghmkt: plugin `nope` was not found in marketplace `git-market`",
		"gp@httpsmkt: marketplace 'git-market' is already added from a different source; remove it before adding this source"}, messages(out.Later[0]))
	require.Equal(t, "plugin_not_found", *out.Later[0].Failures[0].ErrorType)
	require.Equal(t, "[marketplaces.git-market]\nsource_type = \"git\"\nsource = \"https://github.com/owner/repo.git\"\n\n[plugins.\"gp@git-market\"]\nenabled = true\n\n[plugins.\"gp2@git-market\"]\nenabled = true\n",
		read(t, filepath.Join(f.codex, "config.toml")))
	require.Equal(t, "---\nname: s\ndescription: d\n---\nbody\n", read(t, filepath.Join(f.codex, "plugins", "cache", "git-market", "gp", "2.1.0", "skills", "s", "SKILL.md")))
	require.FileExists(t, filepath.Join(f.codex, "plugins", "cache", "git-market", "gp2", "local", ".claude-plugin", "plugin.json"))
	require.NoDirExists(t, filepath.Join(f.codex, "plugins", "cache", "git-market", "gp", "2.1.0", ".git"))
	require.FileExists(t, filepath.Join(f.codex, ".tmp", "marketplaces", "git-market", ".claude-plugin", "marketplace.json"))
	staged, err := os.ReadDir(filepath.Join(f.codex, ".tmp", "marketplaces", ".staging"))
	require.NoError(t, err)
	require.Empty(t, staged, "staging folders are removed")

	// The same source again installs again.
	out = f.svc.Import(context.Background(), pluginsItem(protocol.PluginsMigration{MarketplaceName: "ghmkt", PluginNames: []string{"gp"}}))
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &gp, Target: &gp}}, out.Later[0].Successes)
	require.Empty(t, out.Later[0].Failures)
}

func TestImportGitMarketplaceRef(t *testing.T) {
	f := newFixture(t)
	bare := bareMarketplace(t, f.root)
	f.gitRewrites(t, map[string]string{"https://github.com/owner/repo.git": bare})
	write(t, f.claude("settings.json"), `{"extraKnownMarketplaces":{"refmkt":{"source":{"source":"github","repo":"owner/repo","ref":"other"}},
	  "atmkt":{"source":"owner/repo@main"}}}`)
	out := f.svc.Import(context.Background(), pluginsItem(protocol.PluginsMigration{MarketplaceName: "refmkt", PluginNames: []string{"gp"}},
		protocol.PluginsMigration{MarketplaceName: "atmkt", PluginNames: []string{"gp"}}))
	id, at := "gp@refmkt", "gp@atmkt"
	require.Equal(t, []protocol.ExternalAgentConfigImportItemTypeSuccess{{ItemType: TypePlugins, Source: &id, Target: &id}, {ItemType: TypePlugins, Source: &at, Target: &at}}, out.Later[0].Successes)
	require.Empty(t, out.Later[0].Failures)
	require.Equal(t, "[marketplaces.other-market]\nsource_type = \"git\"\nsource = \"https://github.com/owner/repo.git\"\nref = \"other\"\n\n[plugins.\"gp@other-market\"]\nenabled = true\n\n"+
		"[marketplaces.git-market]\nsource_type = \"git\"\nsource = \"https://github.com/owner/repo.git\"\nref = \"main\"\n\n[plugins.\"gp@git-market\"]\nenabled = true\n",
		read(t, filepath.Join(f.codex, "config.toml")))
}

func TestImportUnreachableMarketplace(t *testing.T) {
	f := newFixture(t)
	write(t, f.root+"/file.txt", "x")
	write(t, f.claude("settings.json"), `{"extraKnownMarketplaces":{"badhost":{"source":{"source":"git","url":"https://127.0.0.1:1/x.git"}},
	  "filemkt":{"source":{"source":"git","url":"file:///nonexistent/x.git"}},"missing":{"source":{"source":"directory","path":"/nonexistent/mkt"}},
	  "afile":{"source":{"source":"directory","path":"`+f.root+`/file.txt"}}}}`)
	out := f.svc.Import(context.Background(), pluginsItem(protocol.PluginsMigration{MarketplaceName: "badhost", PluginNames: []string{"a", "b"}},
		protocol.PluginsMigration{MarketplaceName: "filemkt", PluginNames: []string{"a"}}, protocol.PluginsMigration{MarketplaceName: "missing", PluginNames: []string{"a"}},
		protocol.PluginsMigration{MarketplaceName: "afile", PluginNames: []string{"a"}}))
	require.Empty(t, out.Immediate[0].Failures)
	got := messages(out.Later[0])
	require.Len(t, got, 5)
	// The reference's wording, down to git's own output.
	re := regexp.MustCompile(`^a@badhost: git clone https://127\.0\.0\.1:1/x\.git (` + regexp.QuoteMeta(f.codex) + `/\.tmp/marketplaces/\.staging/marketplace-linux-[A-Za-z0-9]{6}/checkout) failed with status exit status: 128\nstdout:\n\nstderr:\nCloning into '(.*)'\.\.\.\nfatal: unable to access 'https://127\.0\.0\.1:1/x\.git/': Failed to connect to 127\.0\.0\.1 port 1 after \d+ ms: Could(n't| not) connect to server$`)
	m := re.FindStringSubmatch(got[0])
	require.NotNil(t, m, got[0])
	require.Equal(t, m[1], m[2])
	require.True(t, strings.HasPrefix(got[1], "b@badhost: git clone https://127.0.0.1:1/x.git "), got[1])
	require.Equal(t, []string{"a@filemkt: invalid marketplace source format; expected owner/repo, a git URL, or a local marketplace path",
		"a@missing: failed to resolve local marketplace source path: No such file or directory (os error 2)",
		"a@afile: local marketplace source must be a directory, not a file"}, got[2:])
	require.NoFileExists(t, filepath.Join(f.codex, "config.toml"))
}

// hangingSSH makes git's ssh a script that records its pid in a file and then waits forever.
func hangingSSH(t *testing.T, root string) string {
	pidFile := filepath.Join(root, "ssh.pid")
	script := filepath.Join(root, "ssh.sh")
	write(t, script, "#!/bin/sh\necho $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nexec sleep 600\n")
	require.NoError(t, os.Chmod(script, 0o755))
	t.Setenv("GIT_SSH_COMMAND", script)
	return pidFile
}

// requireGone waits (bounded generously: only a real leak fails) until the process is gone or a zombie.
func requireGone(t *testing.T, pidFile string) {
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z"
	}, 30*time.Second, 10*time.Millisecond, "git's ssh %d still runs", pid)
}

func TestImportMarketplaceCloneCancelled(t *testing.T) {
	f := newFixture(t)
	pidFile := hangingSSH(t, f.root)
	write(t, f.claude("settings.json"), `{"extraKnownMarketplaces":{"sshmkt":{"source":{"source":"git","url":"git@hang.invalid:x/y.git"}}}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancel once the clone's ssh runs
		for ctx.Err() == nil {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out := f.svc.Import(ctx, pluginsItem(protocol.PluginsMigration{MarketplaceName: "sshmkt", PluginNames: []string{"a"}}))
	require.Len(t, out.Later[0].Failures, 1)
	require.Regexp(t, `^git clone git@hang\.invalid:x/y\.git .*/checkout was cancelled: context canceled$`, out.Later[0].Failures[0].Message)
	requireGone(t, pidFile)
	staged, err := os.ReadDir(filepath.Join(f.codex, ".tmp", "marketplaces", ".staging"))
	require.NoError(t, err)
	require.Empty(t, staged)
}

func TestImportMarketplaceCloneTimeout(t *testing.T) {
	f := newFixture(t)
	pidFile := hangingSSH(t, f.root)
	clock := stopwatchtest.NewFakeClock(time.Unix(0, 0))
	f.svc.GitTimeout = 200 * time.Millisecond // the clone hangs for 600 s: only the bound ends it
	f.svc.Clock = clock
	write(t, f.claude("settings.json"), `{"extraKnownMarketplaces":{"sshmkt":{"source":{"source":"git","url":"git@hang.invalid:x/y.git"}}}}`)
	done := make(chan Outcome, 1)
	go func() {
		done <- f.svc.Import(context.Background(), pluginsItem(protocol.PluginsMigration{MarketplaceName: "sshmkt", PluginNames: []string{"a"}}))
	}()
	// The timeout runs on the fake clock: it passes only once git's ssh is running, however slow the machine.
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, time.Minute, 5*time.Millisecond, "git's ssh never started")
	clock.Advance(199 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("the clone ended before its timeout")
	default:
	}
	clock.Advance(time.Millisecond)
	var out Outcome
	select {
	case out = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the clone outlived its timeout")
	}
	require.Regexp(t, `^git clone git@hang\.invalid:x/y\.git .*/checkout timed out after 200ms$`, out.Later[0].Failures[0].Message)
	requireGone(t, pidFile)
}

// Start returns before any clone runs (the server answers then); finish does the clone.
func TestStartLeavesClonesToFinish(t *testing.T) {
	f := newFixture(t)
	pidFile := hangingSSH(t, f.root)
	write(t, f.claude("settings.json"), `{"extraKnownMarketplaces":{"sshmkt":{"source":{"source":"git","url":"git@hang.invalid:x/y.git"}}}}`)
	immediate, finish := f.svc.Start(pluginsItem(protocol.PluginsMigration{MarketplaceName: "sshmkt", PluginNames: []string{"a"}}))
	require.Len(t, immediate, 1)
	require.Empty(t, immediate[0].Failures)
	_, err := os.Stat(pidFile)
	require.ErrorIs(t, err, os.ErrNotExist, "Start must not clone")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	later := finish(ctx)
	require.Len(t, later, 1)
	require.Regexp(t, `was cancelled: context canceled$`, later[0].Failures[0].Message)
}
