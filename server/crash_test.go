package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/internal/mockmodel"
)

// procClient speaks JSON-RPC to a real appserver process over its stdin/stdout.
type procClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []map[string]any
	cursor int
	nextID int
	eof    bool
}

func startProc(t *testing.T, bin, home string) *procClient {
	t.Helper()
	cmd := exec.Command(bin, "app-server")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	cmd.Dir = filepath.Join(filepath.Dir(home), "work")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &procClient{t: t, cmd: cmd, in: in}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.mu.Lock()
				p.msgs = append(p.msgs, m)
				p.cond.Broadcast()
				p.mu.Unlock()
			}
		}
		p.mu.Lock()
		p.eof = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

func (p *procClient) wait(pred func(map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	timer := time.AfterFunc(20*time.Second, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for i := p.cursor; i < len(p.msgs); i++ {
			if pred(p.msgs[i]) {
				p.cursor = i + 1
				return p.msgs[i]
			}
		}
		if p.eof || time.Now().After(deadline) {
			p.t.Fatalf("awaited message never came (eof=%v)", p.eof)
		}
		p.cond.Wait()
	}
}

func (p *procClient) request(method string, params any) map[string]any {
	p.t.Helper()
	p.mu.Lock()
	id := p.nextID
	p.nextID++
	p.mu.Unlock()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(p.t, err)
	_, err = p.in.Write(append(b, '\n'))
	require.NoError(p.t, err)
	m := p.wait(func(m map[string]any) bool {
		v, ok := m["id"].(float64)
		_, isReq := m["method"]
		return ok && !isReq && int(v) == id
	})
	require.Nil(p.t, m["error"], "%s: %v", method, m["error"])
	return m["result"].(map[string]any)
}

func (p *procClient) initialize() {
	p.t.Helper()
	p.request("initialize", map[string]any{"clientInfo": map[string]any{"name": "crashtest", "version": "1"}})
	b, _ := json.Marshal(map[string]any{"method": "initialized"})
	_, err := p.in.Write(append(b, '\n'))
	require.NoError(p.t, err)
}

func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "appserver")
	out, err := exec.Command("go", "build", "-o", bin, "appserver/cmd/appserver").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func TestSIGKILLMidTurnThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server 20 times")
	}
	bin := buildServer(t)
	mm := mockmodel.New(t)
	base := t.TempDir()
	home := filepath.Join(base, "codex_home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "work"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "Mock Responses API"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, mm.URL())), 0o644))

	const rounds = 20
	var tid string
	for i := 0; i < rounds; i++ {
		mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{
			mockmodel.Message(fmt.Sprintf("kept %d", i), 1),
			{Type: "message", Text: "this reply is cut off by the kill", Chunks: 4, HangAfterChunks: mockmodel.Int(1), MaxS: 30},
		}})
		p := startProc(t, bin, home)
		p.initialize()
		if i == 0 {
			res := p.request("thread/start", map[string]any{"cwd": filepath.Join(base, "work")})
			tid = res["thread"].(map[string]any)["id"].(string)
		} else {
			res := p.request("thread/resume", map[string]any{"threadId": tid})
			turns := res["thread"].(map[string]any)["turns"].([]any)
			require.Len(t, turns, i, "round %d", i)
			last := turns[i-1].(map[string]any)
			require.Equal(t, "interrupted", last["status"])
			require.Contains(t, fmt.Sprint(last["items"]), fmt.Sprintf("kept %d", i-1), "a completed item survives the kill")
		}
		p.request("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": fmt.Sprintf("message %d", i)}}})
		// The second message's first delta: the kill lands mid-stream, after "kept i" completed.
		p.wait(func(m map[string]any) bool {
			if m["method"] != "item/agentMessage/delta" {
				return false
			}
			return strings.HasSuffix(m["params"].(map[string]any)["itemId"].(string), "_1")
		})
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		_ = p.cmd.Wait()
	}

	mm.Enqueue(mockmodel.Response{Items: []mockmodel.Item{mockmodel.Message("survived", 1)}})
	p := startProc(t, bin, home)
	p.initialize()
	res := p.request("thread/resume", map[string]any{"threadId": tid})
	require.Len(t, res["thread"].(map[string]any)["turns"].([]any), rounds)
	p.request("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "final"}}})
	p.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	reqs := mm.ResponseRequests()
	joined := strings.Join(inputTexts(reqs[len(reqs)-1]), "\n")
	for i := 0; i < rounds; i++ {
		require.Contains(t, joined, fmt.Sprintf("user:message %d", i))
		require.Contains(t, joined, fmt.Sprintf("assistant:kept %d", i))
	}
	require.NotContains(t, joined, "cut off")
	// Every line on disk is whole JSON.
	for _, k := range recordKinds(t, rolloutFile(t, home, tid)) {
		require.NotEmpty(t, k)
	}
}
