package jsonrpc

import (
	"bufio"
	"context"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// retainedMiB is the memory the Go runtime holds from the system (mapped and not released), in MiB.
func retainedMiB() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()-s[1].Value.Uint64()) >> 20
}

// peakRSSMiB reads VmHWM, the process's peak resident size.
func peakRSSMiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb >> 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A 100 MiB line costs about twice its size while it is read and decoded, and the memory is given
// back once its request is over (before: ~5x at peak, and ~300 MiB kept for minutes).
func TestHugeLineMemoryIsBoundedAndGivenBack(t *testing.T) {
	const size = 100 << 20
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &funcHandler{req: func(_ context.Context, r *Request) (any, error) { return map[string]int{"n": len(r.Params)}, nil }}
	c := NewConn(inR, outW, h, Options{ReleaseMemory: debug.FreeOSMemory})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()); _ = outW.Close() }()
	sc := bufio.NewScanner(outR)

	base := retainedMiB()
	resetPeak := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	basePeak := peakRSSMiB(t)
	go func() {
		chunk := []byte(strings.Repeat("x", 1<<20))
		_, _ = io.WriteString(inW, `{"id":1,"method":"x","params":{"s":"`)
		for range size >> 20 {
			_, _ = inW.Write(chunk)
		}
		_, _ = io.WriteString(inW, `"}}`+"\n")
	}()
	require.True(t, sc.Scan())
	require.Equal(t, `{"id":1,"result":{"n":`+strconv.Itoa(size+8)+`}}`, sc.Text())
	if resetPeak && !raceEnabled {
		grew := peakRSSMiB(t) - basePeak
		require.Less(t, grew, int64(size>>20)*5/2, "peak resident growth %d MiB for a %d MiB line", grew, size>>20)
	}
	require.Eventually(t, func() bool { return retainedMiB()-base < 32 }, time.Minute, 10*time.Millisecond,
		"the line's memory was kept")
	require.NoError(t, inW.Close())
	require.NoError(t, <-runErr)
}
