package early

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/early/firstline"
	"appserver/internal/early/quick"
	"appserver/internal/early/request"
	protocol "appserver/protocol/v2"
	"appserver/server"
)

func TestWanted(t *testing.T) {
	require.True(t, firstline.Wanted(nil))
	require.True(t, firstline.Wanted([]string{"app-server"}))
	for _, args := range [][]string{{"app-server", "--listen", "stdio://"}, {"-c", "model=x"}, {"exec", "hi"},
		{"--strict-config"}, {"app-server", "proxy"}, {"__appserver_sandbox"}, {"--version"}} {
		require.False(t, firstline.Wanted(args), "%q", args)
	}
}

// serverOutput runs the server's own stdio handling on input until EOF and returns what it wrote.
func serverOutput(t *testing.T, home string, input string, initialized bool) []string {
	t.Helper()
	// As cmd/appserver: a configuration that does not load is replaced by the defaults.
	cfg, cfgErr := config.Load(home, nil)
	if cfgErr != nil {
		var err error
		cfg, err = config.Defaults(home, nil)
		require.NoError(t, err)
	}
	srv := server.New(server.Options{Config: cfg, ConfigError: cfgErr, Logger: slog.New(slog.DiscardHandler)})
	defer srv.Close()
	var out bytes.Buffer
	st := answerFor(t, cfg.CodexHome, input)
	if initialized {
		require.NotNil(t, st.Initialized)
		out.Write(st.written)
		require.NoError(t, srv.ServeConnInitialized(context.Background(), st.Input, &out, st.Initialized))
	} else {
		require.NoError(t, srv.ServeConn(context.Background(), strings.NewReader(input), &out))
	}
	return lines(out.String())
}

type answered struct {
	Start
	written []byte
}

// answerFor runs the early start as a process does: package quick's answer, then this package's.
func answerFor(t *testing.T, home, input string) answered {
	t.Helper()
	var out bytes.Buffer
	in := strings.NewReader(input)
	read, eol := firstline.ReadFirstLine(in)
	quickly := quick.Answer(read, eol, &out, home)
	st := answer(quickly, request.Decode(read, eol), in, &out, home)
	return answered{Start: st, written: out.Bytes()}
}

// slowAnswerFor runs this package's answer alone, as for a line package quick leaves.
func slowAnswerFor(t *testing.T, home, input string) answered {
	t.Helper()
	var out bytes.Buffer
	in := strings.NewReader(input)
	st := answer(false, request.Decode(firstline.ReadFirstLine(in)), in, &out, home)
	return answered{Start: st, written: out.Bytes()}
}

// lines drops the emission times of notifications, which differ between runs.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		l := sc.Text()
		if i := strings.Index(l, `,"emittedAtMs":`); i >= 0 {
			l = l[:i] + "}"
		}
		out = append(out, l)
	}
	return out
}

func testHome(t testing.TB) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "codex_home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "installation_id"), []byte("11111111-2222-4333-8444-555555555555"), 0o644))
	return home
}

