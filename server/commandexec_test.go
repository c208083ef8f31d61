package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"appserver/config"
	"appserver/internal/pipesize"
	"appserver/internal/schematest"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/sandbox"
	"appserver/server"
)

// rawServer is an in-process server with a client that reads lines itself, when it wants to (no
// schema validation: it would dominate at streaming rates). Over OS pipes the server writes into
// the kernel's pipe buffer as stdio does; over io.Pipe every write waits for the client to read it.
type rawServer struct {
	in   io.Writer
	out  *bufio.Reader
	srv  *server.Server
	done chan error
	next int
}

func startRawServer(tb testing.TB, osPipes bool) *rawServer {
	tb.Helper()
	home := filepath.Join(tb.TempDir(), "codex_home")
	require.NoError(tb, os.MkdirAll(home, 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(home, "config.toml"), []byte("approval_policy = \"never\"\n"), 0o644))
	cfg, err := config.Load(home, nil)
	require.NoError(tb, err)
	srv := server.New(server.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var inR, outR io.ReadCloser
	var inW, outW io.WriteCloser
	if osPipes {
		var err error
		inR, inW, err = os.Pipe()
		require.NoError(tb, err)
		var out *os.File
		outR, out, err = os.Pipe()
		require.NoError(tb, err)
		_, _ = pipesize.Grow(out, pipesize.Bulk) // as cmd/appserver grows its stdout
		outW = out
	} else {
		inR, inW = io.Pipe()
		outR, outW = io.Pipe()
	}
	rs := &rawServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), srv: srv, done: make(chan error, 1)}
	go func() {
		rs.done <- srv.ServeConn(context.Background(), inR, outW)
		_ = outW.Close()
		_ = inR.Close()
	}()
	tb.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }() // let the server finish writing
		<-rs.done
		srv.Close()
		_ = outR.Close()
	})
	rs.call(tb, "initialize", map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "0"}}, nil)
	return rs
}

// send writes one request and returns its id.
func (rs *rawServer) send(tb testing.TB, method string, params any) int {
	tb.Helper()
	id := rs.next
	rs.next++
	line, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	require.NoError(tb, err)
	_, err = rs.in.Write(append(line, '\n'))
	require.NoError(tb, err)
	return id
}

// call sends a request and reads lines until its response, passing every other line to other.
func (rs *rawServer) call(tb testing.TB, method string, params any, other func(line []byte)) json.RawMessage {
	tb.Helper()
	return rs.await(tb, rs.send(tb, method, params), other)
}

// await reads lines until the response to id, passing every other line to other.
func (rs *rawServer) await(tb testing.TB, id int, other func(line []byte)) json.RawMessage {
	tb.Helper()
	prefix := fmt.Appendf(nil, `{"id":%d,`, id)
	for {
		line, err := readFullLine(rs.out)
		require.NoError(tb, err)
		if bytes.HasPrefix(line, prefix) {
			var m struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			require.NoError(tb, json.Unmarshal(line, &m))
			require.Nil(tb, m.Error, "%s failed: %s", method(line), m.Error)
			return m.Result
		}
		if other != nil {
			other(line)
		}
	}
}

func method(line []byte) string {
	var m struct{ Method string }
	_ = json.Unmarshal(line, &m)
	return m.Method
}

// readFullLine returns the next line without its newline; the slice is valid until the next read.
func readFullLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

var deltaKey = []byte(`"deltaBase64":"`)

