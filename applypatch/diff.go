package applypatch

import (
	"fmt"
	"strings"
)

// maxEditDistance bounds the Myers search; beyond it the differing middle is
// reported as one replacement, keeping memory use bounded on huge rewrites.
const maxEditDistance = 2000

type opKind byte

const (
	opEqual opKind = ' '
	opDel   opKind = '-'
	opIns   opKind = '+'
)

type edit struct {
	kind opKind
	a, b int // index into the old (a) and new (b) line slices
}

// splitLinesKeepEnds splits s into lines that keep their "\n" terminator; a
// final line without one is kept as is.
func splitLinesKeepEnds(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := 0; i < pre; i++ {
		out = append(out, edit{opEqual, i, i})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		out = append(out, edit{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

// myers computes a shortest edit script with Myers' O(ND) algorithm; offA and
// offB shift the reported indices.
func myers(a, b []string, offA, offB int) []edit {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m, offA, offB)
	}
	maxD := n + m
	if maxD > maxEditDistance {
		maxD = maxEditDistance
	}
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		snap := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
			}
		}
		for k := -d; k <= d; k++ {
			snap[k+d] = v[off+k]
		}
		trace = append(trace, snap)
	}
	if found < 0 {
		return replaceAll(n, m, offA, offB)
	}
	get := func(d, k int) int {
		if k < -d || k > d {
			return -1
		}
		return trace[d][k+d]
	}
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		k := x - y
		var prevK int
		if k == -d || (k != d && get(d-1, k-1) < get(d-1, k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := get(d-1, prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{opEqual, offA + x, offB + y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{opIns, offA + x, offB + y})
		} else {
			x--
			rev = append(rev, edit{opDel, offA + x, offB + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{opEqual, offA + x, offB + y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return normalizeOrder(out)
}

// normalizeOrder puts deletions before insertions within each run of changes,
// the conventional unified-diff presentation.
func normalizeOrder(es []edit) []edit {
	out := make([]edit, 0, len(es))
	for i := 0; i < len(es); {
		if es[i].kind == opEqual {
			out = append(out, es[i])
			i++
			continue
		}
		j := i
		for j < len(es) && es[j].kind != opEqual {
			j++
		}
		for _, e := range es[i:j] {
			if e.kind == opDel {
				out = append(out, e)
			}
		}
		for _, e := range es[i:j] {
			if e.kind == opIns {
				out = append(out, e)
			}
		}
		i = j
	}
	return out
}

func replaceAll(n, m, offA, offB int) []edit {
	out := make([]edit, 0, n+m)
	for i := 0; i < n; i++ {
		out = append(out, edit{opDel, offA + i, offB})
	}
	for j := 0; j < m; j++ {
		out = append(out, edit{opIns, offA + n, offB + j})
	}
	return out
}

// unifiedHunks renders the @@ hunks (no file headers) of the line diff from
// oldText to newText with the given number of context lines. Lines lacking a
// final newline are followed by "\ No newline at end of file".
func unifiedHunks(oldText, newText string, context int) string {
	a, b := splitLinesKeepEnds(oldText), splitLinesKeepEnds(newText)
	es := diffLines(a, b)
	var sb strings.Builder
	for i := 0; i < len(es); {
		if es[i].kind == opEqual {
			i++
			continue
		}
		// Grow the hunk [start,end) over changes separated by at most 2*context equal lines.
		start := i - context
		if start < 0 {
			start = 0
		}
		for start < i && es[start].kind != opEqual {
			start++
		}
		end := i
		for {
			for end < len(es) && es[end].kind != opEqual {
				end++
			}
			gap := end
			for gap < len(es) && es[gap].kind == opEqual {
				gap++
			}
			if gap < len(es) && gap-end <= 2*context {
				end = gap
				continue
			}
			end += context
			if end > gap {
				end = gap
			}
			break
		}
		writeHunk(&sb, es[start:end], a, b)
		i = end
	}
	return sb.String()
}

func writeHunk(sb *strings.Builder, es []edit, a, b []string) {
	oldStart, newStart := es[0].a, es[0].b
	oldCount, newCount := 0, 0
	for _, e := range es {
		switch e.kind {
		case opEqual:
			oldCount++
			newCount++
		case opDel:
			oldCount++
		case opIns:
			newCount++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(oldStart, oldCount), hunkRange(newStart, newCount))
	for _, e := range es {
		var line string
		switch e.kind {
		case opEqual, opDel:
			line = a[e.a]
		case opIns:
			line = b[e.b]
		}
		sb.WriteByte(byte(e.kind))
		sb.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a 0-based start and a count as unified diff does: "l,n",
// "l" when n is 1, and the preceding line number when n is 0.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}
