package execmgr

import (
	"fmt"
	"sync"
)

// DefaultOutputCap is the aggregate output cap (1 MiB) of a process transcript.
const DefaultOutputCap = 1 << 20

// HeadTailBuffer keeps the first and last halves of a byte stream up to a fixed cap, dropping the middle.
// It is safe for concurrent use.
type HeadTailBuffer struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	tail    []byte // may hold more than tailCap bytes; only the last tailCap count
	total   int64
}

// NewHeadTailBuffer returns a buffer keeping at most capBytes bytes: the first half and the last half.
// capBytes <= 0 means DefaultOutputCap.
func NewHeadTailBuffer(capBytes int) *HeadTailBuffer {
	if capBytes <= 0 {
		capBytes = DefaultOutputCap
	}
	h := capBytes / 2
	return &HeadTailBuffer{headCap: h, tailCap: capBytes - h}
}

// Write appends p; it never fails.
func (b *HeadTailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= b.tailCap {
		b.tail = append(b.tail[:0], p[len(p)-b.tailCap:]...)
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailCap {
		k := copy(b.tail, b.tail[len(b.tail)-b.tailCap:])
		b.tail = b.tail[:k]
	}
	return n, nil
}

// Total reports how many bytes were written since the last reset.
func (b *HeadTailBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Omitted reports how many bytes were dropped from the middle.
func (b *HeadTailBuffer) Omitted() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.omittedLocked()
}

func (b *HeadTailBuffer) omittedLocked() int64 {
	return b.total - int64(len(b.head)) - int64(min(len(b.tail), b.tailCap))
}

// Bytes renders the kept bytes: head, then `\n... N bytes omitted ...\n` when something was dropped, then tail.
func (b *HeadTailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.renderLocked()
}

// String is Bytes as a string.
func (b *HeadTailBuffer) String() string { return string(b.Bytes()) }

// Drain renders the buffer like Bytes and resets it.
func (b *HeadTailBuffer) Drain() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.renderLocked()
	b.head, b.tail, b.total = nil, nil, 0
	return out
}

// DrainTotal is Drain that also reports how many bytes were written since the last reset, kept or not.
func (b *HeadTailBuffer) DrainTotal() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, total := b.renderLocked(), b.total
	b.head, b.tail, b.total = nil, nil, 0
	return out, total
}

func (b *HeadTailBuffer) renderLocked() []byte {
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	omitted := b.omittedLocked()
	out := make([]byte, 0, len(b.head)+len(tail)+40)
	out = append(out, b.head...)
	if omitted > 0 {
		out = fmt.Appendf(out, "\n... %d bytes omitted ...\n", omitted)
	}
	return append(out, tail...)
}