// deltaLen returns the decoded size of a command/exec/outputDelta line's chunk (0 for other lines).
func deltaLen(line []byte) int {
	i := bytes.Index(line, deltaKey)
	if i < 0 {
		return 0
	}
	rest := line[i+len(deltaKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0
	}
	n := j / 4 * 3
	if j >= 2 && rest[j-1] == '=' {
		n--
		if rest[j-2] == '=' {
			n--
		}
	}
	return n
}

var deltaLinePrefix = []byte(`{"method":"command/exec/outputDelta","params":`)

// The deltas of a streamed command/exec are byte for byte what marshalling the protocol type gives,
// with emittedAtMs last, valid against the schema, in order per stream, at most 64 KiB each (as the
// reference's), with capReached on the chunk that reached the cap, and all before the command's reply.
func TestCommandExecStreamedDeltasWire(t *testing.T) {
	v, err := schematest.Default()
	require.NoError(t, err)
	rs := startRawServer(t, true)
	const processID = "p\"1 é\u2028<&>"
	const limit = 100_000
	var out, errOut []byte
	var capped int
	script := `printf 'a\000b'; printf err >&2; head -c 300000 /dev/zero`
	id := rs.send(t, "command/exec", map[string]any{
		"command": []string{"sh", "-c", script}, "processId": processID, "streamStdoutStderr": true,
		"outputBytesCap": limit, "sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
	})
	res := rs.await(t, id, func(line []byte) {
		require.NoError(t, v.ServerMessage(line, func(any) string { return "command/exec" }), "%.300s", line)
		if !bytes.Contains(line, []byte(`"method":"command/exec`)) {
			return // not about this command (remoteControl/status/changed after initialize)
		}
		require.True(t, bytes.HasPrefix(line, deltaLinePrefix), "%.300s", line)
		rest := line[len(deltaLinePrefix):]
		k := bytes.LastIndex(rest, []byte(`,"emittedAtMs":`))
		require.Positive(t, k)
		_, err := strconv.ParseInt(string(rest[k+len(`,"emittedAtMs":`):len(rest)-1]), 10, 64)
		require.NoError(t, err, "%s", rest[k:])
		require.Equal(t, byte('}'), rest[len(rest)-1])

		var p protocol.CommandExecOutputDeltaNotification
		require.NoError(t, json.Unmarshal(rest[:k], &p))
		want, err := jsonrpc.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, string(want), string(rest[:k]))
		require.Equal(t, processID, p.ProcessID)
		chunk, err := base64.StdEncoding.DecodeString(p.DeltaBase64)
		require.NoError(t, err)
		require.NotEmpty(t, chunk)
		require.LessOrEqual(t, len(chunk), 64<<10, "larger than the reference's deltas")
		switch p.Stream {
		case protocol.CommandExecOutputStreamStdout:
			require.Zero(t, capped, "a stdout delta after the cap")
			out = append(out, chunk...)
			if p.CapReached {
				capped++
			}
		case protocol.CommandExecOutputStreamStderr:
			require.False(t, p.CapReached)
			errOut = append(errOut, chunk...)
		default:
			t.Fatalf("stream %q", p.Stream)
		}
	})
	require.JSONEq(t, `{"exitCode":0,"stdout":"","stderr":""}`, string(res))
	require.Equal(t, 1, capped)
	require.Len(t, out, limit)
	require.Equal(t, []byte("a\x00b"), out[:3])
	require.Equal(t, make([]byte, limit-3), out[3:])
	require.Equal(t, "err", string(errOut))
	// Nothing of the command follows its reply.
	rs.call(t, "thread/loaded/list", map[string]any{}, func(line []byte) {
		require.NotContains(t, string(line), "command/exec", "after the reply")
	})
}

// A request answered while a 256 MiB stream is running is not queued behind the stream's output:
// with the client not reading, the stream fills every queue; once the request's reply is queued,
// at most the one delta being written when the client stopped comes before it.
func TestCommandExecStreamLeavesRoomForOtherReplies(t *testing.T) {
	rs := startRawServer(t, false) // every write waits for the client: nothing is buffered out of sight
	const total = 256 << 20
	execID := rs.send(t, "command/exec", map[string]any{
		"command": []string{"head", "-c", strconv.Itoa(total), "/dev/zero"}, "processId": "big",
		"streamStdoutStderr": true, "disableOutputCap": true, "disableTimeout": true,
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
	})
	streamed := 0
	for streamed == 0 {
		line, err := readFullLine(rs.out)
		require.NoError(t, err)
		streamed += deltaLen(line)
	}
	// Not reading: the writer blocks and the stream's deltas pile up in front of the server.
	listID := rs.send(t, "thread/loaded/list", map[string]any{})
	// Over io.Pipe a write returns once the server has read it, and the server dispatches each line
	// before reading the next: after this notification is read, the request above is in flight or
	// already answered.
	_, err := io.WriteString(rs.in, `{"method":"initialized"}`+"\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rs.srv.InFlightForTest() == 1 }, 60*time.Second, time.Millisecond,
		"thread/loaded/list was not answered while the stream ran")
	before := 0
	rs.await(t, listID, func(line []byte) {
		require.True(t, bytes.HasPrefix(line, deltaLinePrefix), "%.200s", line)
		before++
		streamed += deltaLen(line)
	})
	t.Logf("before=%d", before)
	require.LessOrEqual(t, before, 1, "the reply waited behind %d deltas", before)

	// The stream was still running; stop it. Its reply (137) follows its last delta. The two replies
	// may come in either order: the exec's reply is written as soon as the killed process is reaped.
	require.Less(t, streamed, total/2)
	termID := rs.send(t, "command/exec/terminate", map[string]any{"processId": "big"})
	execPrefix := fmt.Appendf(nil, `{"id":%d,`, execID)
	var res json.RawMessage
	execDone := false
	checkLine := func(line []byte) {
		if bytes.HasPrefix(line, execPrefix) {
			var m struct{ Result json.RawMessage }
			require.NoError(t, json.Unmarshal(line, &m))
			res, execDone = m.Result, true
			return
		}
		require.True(t, bytes.HasPrefix(line, deltaLinePrefix), "%.200s", line)
		require.False(t, execDone, "a delta followed command/exec's reply")
		streamed += deltaLen(line)
	}
	rs.await(t, termID, checkLine)
	if !execDone {
		res = rs.await(t, execID, checkLine)
	}
	require.JSONEq(t, `{"exitCode":137,"stdout":"","stderr":""}`, string(res))
	require.Less(t, streamed, total)
}

