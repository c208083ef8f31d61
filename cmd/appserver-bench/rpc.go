package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// maxLineBuffer is the largest line rpcConn parses as is; longer lines
// (a 256 MiB command/exec result is ~1.5 GiB of JSON) are compacted while
// they stream in. A variable so tests can exercise the long-line path.
var maxLineBuffer = 16 << 20

// message is one JSON-RPC message read from a server.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`

	// deltaBytes is the decoded size of a command/exec/outputDelta chunk
	// taken by the fast path; Params is then left empty.
	deltaBytes int64
}

// isResponse reports whether m answers request id.
func (m *message) isResponse(id int) bool {
	return m.Method == "" && string(m.ID) == strconv.Itoa(id)
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	method string
	raw    string
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s failed: %s", e.method, e.raw) }

// deadliner is implemented by the *os.File pipes os/exec hands out.
type deadliner interface{ SetDeadline(time.Time) error }

// rpcConn is one running server process under test, driven synchronously:
// the caller writes a request, then reads messages until what it awaits.
type rpcConn struct {
	cmd     *exec.Cmd
	dir     string // run directory, removed by close
	home    string // HOME and cwd of the server
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	r       *bufio.Reader
	errTail *tailBuffer
	nextID  int
	timeout time.Duration // per call
	cancel  context.CancelFunc
}

// startConn creates a run directory under workdir with config.toml as the
// CODEX_HOME config, starts c there and performs the initialize handshake.
func startConn(ctx context.Context, c command, workdir, config string, timeout time.Duration) (*rpcConn, error) {
	return startConnPrep(ctx, c, workdir, config, timeout, nil)
}

// startConnPrep is startConn with prep (when non-nil) run on the CODEX_HOME before the server starts.
func startConnPrep(ctx context.Context, c command, workdir, config string, timeout time.Duration, prep func(codexHome string) error) (*rpcConn, error) {
	dir, err := os.MkdirTemp(workdir, "run-")
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	codexHome, home := filepath.Join(dir, "codex"), filepath.Join(dir, "home")
	for _, d := range []string{codexHome, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("create run dir: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write config.toml: %w", err)
	}
	if prep != nil {
		if err := prep(codexHome); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = append(append(os.Environ(), c.env...), "HOME="+home, "CODEX_HOME="+codexHome)
	cmd.Dir = home
	cmd.WaitDelay = 5 * time.Second
	// Own process group, so killing it also stops helpers the server spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	rc := &rpcConn{cmd: cmd, dir: dir, home: home, errTail: &tailBuffer{max: 4096}, timeout: timeout, cancel: cancel, nextID: 1}
	cmd.Stderr = rc.errTail
	fail := func(err error) (*rpcConn, error) {
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	if rc.stdin, err = cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	if rc.stdout, err = cmd.StdoutPipe(); err != nil {
		return fail(err)
	}
	rc.r = bufio.NewReaderSize(rc.stdout, maxLineBuffer)
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	if _, err := rc.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "0"}}, nil); err != nil {
		rc.close()
		return nil, err
	}
	if err := rc.notify("initialized"); err != nil {
		rc.close()
		return nil, err
	}
	return rc, nil
}

// pid returns the server's process id.
func (rc *rpcConn) pid() int { return rc.cmd.Process.Pid }

// withStderr decorates err with the server's stderr tail.
func (rc *rpcConn) withStderr(err error) error { return withStderr(err, rc.errTail) }

// close ends the server (stdin EOF, then SIGKILL to its group after a
// grace period) and removes the run directory.
func (rc *rpcConn) close() {
	_ = rc.stdin.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, rc.stdout)
	}()
	t := time.AfterFunc(5*time.Second, rc.cancel)
	_ = rc.cmd.Wait()
	t.Stop()
	rc.cancel()
	<-done
	os.RemoveAll(rc.dir)
}

func (rc *rpcConn) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if d, ok := rc.stdin.(deadliner); ok {
		_ = d.SetDeadline(time.Now().Add(rc.timeout))
	}
	if _, err := rc.stdin.Write(append(data, '\n')); err != nil {
		return rc.withStderr(fmt.Errorf("write request: %w", err))
	}
	return nil
}

func (rc *rpcConn) notify(method string) error {
	return rc.write(map[string]any{"method": method})
}