// TestAnswerIsTheServers: for a well-formed initialize, the early answer followed by the server's
// initialized connection writes exactly what the server alone writes, requests behind it included.
func TestAnswerIsTheServers(t *testing.T) {
	for _, input := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}` + "\n",
		`{"id":"x","method":"initialize","params":{"clientInfo":{"name":"c","title":"T","version":"1"},` +
			`"capabilities":{"experimentalApi":true,"optOutNotificationMethods":["remoteControl/status/changed"]}}}` + "\r\n",
		`{"id":7,"method":"initialize","params":{"clientInfo":{"name":"","version":""}}}` + "\n" +
			`{"method":"initialized"}` + "\n" + `{"id":8,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}` + "\n" +
			`{"id":9,"method":"thread/list","params":{}}` + "\n",
	} {
		home := testHome(t)
		want := serverOutput(t, home, input, false)
		got := serverOutput(t, home, input, true)
		require.Equal(t, want, got, "%s", input)
		require.Contains(t, want[0], `"result":{"codexHome":`)
	}
}

// TestAnswerWithInvalidConfig: the answer does not depend on config.toml; a configuration that does not
// load is reported by a configWarning right after the answer, early or not.
func TestAnswerWithInvalidConfig(t *testing.T) {
	input := `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}` + "\n" +
		`{"method":"initialized"}` + "\n" + `{"id":2,"method":"config/read","params":{}}` + "\n"
	for _, content := range []string{"model = 5\n", "foo = [\n", "model = \"m\"\n"} {
		home := testHome(t)
		file := filepath.Join(home, config.ConfigFileName)
		require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
		want := serverOutput(t, home, input, false)
		got := serverOutput(t, home, input, true)
		require.Equal(t, want, got, "%s", content)
		require.Contains(t, want[0], `"result":{"codexHome":`)
		if content == "model = \"m\"\n" {
			require.NotContains(t, want[1], `"configWarning"`)
			continue
		}
		require.Contains(t, want[1], `{"method":"configWarning","params":{"summary":"Invalid configuration; using defaults.","details":"`+file+`:1:`)
		require.Contains(t, want[2], `"remoteControl/status/changed"`)
	}
}

// TestAnswerLeavesTheRest: anything but a well-formed initialize on the first line is not answered,
// and the server reads every byte that was read.
func TestAnswerLeavesTheRest(t *testing.T) {
	for _, input := range []string{
		"",
		"\n" + `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}` + "\n",
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`, // no newline yet
		`{"id":1,"method":"initialize"}` + "\n",
		`{"id":1,"method":"initialize","params":{}}` + "\n",
		`{"id":1,"method":"initialize","params":[]}` + "\n",
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":1,"version":"1"}}}` + "\n",
		`{"id":1,"method":"thread/list","params":{}}` + "\n",
		`{"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}` + "\n",
		`not json` + "\n",
		`[{"id":1,"method":"initialize"}]` + "\n",
		strings.Repeat(" ", firstline.MaxLine+10) + "\n",
	} {
		st := answerFor(t, testHome(t), input)
		require.Nil(t, st.Initialized, "%.80q", input)
		require.Empty(t, st.written, "%.80q", input)
		rest, err := io.ReadAll(st.Input)
		require.NoError(t, err)
		require.Equal(t, input, string(rest))
	}
}

// TestAnswersExactlyWhatTheServerAccepts: the early path answers an initialize exactly when the server's
// own handling of it succeeds (both decode with protocol.DecodeParams).
func TestAnswersExactlyWhatTheServerAccepts(t *testing.T) {
	for _, params := range []string{
		``, `null`, `[]`, `7`, `"x"`, `{}`, `{"clientInfo":7}`, `{"clientInfo":{}}`, `{"clientInfo":{"name":"c"}}`,
		`{"clientInfo":{"name":"c","version":"1"}}`, `{"clientInfo":{"name":"c","version":"1"},"capabilities":null}`,
		`{"clientInfo":{"name":"c","version":"1"},"capabilities":{"experimentalApi":"yes"}}`,
		`{"clientInfo":{"name":"c","version":"1"},"capabilities":{"optOutNotificationMethods":[1]}}`,
		`{"clientInfo":{"name":"c","version":"1","title":null},"extra":1}`,
		`{"clientInfo":{"name":"c","version":"1"}} `, ` {"clientInfo":{"name":"c","version":"1"}}`,
	} {
		input := `{"id":1,"method":"initialize"`
		if params != "" {
			input += `,"params":` + params
		}
		input += "}\n"
		home := testHome(t)
		accepted := strings.Contains(serverOutput(t, home, input, false)[0], `"result":`)
		st := answerFor(t, home, input)
		require.Equal(t, accepted, st.Initialized != nil, "%s", input)
	}
}

// quickLines are first lines for TestQuickIsTheServers and the fuzz seeds: the shapes package quick
// answers and their near misses.
var quickLines = []string{
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	` { "jsonrpc" : "2.0" , "id" : -42 , "method" : "initialize" , "params" : { "clientInfo" : { "name" : "c" , "version" : "1" } } } ` + "\r",
	`{"params":{"capabilities":null,"clientInfo":{"title":"T","version":"1.2.3","name":"codex-tui"}},"method":"initialize","id":"abc"}`,
	`{"id":"x","method":"initialize","params":{"clientInfo":{"name":"c","title":null,"version":"1"},"capabilities":{"experimentalApi":true,"optOutNotificationMethods":["a","b"],"requestAttestation":false,"requiredHumanApproval":null}}}`,
	`{"id":0,"method":"initialize","params":{"clientInfo":{"name":"","version":""},"capabilities":{"optOutNotificationMethods":[]}}}`,
	`{"id":9223372036854775807,"method":"initialize","params":{"clientInfo":{"name":"héllo ✓ 𝄞","version":"<&>"}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"},"capabilities":{}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"\u0063","version":"1"}}}`,
	`{"id":-9223372036854775808,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":-9223372036854775809,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":19223372036854775807,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":-,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":9223372036854775808,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":01,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":1.0,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":null,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":1,"id":2,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"},"extra":1}}`,
	`{"id":1,"Method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"},"capabilities":{"extensions":{}}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"},"capabilities":{"experimentalApi":1}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"},"capabilities":{"optOutNotificationMethods":[1]}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c"}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}} x`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}},}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c\xff","version":"1"}}}`,
	`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c	","version":"1"}}}`,
	`{"id":1,"method":"initialize","result":{},"params":{"clientInfo":{"name":"c","version":"1"}}}`,
	`{"jsonrpc":2,"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
	"\v" + `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}`,
}

// TestQuickIsTheServers: package quick answers a first line only when this package's decoding (the
// server's) accepts it, with the same bytes and the same params.
func TestQuickIsTheServers(t *testing.T) {
	home := testHome(t)
	answeredQuickly := 0
	for _, line := range quickLines {
		if checkQuick(t, home, line) {
			answeredQuickly++
		}
	}
	require.Equal(t, 8, answeredQuickly)
}

func FuzzQuickIsTheServers(f *testing.F) {
	for _, line := range quickLines {
		f.Add(line)
	}
	home := testHome(f)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.Contains(line, "\n") {
			return
		}
		checkQuick(t, home, line)
	})
}

// checkQuick compares package quick's answer to line with this package's alone and reports whether
// quick answered it.
func checkQuick(t *testing.T, home, line string) bool {
	t.Helper()
	input := line + "\n" + `{"id":2,"method":"thread/list","params":{}}` + "\n"
	slow := slowAnswerFor(t, home, input)
	var out bytes.Buffer
	read, eol := firstline.ReadFirstLine(strings.NewReader(input))
	if !quick.Answer(read, eol, &out, home) {
		require.Empty(t, out.Bytes())
		return false
	}
	require.NotNil(t, slow.Initialized, "quick answered what the server refuses: %q", line)
	require.Equal(t, string(slow.written), out.String(), "%q", line)
	l, ok := quick.Parse(read, eol)
	require.True(t, ok)
	require.Equal(t, slow.Initialized.ClientInfo, protocol.ClientInfo{Name: l.Name, Title: l.Title, Version: l.Version})
	st := answerFor(t, home, input)
	require.Equal(t, slow.Initialized, st.Initialized)
	rest, err := io.ReadAll(st.Input)
	require.NoError(t, err)
	require.Equal(t, `{"id":2,"method":"thread/list","params":{}}`+"\n", string(rest))
	return true
}
