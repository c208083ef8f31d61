package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pieceResult writes {"s":"aaa…"} in n writes of size bytes, calling mid after the first.
type pieceResult struct {
	n, size int
	mid     func()
}

func (p pieceResult) WriteJSON(w io.Writer) error {
	if _, err := io.WriteString(w, `{"s":"`); err != nil {
		return err
	}
	piece := strings.Repeat("a", p.size)
	for i := range p.n {
		if _, err := io.WriteString(w, piece); err != nil {
			return err
		}
		if i == 0 && p.mid != nil {
			p.mid()
		}
	}
	_, err := io.WriteString(w, `"}`)
	return err
}

func (p pieceResult) want(id string) string {
	return `{"id":` + id + `,"result":{"s":"` + strings.Repeat("a", p.n*p.size) + `"}}`
}

// startConn runs a Conn over w and returns the writer of its input and a wait for Run's end.
func startConn(t *testing.T, w io.Writer, h Handler) (*Conn, *io.PipeWriter, func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	c := NewConn(inR, w, h, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	return c, inW, func() error { _ = inW.Close(); return <-runErr }
}

// TestStreamedReplyIsWrittenInPieces: a Streamed result reaches the output as its own writes, each large
// one passed straight through (never joined into one line in memory), and a line queued meanwhile
// follows the whole reply.
func TestStreamedReplyIsWrittenInPieces(t *testing.T) {
	w := &countWriter{}
	var conn *Conn
	res := pieceResult{n: 8, size: 256 << 10, mid: func() { require.NoError(t, conn.Notify("during", nil)) }}
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) { return Streamed(res), nil }}
	c, inW, wait := startConn(t, w, h)
	conn = c
	_, err := io.WriteString(inW, `{"id":"s-1","method":"big","params":{}}`+"\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, out := w.state(); return strings.Contains(out, `"during"`) },
		30*time.Second, time.Millisecond)
	require.NoError(t, wait())
	writes, out := w.state()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2)
	require.True(t, lines[0] == res.want(`"s-1"`), "the reply line differs: %.80s…", lines[0])
	require.True(t, strings.HasPrefix(lines[1], `{"method":"during"`), "%s", lines[1])
	require.GreaterOrEqual(t, writes, res.n, "the reply was joined before writing")
}

// failAfter fails every write after the first n.
type failAfter struct {
	mu sync.Mutex
	n  int
}

func (f *failAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return 0, errors.New("broken pipe")
	}
	f.n--
	return len(p), nil
}

// TestStreamedReplyWriteErrorEndsOutput: a write failing in the middle of a streamed reply ends the
// connection's output, as any failed write does.
func TestStreamedReplyWriteErrorEndsOutput(t *testing.T) {
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) {
		return Streamed(pieceResult{n: 8, size: 256 << 10}), nil
	}}
	c, inW, wait := startConn(t, &failAfter{n: 2}, h)
	_, err := io.WriteString(inW, `{"id":1,"method":"big","params":{}}`+"\n")
	require.NoError(t, err)
	select {
	case <-c.Context().Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the failed write did not end the connection")
	}
	require.NoError(t, wait())
}

// TestRunEndsWithoutErrorWhenOutputCloses: a connection whose output closed ends as at EOF (Run
// returns nil), also when the reader reads a line after the output broke (it then sees the
// connection's context ended; it used to return "context canceled").
func TestRunEndsWithoutErrorWhenOutputCloses(t *testing.T) {
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) { return "ok", nil }}
	inR, inW, err := os.Pipe() // buffered by the kernel: the late line is written whether read or not
	require.NoError(t, err)
	defer inR.Close()
	started := make(chan struct{})
	c := NewConn(inR, &failAfter{n: 0}, h, Options{BeforeRead: func() { close(started) }})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	<-started // Run has set up the connection's context
	_, err = io.WriteString(inW, `{"id":1,"method":"a","params":{}}`+"\n")
	require.NoError(t, err)
	select {
	case <-c.Context().Done():
	case <-time.After(time.Minute):
		t.Fatal("the failed write did not end the connection")
	}
	_, err = io.WriteString(inW, `{"method":"late","params":{}}`+"\n")
	require.NoError(t, err)
	require.NoError(t, inW.Close())
	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
}

// TestEncodeResultOfStreamed: EncodeResult frames a Streamed result as Reply writes it.
func TestEncodeResultOfStreamed(t *testing.T) {
	res := pieceResult{n: 3, size: 5}
	require.Equal(t, res.want("9"), string(EncodeResult(json.RawMessage("9"), Streamed(res))))
}
