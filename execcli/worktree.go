package execcli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// worktreesDir is the folder of $CODEX_HOME holding the worktrees --worktree creates.
const worktreesDir = "worktrees"

// worktreeOwnerFile names, in a worktree's Git admin folder, the thread the worktree was made for.
const worktreeOwnerFile = "codex-thread.json"

// git runs git in dir and returns its trimmed stdout; a failure reads "git command failed: <stderr>".
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git command failed: %s", msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// createWorktree makes the managed worktree of --worktree, as the reference does: a detached checkout
// of HEAD of the repository holding dir, at $CODEX_HOME/worktrees/<4 hex digits>/<repository folder
// name> (uncommitted changes stay behind). It returns the worktree and the directory in it that
// corresponds to dir.
func createWorktree(ctx context.Context, codexHome, dir string) (worktree, cwd string, err error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", err
	}
	head, err := git(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", "", err
	}
	rel := "."
	if realTop, err1 := filepath.EvalSymlinks(top); err1 == nil {
		if realDir, err2 := filepath.EvalSymlinks(dir); err2 == nil {
			if r, err3 := filepath.Rel(realTop, realDir); err3 == nil && !strings.HasPrefix(r, "..") {
				rel = r
			}
		}
	}
	for attempt := 0; ; attempt++ {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", err
		}
		parent := filepath.Join(codexHome, worktreesDir, hex.EncodeToString(b[:]))
		if _, err := os.Lstat(parent); err == nil {
			if attempt < 100 {
				continue
			}
			return "", "", fmt.Errorf("no free worktree folder in %s", filepath.Join(codexHome, worktreesDir))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", "", err
		}
		worktree = filepath.Join(parent, filepath.Base(top))
		break
	}
	if _, err := git(ctx, dir, "worktree", "add", "--detach", worktree, head); err != nil {
		return "", "", err
	}
	return worktree, filepath.Join(worktree, rel), nil
}

// claimWorktree records in the worktree's Git admin folder the thread it was made for.
func claimWorktree(ctx context.Context, worktree, threadID string) error {
	admin, err := git(ctx, worktree, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err
	}
	b, _ := json.Marshal(struct {
		Version       int    `json:"version"`
		OwnerThreadID string `json:"ownerThreadId"`
	}{1, threadID})
	return os.WriteFile(filepath.Join(admin, worktreeOwnerFile), b, 0o644)
}
