package thread

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
)

// gitTimeout bounds each git command run to describe a thread's cwd.
const gitTimeout = 2 * time.Second

// gitInfo describes the git checkout at cwd (commit, branch, origin URL); nil when cwd is not inside a
// work tree or git is unavailable. The second value is session_meta.git in the rollout's form.
func gitInfo(ctx context.Context, cwd string) (*protocol.GitInfo, json.RawMessage) {
	run := func(args ...string) *string {
		ctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = cwd
		out, err := cmd.Output()
		if err != nil {
			return nil
		}
		s := strings.TrimSpace(string(out))
		if s == "" {
			return nil
		}
		return &s
	}
	if inside := run("rev-parse", "--is-inside-work-tree"); inside == nil || *inside != "true" {
		return nil, nil
	}
	sha := run("rev-parse", "HEAD")
	branch := run("rev-parse", "--abbrev-ref", "HEAD")
	if branch != nil && *branch == "HEAD" {
		branch = nil // detached
	}
	origin := run("remote", "get-url", "origin")
	gi := &protocol.GitInfo{Sha: sha, Branch: branch, OriginURL: origin}
	raw, _ := json.Marshal(map[string]*string{"commit_hash": sha, "branch": branch, "repository_url": origin})
	return gi, raw
}
