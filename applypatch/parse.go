// Package applypatch parses, plans and atomically applies the freeform
// `apply_patch` tool's patches, and renders the per-file and per-turn diffs
// and model-facing outputs the app-server reports for them.
package applypatch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Kind is the kind of a file operation, spelled as on the wire (PatchChangeKind.type).
type Kind string

// The three file operation kinds.
const (
	KindAdd    Kind = "add"
	KindDelete Kind = "delete"
	KindUpdate Kind = "update"
)

const (
	beginMarker   = "*** Begin Patch"
	endMarker     = "*** End Patch"
	addPrefix     = "*** Add File: "
	deletePrefix  = "*** Delete File: "
	updatePrefix  = "*** Update File: "
	movePrefix    = "*** Move to: "
	eofMarker     = "*** End of File"
	contextMarker = "@@"
)

// ErrEmptyPatch reports a well-formed patch that contains no file operation.
var ErrEmptyPatch = errors.New("empty patch")

// ParseError is a syntax error in a patch. Line is the 1-based line of the
// patch body it refers to, or 0 for errors about the envelope as a whole.
type ParseError struct {
	Line int
	Msg  string
}

// Error renders the error as the reference does ("invalid patch: …" or "invalid hunk at line N, …").
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "invalid patch: " + e.Msg
	}
	return fmt.Sprintf("invalid hunk at line %d, %s", e.Line, e.Msg)
}

// Patch is a parsed patch: an ordered list of file operations.
type Patch struct {
	Hunks []Hunk
}

// Hunk is one file operation of a patch.
type Hunk struct {
	Kind     Kind
	Path     string  // path as written in the patch
	MovePath string  // update only: destination as written, "" when not moved
	Contents string  // add only: the new file's contents
	Chunks   []Chunk // update only: the edits, in file order
	Line     int     // 1-based line of the hunk's header in the patch body
}

// Chunk is one `@@` section of an update: OldLines (context and removed lines)
// are replaced by NewLines (context and added lines).
type Chunk struct {
	Context   string // text after "@@ ", narrowing where the chunk applies; "" when absent
	OldLines  []string
	NewLines  []string
	EndOfFile bool // the chunk is anchored at the end of the file
}

var heredocStart = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:apply_patch\s+|applypatch\s+)?<<\s*(['"]?)(\w+)(['"]?)$`)
})

// Parse parses a patch. It tolerates surrounding whitespace, CRLF line
// endings and a shell heredoc wrapper (`<<'EOF'` … `EOF`, optionally preceded
// by `apply_patch`). A patch without file operations yields ErrEmptyPatch.
func Parse(input string) (*Patch, error) {
	lines := splitPatchLines(input)
	lines = stripHeredoc(lines)
	if len(lines) == 0 {
		return nil, &ParseError{Msg: "The last line of the patch must be '" + endMarker + "'"}
	}
	if strings.TrimSpace(lines[0]) != beginMarker {
		return nil, &ParseError{Msg: "The first line of the patch must be '" + beginMarker + "'"}
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return nil, &ParseError{Msg: "The last line of the patch must be '" + endMarker + "'"}
	}
	p := &parser{lines: lines[:len(lines)-1], pos: 1}
	patch := &Patch{}
	for p.pos < len(p.lines) {
		h, err := p.hunk()
		if err != nil {
			return nil, err
		}
		patch.Hunks = append(patch.Hunks, h)
	}
	if len(patch.Hunks) == 0 {
		return nil, ErrEmptyPatch
	}
	return patch, nil
}

