package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// runCLI runs the binary to completion with stdin closed; it returns stdout, stderr and the exit code.
func runCLI(t *testing.T, home string, args ...string) (string, string, int) {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"app-server", "--help"}, {"help"}, {"app-server", "help"}} {
		out, errOut, code := runCLI(t, "", args...)
		require.Equal(t, 0, code, "%v", args)
		require.Empty(t, errOut)
		require.Contains(t, out, "Usage: appserver [app-server] [OPTIONS] [COMMAND]", "%v", args)
		for _, want := range []string{"exec", "proxy", "generate-json-schema", "generate-ts", "--listen <URL>", "--ws-auth <MODE>", "--strict-config", "--print-startup-config"} {
			require.Contains(t, out, want)
		}
		// The reference flags accepted and ignored on purpose are listed as such.
		i := strings.Index(out, "Accepted for compatibility with codex app-server and ignored:")
		require.Positive(t, i)
		for _, f := range []string{"--startup-sign-out", "--startup-client-info", "--cloud-skills-snapshot", "--code-mode-host", "--analytics-default-enabled"} {
			require.Contains(t, out[i:], f)
		}
	}
	for _, args := range [][]string{{"proxy", "--help"}, {"help", "proxy"}, {"app-server", "proxy", "-h"}} {
		out, _, code := runCLI(t, "", args...)
		require.Equal(t, 0, code)
		require.Contains(t, out, "Usage: appserver app-server proxy [OPTIONS]")
		require.Contains(t, out, "--sock <SOCKET_PATH>")
	}
	out, _, code := runCLI(t, "", "generate-ts", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "--out <DIR>")
	require.Contains(t, out, "--experimental")
}

func TestCLIUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "error: unexpected argument '--bogus' found"},
		{[]string{"app-server", "--bogus=1"}, "error: unexpected argument '--bogus' found"},
		{[]string{"-x"}, "error: unexpected argument '-x' found"},
		{[]string{"bogus"}, "error: unrecognized subcommand 'bogus'"},
		{[]string{"app-server", "frobnicate"}, "error: unrecognized subcommand 'frobnicate'"},
		{[]string{"help", "bogus"}, "error: unrecognized subcommand 'bogus'"},
		{[]string{"-c"}, "a value is required for '--config <key=value>'"},
		{[]string{"--listen"}, "a value is required for '--listen <URL>'"},
		{[]string{"--strict-config=yes"}, "unexpected value 'yes' for '--strict-config'"},
		{[]string{"--listen", "tcp://127.0.0.1:1"}, "unsupported --listen URL"},
		{[]string{"--listen", "ws://localhost:1"}, "expected `ws://IP:PORT`"},
		{[]string{"--ws-max-clock-skew-seconds", "soon"}, "invalid value 'soon'"},
		{[]string{"proxy", "--bogus"}, "error: unexpected argument '--bogus' found"},
		{[]string{"proxy", "extra"}, "error: unexpected argument 'extra' found"},
		{[]string{"generate-json-schema"}, "--out <DIR>"},
		{[]string{"generate-ts", "--prettier"}, "a value is required for '--prettier <PRETTIER_BIN>'"},
	} {
		out, errOut, code := runCLI(t, "", tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		require.Empty(t, out, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
		require.Contains(t, errOut, "Usage: ", "%v", tc.args)
	}
}

func TestCLIStartupRefusalsExit1(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "off"}, "no transport configured"},
		{[]string{"--listen", "ws://0.0.0.0:0"}, "refusing to start non-loopback websocket listener 0.0.0.0:0 without auth"},
		{[]string{"--ws-token-file", "/x"}, "websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`"},
		{[]string{"--ws-auth", "capability-token"}, "`--ws-token-file` or `--ws-token-sha256` is required"},
		{[]string{"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", short}, "must be at least 32 bytes"},
		{[]string{"--ws-auth", "magic"}, "invalid value 'magic'"},
		{[]string{"daemon"}, "not supported by appserver"},
		{[]string{"proxy", "--sock", filepath.Join(dir, "nobody.sock")}, "failed to connect to socket at"},
	} {
		out, errOut, code := runCLI(t, "", tc.args...)
		require.Equal(t, 1, code, "%v: %s", tc.args, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

func TestCLIVersionAndIgnoredFlags(t *testing.T) {
	out, _, code := runCLI(t, "", "--version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "appserver ")
	// Accepted-and-ignored reference flags start the stdio server, which ends cleanly on EOF.
	_, errOut, code := runCLI(t, "", "--startup-sign-out", "--analytics-default-enabled", "--startup-client-info", `{"name":"x"}`,
		"--cloud-skills-snapshot", "/nonexistent", "--code-mode-host", "http://127.0.0.1:1", "--stdio", "--enable", "x", "--disable", "y")
	require.Equal(t, 0, code, errOut)
}

func TestCLIPrintStartupConfigAndStrictConfig(t *testing.T) {
	out, _, code := runCLI(t, writeConfig(t, "model = \"m\"\n"), "--print-startup-config")
	require.Equal(t, 0, code)
	require.JSONEq(t, `{"appServerVersion":"0.169.0","configRequirements":{"supportsIndependentSpeedModes":true,"requirements":null}}`, out)

	home := writeConfig(t, "model = \"m\"\n\n[bogus_table]\nx = 1\n")
	out, errOut, code := runCLI(t, home, "--strict-config", "--print-startup-config")
	require.Equal(t, 1, code)
	var resp struct {
		Error struct {
			Code    int
			Message string
			Data    map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resp), errOut)
	require.Equal(t, -32600, resp.Error.Code)
	require.Equal(t, "configLoad", resp.Error.Data["reason"])
	require.EqualValues(t, 3, resp.Error.Data["line"])
	require.Contains(t, resp.Error.Message, "unknown configuration field `bogus_table`")

	_, errOut, code = runCLI(t, home, "--strict-config")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "config.toml:3:1: unknown configuration field `bogus_table`")

	// Without --strict-config the unknown key is only warned about.
	_, errOut, code = runCLI(t, home)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "bogus_table")

	// A malformed file is reported as JSON too.
	out, _, code = runCLI(t, writeConfig(t, "model = \n"), "--print-startup-config")
	require.Equal(t, 1, code)
	require.Contains(t, out, `"reason":"configLoad"`)
}

func TestCLIGenerateSchemaAndTS(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runCLI(t, "", "app-server", "generate-json-schema", "--out", filepath.Join(dir, "schema"), "--experimental")
	require.Equal(t, 0, code, errOut)
	mine, err := os.ReadFile(filepath.Join(dir, "schema", "codex_app_server_protocol.v2.schemas.json"))
	require.NoError(t, err)
	repo, err := os.ReadFile(filepath.Join("..", "..", "schema", "codex_app_server_protocol.v2.schemas.json"))
	require.NoError(t, err)
	require.Equal(t, string(repo), string(mine))

	_, errOut, code = runCLI(t, "", "generate-ts", "-o", filepath.Join(dir, "ts"))
	require.Equal(t, 0, code, errOut)
	_, err = os.Stat(filepath.Join(dir, "ts", "index.ts"))
	require.NoError(t, err)
}

// startListening runs the binary with --listen and returns it and its stderr reader once it announced the
// endpoint.
func startListening(t *testing.T, home string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if _, after, ok := strings.Cut(line, "listening on: "); ok {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return cmd, strings.TrimSpace(after)
		}
	}
	t.Fatalf("server did not announce its endpoint")
	return nil, ""
}

