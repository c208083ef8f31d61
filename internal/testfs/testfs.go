// Package testfs gives tests directories whose meaning does not depend on the machine they run on.
package testfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// markers are the entries whose presence in an ancestor makes a directory look like part of a
// repository or project to the code under test (git root discovery, .gitignore rules).
var markers = []string{".git"}

// OutsideRepo returns a new empty directory, removed at the end of the test, none of whose ancestors
// holds a .git entry. os.TempDir() is tried first; a machine where /tmp itself sits in a repository
// (a stray empty /tmp/.git is enough: one appeared on the CI machine, with .agents, .codex and .aws
// beside it) falls back to /dev/shm, /var/tmp and the user cache directory. The test is skipped,
// saying why, when none fits.
func OutsideRepo(t testing.TB) string {
	t.Helper()
	bases := []string{os.TempDir(), "/dev/shm", "/var/tmp"}
	if c, err := os.UserCacheDir(); err == nil {
		bases = append(bases, c)
	}
	for _, base := range bases {
		if inRepo(base) {
			continue
		}
		dir, err := os.MkdirTemp(base, "appserver-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		return dir
	}
	t.Skipf("every temporary directory candidate %v lies inside a repository (an ancestor holds .git)", bases)
	return ""
}

// inRepo reports whether dir or one of its ancestors holds a .git entry.
func inRepo(dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return true
	}
	for {
		for _, m := range markers {
			if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
				return true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// IsolateHome points HOME at a new empty directory for the rest of the test binary and returns a
// function that removes it. Login shells started by the code under test then read no profile of the
// host's (a slow or noisy ~/.bashrc would otherwise reach command output and timing). Call it from
// TestMain; tests that need a HOME of their own still set it with t.Setenv. The Go tool's caches and
// settings, which default to places under HOME, are pinned first, so a test that builds a helper
// binary still finds the build and module caches (and needs no network).
func IsolateHome() (cleanup func()) {
	pinGoEnv()
	dir, err := os.MkdirTemp("", "appserver-test-home-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("HOME", dir); err != nil {
		panic(err)
	}
	return func() { _ = os.RemoveAll(dir) }
}

// pinGoEnv sets GOCACHE, GOPATH, GOMODCACHE and GOENV to what the go command resolves under the
// current HOME (its settings file included), where they are not set already.
func pinGoEnv() {
	keys := []string{"GOCACHE", "GOPATH", "GOMODCACHE", "GOENV"}
	out, err := exec.Command("go", append([]string{"env"}, keys...)...).Output()
	if err != nil {
		return // no go command: nothing under test can build with it either
	}
	for i, v := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if i < len(keys) && v != "" && os.Getenv(keys[i]) == "" {
			_ = os.Setenv(keys[i], v)
		}
	}
}