func splitPatchLines(input string) []string {
	s := strings.TrimSpace(input)
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// stripHeredoc removes a `<<'EOF'` … `EOF` wrapper when both ends are present.
func stripHeredoc(lines []string) []string {
	if len(lines) < 2 {
		return lines
	}
	m := heredocStart().FindStringSubmatch(strings.TrimSpace(lines[0]))
	if m == nil || m[1] != m[3] || strings.TrimSpace(lines[len(lines)-1]) != m[2] {
		return lines
	}
	inner := lines[1 : len(lines)-1]
	for len(inner) > 0 && strings.TrimSpace(inner[0]) == "" {
		inner = inner[1:]
	}
	for len(inner) > 0 && strings.TrimSpace(inner[len(inner)-1]) == "" {
		inner = inner[:len(inner)-1]
	}
	return inner
}

type parser struct {
	lines []string // body without the End marker; lines[0] is the Begin marker
	pos   int
}

func (p *parser) errAt(idx int, format string, args ...any) error {
	return &ParseError{Line: idx + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) hunk() (Hunk, error) {
	start := p.pos
	raw := p.lines[start]
	header := strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(header, addPrefix) && strings.TrimSpace(header[len(addPrefix):]) != "":
		h := Hunk{Kind: KindAdd, Path: strings.TrimSpace(header[len(addPrefix):]), Line: start + 1}
		p.pos++
		var b strings.Builder
		for p.pos < len(p.lines) && strings.HasPrefix(p.lines[p.pos], "+") {
			b.WriteString(p.lines[p.pos][1:])
			b.WriteByte('\n')
			p.pos++
		}
		h.Contents = b.String()
		return h, nil
	case strings.HasPrefix(header, deletePrefix) && strings.TrimSpace(header[len(deletePrefix):]) != "":
		p.pos++
		return Hunk{Kind: KindDelete, Path: strings.TrimSpace(header[len(deletePrefix):]), Line: start + 1}, nil
	case strings.HasPrefix(header, updatePrefix) && strings.TrimSpace(header[len(updatePrefix):]) != "":
		h := Hunk{Kind: KindUpdate, Path: strings.TrimSpace(header[len(updatePrefix):]), Line: start + 1}
		p.pos++
		if p.pos < len(p.lines) {
			if mv := strings.TrimSpace(p.lines[p.pos]); strings.HasPrefix(mv, movePrefix) && strings.TrimSpace(mv[len(movePrefix):]) != "" {
				h.MovePath = strings.TrimSpace(mv[len(movePrefix):])
				p.pos++
			}
		}
		for p.pos < len(p.lines) {
			line := p.lines[p.pos]
			if strings.HasPrefix(strings.TrimSpace(line), "***") && strings.TrimSpace(line) != eofMarker {
				break
			}
			if strings.TrimSpace(line) == "" && p.blankBeforeHeader() {
				p.pos++ // a blank line separating chunks
				continue
			}
			c, err := p.chunk(len(h.Chunks) == 0)
			if err != nil {
				return Hunk{}, err
			}
			h.Chunks = append(h.Chunks, c)
		}
		if len(h.Chunks) == 0 {
			return Hunk{}, p.errAt(start, "Update file hunk for path '%s' is empty", h.Path)
		}
		return h, nil
	}
	return Hunk{}, p.errAt(start, "'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", header)
}

// blankBeforeHeader reports whether the blank lines at p.pos are followed by a
// chunk header, i.e. they separate two chunks.
func (p *parser) blankBeforeHeader() bool {
	i := p.pos
	for i < len(p.lines) && strings.TrimSpace(p.lines[i]) == "" {
		i++
	}
	return i < len(p.lines) && strings.HasPrefix(strings.TrimSpace(p.lines[i]), contextMarker)
}

func (p *parser) chunk(first bool) (Chunk, error) {
	var c Chunk
	head := strings.TrimSpace(p.lines[p.pos])
	switch {
	case head == contextMarker:
		p.pos++
	case strings.HasPrefix(head, contextMarker+" "):
		c.Context = strings.TrimSpace(head[len(contextMarker):])
		p.pos++
	case !first:
		return c, p.errAt(p.pos, "Expected update hunk to start with a @@ context marker, got: '%s'", p.lines[p.pos])
	}
	headerIdx := p.pos - 1
	n := 0
	for p.pos < len(p.lines) {
		line := p.lines[p.pos]
		if strings.TrimSpace(line) == eofMarker {
			if n == 0 {
				return c, p.errAt(p.pos, "Update hunk does not contain any lines")
			}
			c.EndOfFile = true
			p.pos++
			break
		}
		if strings.TrimSpace(line) == "" && n > 0 && p.blankBeforeHeader() {
			return c, nil
		}
		if line == "" {
			c.OldLines = append(c.OldLines, "")
			c.NewLines = append(c.NewLines, "")
		} else {
			switch line[0] {
			case ' ':
				c.OldLines = append(c.OldLines, line[1:])
				c.NewLines = append(c.NewLines, line[1:])
			case '-':
				c.OldLines = append(c.OldLines, line[1:])
			case '+':
				c.NewLines = append(c.NewLines, line[1:])
			default:
				if n == 0 {
					if strings.HasPrefix(strings.TrimSpace(line), "***") || strings.HasPrefix(strings.TrimSpace(line), contextMarker) {
						return c, p.errAt(headerIdx, "Update hunk does not contain any lines")
					}
					return c, p.errAt(p.pos, "Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", line)
				}
				return c, nil
			}
		}
		n++
		p.pos++
	}
	if n == 0 {
		return c, p.errAt(headerIdx, "Update hunk does not contain any lines")
	}
	return c, nil
}

var shellHeredoc = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:cd\s+('[^']*'|"[^"]*"|[^\s'"&;|]+)\s*&&\s*)?(?:apply_patch|applypatch)\s*<<\s*(['"]?)(\w+)(['"]?)$`)
})

// ShellInvocation recognises a shell script that is only an apply_patch heredoc, as a model sends it
// through a command tool (`apply_patch <<'EOF'` … `EOF`, optionally after `cd <dir> &&`). It returns the
// heredoc's body and the directory of the cd ("" without one); ok is false for any other script.
func ShellInvocation(script string) (body, dir string, ok bool) {
	lines := strings.Split(strings.TrimSpace(script), "\n")
	if len(lines) < 2 {
		return "", "", false
	}
	m := shellHeredoc().FindStringSubmatch(strings.TrimSpace(lines[0]))
	if m == nil || m[2] != m[4] || strings.TrimSpace(lines[len(lines)-1]) != m[3] {
		return "", "", false
	}
	dir = m[1]
	if len(dir) >= 2 && (dir[0] == '\'' || dir[0] == '"') {
		dir = dir[1 : len(dir)-1]
	}
	return strings.Join(lines[1:len(lines)-1], "\n") + "\n", dir, true
}
