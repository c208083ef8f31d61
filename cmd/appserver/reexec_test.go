package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/sandbox"
	"appserver/sandbox/confine"
)

// TestSandboxHelperSkipsServerInit runs the built binary as the sandbox helper and checks, with the
// runtime's init trace, that it ran the command without initialising the server's heavy packages.
func TestSandboxHelperSkipsServerInit(t *testing.T) {
	if ok, reason := sandbox.Available(); !ok {
		t.Skip("sandbox unavailable: " + reason)
	}
	argv, err := sandbox.WrapArgv(binPath, sandbox.Policy{Kind: sandbox.ReadOnly}, t.TempDir(), []string{"/bin/sh", "-c", "echo hi; exit 3"})
	require.NoError(t, err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "run: %v\n%s", err, stderr.String())
	require.Equal(t, 3, ee.ExitCode(), stderr.String())
	require.Equal(t, "hi\n", stdout.String())

	inited := map[string]bool{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inited[f[1]] = true
		}
	}
	require.True(t, inited["appserver/sandbox"], "no init trace of the helper:\n%s", stderr.String())
	for _, pkg := range []string{"net/http", "crypto/tls", "regexp", "modernc.org/sqlite/lib", "modernc.org/libc",
		"github.com/modelcontextprotocol/go-sdk/mcp", "appserver/server", "appserver/thread", "appserver/tools"} {
		require.False(t, inited[pkg], "the helper initialised %s", pkg)
	}
}

// TestBuiltBinaryIsALauncher starts the built binary as a sandbox launcher (dispatched from the same
// early initializer as the helper) and runs a command through it.
func TestBuiltBinaryIsALauncher(t *testing.T) {
	if ok, reason := sandbox.Available(); !ok {
		t.Skip("sandbox unavailable: " + reason)
	}
	l, err := sandbox.StartLauncher(context.Background(), binPath, sandbox.LaunchKey{}, sandbox.LauncherOptions{CgroupFD: -1})
	if err != nil {
		t.Skipf("no launcher here: %v", err)
	}
	defer l.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	c, err := l.Spawn(context.Background(), confine.LaunchRequest{Argv: []string{"sh", "-c", "echo hi; exit 3"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/", Setpgid: true},
		[3]*os.File{null, w, w}, -1)
	w.Close()
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "hi\n", string(out))
	require.Equal(t, 3, c.Wait().ExitStatus())
}
