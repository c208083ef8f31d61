package execmgr

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// capture of a process's streams for tests.
type streams struct {
	mu       sync.Mutex
	out, err strings.Builder
	order    strings.Builder
}

func (s *streams) on(st Stream, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == Stderr {
		s.err.Write(b)
	} else {
		s.out.Write(b)
	}
	s.order.Write(b)
}

func (s *streams) get() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String(), s.err.String()
}

// testEnv is this process's environment with HOME pointing at an empty directory, so that login shells
// do not run the machine's profile scripts.
func testEnv(t *testing.T) []string {
	t.Helper()
	return MergeEnv(os.Environ(), "HOME="+t.TempDir())
}

func newTestManager(t *testing.T) *Manager {
	t.Helper()
	m := NewManager(ManagerOptions{})
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func waitDone(t *testing.T, p *Process, d time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err, "process did not finish in %v", d)
	return code
}

// groupMembers lists the pids whose process group is pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(groupMembers(t, pgid)) == 0 }, time.Minute, 20*time.Millisecond,
		"process group %d still has members", pgid)
}

func errorAs(err error, target any) bool { return errors.As(err, target) }