// A sandboxed command/exec writes straight into the pipe the server reads: the sandbox helper's
// stages hand their stdio down and exec the command, so a large output is not relayed through an
// extra process (which would copy every byte once more). The command prints which pipe its stdout
// is while it is still running; the server (this process) must hold the read end of that very pipe.
func TestCommandExecSandboxedOutputIsTheServersPipe(t *testing.T) {
	if ok, reason := sandbox.Available(); !ok {
		t.Skipf("the sandbox is unavailable on this machine: %s", reason)
	}
	rs := startRawServer(t, true)
	id := rs.send(t, "command/exec", map[string]any{
		"command": []string{"sh", "-c", "readlink /proc/self/fd/1; read x; exit 0"}, "processId": "sb",
		"streamStdin": true, "streamStdoutStderr": true, "sandboxPolicy": map[string]any{"type": "readOnly"},
	})
	var out []byte
	for !bytes.Contains(out, []byte("\n")) {
		line, err := readFullLine(rs.out)
		require.NoError(t, err)
		if !bytes.HasPrefix(line, deltaLinePrefix) {
			require.False(t, bytes.HasPrefix(line, fmt.Appendf(nil, `{"id":%d,`, id)), "ended early: %s", line)
			continue
		}
		var m struct {
			Params protocol.CommandExecOutputDeltaNotification
		}
		require.NoError(t, json.Unmarshal(line, &m))
		chunk, err := base64.StdEncoding.DecodeString(m.Params.DeltaBase64)
		require.NoError(t, err)
		require.Equal(t, protocol.CommandExecOutputStreamStdout, m.Params.Stream, "%s", chunk)
		out = append(out, chunk...)
	}
	pipe := strings.TrimSpace(string(out))
	require.Regexp(t, `^pipe:\[\d+\]$`, pipe)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	held := false
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && target == pipe {
			held = true
		}
	}
	require.True(t, held, "the command's stdout %s is not a pipe the server reads", pipe)
	rs.call(t, "command/exec/write", map[string]any{"processId": "sb", "closeStdin": true}, nil)
	res := rs.await(t, id, nil)
	require.JSONEq(t, `{"exitCode":0,"stdout":"","stderr":""}`, string(res))
}

// A buffered command/exec reply with megabytes of output (written by the writer goroutine in pieces) is
// byte for byte what encoding/json makes of the whole result, including UTF-8 sequences and escapes on
// both sides of the pieces' boundaries.
func TestCommandExecLargeBufferedReplyWire(t *testing.T) {
	rs := startRawServer(t, true)
	script := `i=0; while [ $i -lt 40000 ]; do printf 'caf\303\251 \360\237\230\200 \342\200\250 "q\\ \t\001 \377\360\237 '; i=$((i+1)); done; head -c 1500000 /dev/zero; printf 'end\342\200' >&2; exit 3`
	id := rs.send(t, "command/exec", map[string]any{
		"command": []string{"sh", "-c", script}, "disableOutputCap": true,
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
	})
	prefix := fmt.Appendf(nil, `{"id":%d,`, id)
	var line []byte
	for line == nil {
		l, err := readFullLine(rs.out)
		require.NoError(t, err)
		if bytes.HasPrefix(l, prefix) {
			line = append([]byte(nil), l...)
		}
	}
	unit := "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8 \"q\\ \t\x01 \xff\xf0\x9f "
	stdout := strings.Repeat(unit, 40000) + strings.Repeat("\x00", 1500000)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(map[string]any{"id": id, "result": struct {
		ExitCode int    `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}{3, stdout, "end\xe2\x80"}}))
	require.True(t, bytes.Equal(bytes.TrimSuffix(want.Bytes(), []byte("\n")), line), "the reply differs (%d bytes, want %d)", len(line), want.Len()-1)
}