// send writes a request and returns its id.
func (rc *rpcConn) send(method string, params any) (int, error) {
	id := rc.nextID
	rc.nextID++
	return id, rc.write(map[string]any{"id": id, "method": method, "params": params})
}

// call sends a request and reads until its response, handing every other
// message to onOther (which may be nil). It returns the result.
func (rc *rpcConn) call(method string, params any, onOther func(*message) error) (json.RawMessage, error) {
	id, err := rc.send(method, params)
	if err != nil {
		return nil, err
	}
	return rc.await(method, id, onOther)
}

// await reads until the response to request id.
func (rc *rpcConn) await(method string, id int, onOther func(*message) error) (json.RawMessage, error) {
	deadline := time.Now().Add(rc.timeout)
	for {
		m, err := rc.next(deadline)
		if err != nil {
			return nil, fmt.Errorf("awaiting %s response: %w", method, err)
		}
		if m.isResponse(id) {
			if m.Error != nil || m.Result == nil {
				return nil, &rpcError{method: method, raw: string(bytes.TrimSpace(m.Error))}
			}
			return m.Result, nil
		}
		if err := rc.other(m, onOther); err != nil {
			return nil, err
		}
	}
}

// other handles a message nobody awaits: server requests are answered with
// an error (benchmarks never expect approvals), the rest goes to onOther.
func (rc *rpcConn) other(m *message, onOther func(*message) error) error {
	if m.Method != "" && m.ID != nil {
		if err := rc.write(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "appserver-bench does not handle " + m.Method}}); err != nil {
			return err
		}
		return fmt.Errorf("unexpected server request %s", m.Method)
	}
	if onOther != nil {
		return onOther(m)
	}
	return nil
}

// next returns the next JSON message on stdout, skipping lines that are not
// JSON objects.
func (rc *rpcConn) next(deadline time.Time) (*message, error) {
	if d, ok := rc.stdout.(deadliner); ok {
		_ = d.SetDeadline(deadline)
	}
	for {
		line, compacted, err := rc.readLine()
		if len(line) > 0 {
			m, ok := parseMessage(line)
			if ok {
				return m, nil
			}
			if compacted {
				return nil, fmt.Errorf("unparsable long line (compacted: %.300s)", line)
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, rc.withStderr(fmt.Errorf("timed out after %v", rc.timeout))
			}
			return nil, rc.withStderr(errors.New("server closed stdout"))
		}
	}
}

// readLine returns the next line; a line longer than maxLineBuffer comes
// back compacted (see compactor). The slice is valid until the next call.
func (rc *rpcConn) readLine() (line []byte, compacted bool, err error) {
	line, err = rc.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, false, err
	}
	var c compactor
	for {
		if cerr := c.write(line); cerr != nil {
			return nil, true, cerr
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return c.bytes(), true, err
		}
		line, err = rc.r.ReadSlice('\n')
	}
}

var (
	outputDeltaMethod = []byte(`"method":"command/exec/outputDelta"`)
	deltaKey          = []byte(`"deltaBase64":"`)
)

// parseMessage decodes one line. command/exec/outputDelta notifications take
// a fast path that only measures the base64 payload, so the client does not
// become the bottleneck of a throughput run.
func parseMessage(line []byte) (*message, bool) {
	if bytes.Contains(line, outputDeltaMethod) {
		if i := bytes.Index(line, deltaKey); i >= 0 {
			rest := line[i+len(deltaKey):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				if n, ok := base64Len(rest[:j]); ok {
					return &message{Method: "command/exec/outputDelta", deltaBytes: n}, true
				}
			}
		}
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, false
	}
	if m.Method == "command/exec/outputDelta" {
		var p struct {
			DeltaBase64 string `json:"deltaBase64"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return nil, false
		}
		n, ok := base64Len([]byte(p.DeltaBase64))
		if !ok {
			return nil, false
		}
		m.deltaBytes = n
	}
	return &m, true
}

// base64Len returns the decoded length of padded standard base64 s.
func base64Len(s []byte) (int64, bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	n := int64(len(s)) / 4 * 3
	if bytes.HasSuffix(s, []byte("==")) {
		n -= 2
	} else if bytes.HasSuffix(s, []byte("=")) {
		n--
	}
	return n, true
}