func TestCLIListenWebSocket(t *testing.T) {
	home := writeConfig(t, "")
	cmd, endpoint := startListening(t, home, "app-server", "--listen", "ws://127.0.0.1:0")
	require.True(t, strings.HasPrefix(endpoint, "ws://127.0.0.1:"))
	resp, err := http.Get("http://" + strings.TrimPrefix(endpoint, "ws://") + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, endpoint, nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}`)))
	_, data, err := ws.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(data), `"userAgent"`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "SIGTERM ends the listener cleanly")
}

func TestCLIListenUnixAndProxy(t *testing.T) {
	home := writeConfig(t, "")
	// --ws-auth is validated but, as in the reference, does not apply to the 0600 control socket.
	cmd, endpoint := startListening(t, home, "--listen", "unix://", "--ws-auth", "capability-token", "--ws-token-sha256", strings.Repeat("ab", 32))
	sock := filepath.Join(home, "app-server-control", "app-server-control.sock")
	require.Equal(t, "unix://"+sock, endpoint, "unix:// uses the default control socket")

	// A second server on the same socket is refused while the first lives.
	_, errOut, code := runCLI(t, home, "--listen", "unix://")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "app-server control socket is already in use")

	// proxy relays bytes both ways: a WebSocket handshake through it reaches the server.
	proxy := exec.Command(binPath, "app-server", "proxy")
	proxy.Env = append(os.Environ(), "CODEX_HOME="+home)
	in, err := proxy.StdinPipe()
	require.NoError(t, err)
	out, err := proxy.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, proxy.Start())
	t.Cleanup(func() { _ = proxy.Process.Kill(); _ = proxy.Wait() })
	_, err = io.WriteString(in, "GET /rpc HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	require.NoError(t, err)
	status, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 101 Switching Protocols\r\n", status)
	require.NoError(t, in.Close())
	_ = proxy.Process.Kill()

	// The socket answers the TUI's dial.
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	c.Close()

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	_, err = os.Lstat(sock)
	require.True(t, os.IsNotExist(err), "socket removed on exit")
}

// TestCLIStrictConfigNestedKeys: as the reference, --strict-config also refuses unknown keys inside
// tables (messages observed on codex-cli 0.169.0); known nested keys pass.
func TestCLIStrictConfigNestedKeys(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{"[features]\nx = true\n", "config.toml:2:1: unknown configuration field `features.x`"},
		{"[mcp_servers.s]\ncommand = \"true\"\nwhat = 2\n", "config.toml:3:1: unknown configuration field `mcp_servers.s.what`"},
		{"[model_providers.mock]\nname = \"M\"\nbase_url = \"http://x\"\nbogus_key = 1\n", "config.toml:4:1: unknown configuration field `model_providers.mock.bogus_key`"},
		{"bogus = 1\n[mcp_servers.s]\ncommand = \"true\"\nwhat = 2\n", "config.toml:1:1: unknown configuration field `bogus`"},
		{"[profiles.p]\nfoo = 1\n", "config.toml:2:1: unknown configuration field `profiles.p.foo`"},
		{"[history]\nfoo = 1\n", "config.toml:2:1: unknown configuration field `history.foo`"},
		{"[shell_environment_policy]\nfoo = 1\n", "config.toml:2:1: unknown configuration field `shell_environment_policy.foo`"},
		{"[sandbox_workspace_write]\nfoo = 1\n", "config.toml:2:1: unknown configuration field `sandbox_workspace_write.foo`"},
		{"[projects.\"/x\"]\nfoo = 1\n", "config.toml:2:1: unknown configuration field `projects./x.foo`"},
	} {
		_, errOut, code := runCLI(t, writeConfig(t, tc.toml), "--strict-config", "--listen", "off")
		require.Equal(t, 1, code, tc.toml)
		require.Contains(t, errOut, tc.want, tc.toml)
	}
	ok := "model = \"m\"\n[features]\nshell_tool = true\n[mcp_servers.s]\ncommand = \"true\"\nstartup_timeout_sec = 5\n[mcp_servers.s.env]\nANY = \"x\"\n" +
		"[model_providers.mock]\nname = \"M\"\nbase_url = \"http://x\"\nrequest_max_retries = 0\n[model_providers.mock.http_headers]\nX-Any = \"1\"\n[profiles.p]\nmodel = \"n\"\n"
	_, errOut, _ := runCLI(t, writeConfig(t, ok), "--strict-config", "--listen", "off")
	require.NotContains(t, errOut, "unknown configuration field", "known nested keys pass")
}
