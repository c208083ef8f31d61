package applypatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode"

	"appserver/internal/oserr"
)

// Plan is a patch resolved against the file system: every file's new content
// computed in memory, nothing written yet.
type Plan struct {
	// Cwd is the directory relative patch paths were resolved against.
	Cwd string
	// Files holds one entry per patch hunk, in patch order.
	Files []FileChange

	final    map[string]*fileState // absolute path -> state after the whole patch
	snapshot map[string]*fileState // absolute path -> disk state read while planning
}

// FileChange is the planned effect of one hunk.
type FileChange struct {
	Kind        Kind
	Path        string // absolute path of the file the hunk names
	MovePath    string // absolute destination of a move, "" when not moved
	DisplayPath string // path as written in the patch (destination for moves)
	OldContent  string // content before the hunk ("" for a new file)
	NewContent  string // content after the hunk ("" for a deletion)
}

type fileState struct {
	exists  bool
	content string
}

// PlanError is a failure to plan a patch against the file system, such as a
// missing file or a hunk whose lines are not found. Its text is the reference's.
type PlanError struct {
	Msg string
	Err error // underlying cause, if any
}

// Error returns the message.
func (e *PlanError) Error() string { return e.Msg }

// Unwrap returns the underlying cause.
func (e *PlanError) Unwrap() error { return e.Err }

// Plan resolves the patch's paths against cwd, reads the current files and
// computes every new content in memory. Later hunks see earlier hunks' results.
func (p *Patch) Plan(cwd string) (*Plan, error) {
	pl := &Plan{Cwd: cwd, final: map[string]*fileState{}, snapshot: map[string]*fileState{}}
	for _, h := range p.Hunks {
		abs := resolve(cwd, h.Path)
		switch h.Kind {
		case KindAdd:
			old, _ := pl.peek(abs)
			pl.final[abs] = &fileState{exists: true, content: h.Contents}
			pl.Files = append(pl.Files, FileChange{Kind: KindAdd, Path: abs, DisplayPath: h.Path, OldContent: old.content, NewContent: h.Contents})
		case KindDelete:
			old, err := pl.read(abs)
			if err != nil {
				return nil, &PlanError{Msg: fmt.Sprintf("Failed to read %s: %s", abs, oserr.Text(err)), Err: err}
			}
			pl.final[abs] = &fileState{}
			pl.Files = append(pl.Files, FileChange{Kind: KindDelete, Path: abs, DisplayPath: h.Path, OldContent: old})
		case KindUpdate:
			old, err := pl.read(abs)
			if err != nil {
				return nil, &PlanError{Msg: fmt.Sprintf("Failed to read file to update %s: %s", abs, oserr.Text(err)), Err: err}
			}
			newContent, err := applyChunks(old, h.Chunks, abs)
			if err != nil {
				return nil, err
			}
			fc := FileChange{Kind: KindUpdate, Path: abs, DisplayPath: h.Path, OldContent: old, NewContent: newContent}
			dest := abs
			if h.MovePath != "" {
				dest = resolve(cwd, h.MovePath)
				fc.MovePath = dest
				fc.DisplayPath = h.MovePath
			}
			if dest != abs {
				pl.final[abs] = &fileState{}
			}
			pl.final[dest] = &fileState{exists: true, content: newContent}
			pl.Files = append(pl.Files, fc)
		default:
			return nil, fmt.Errorf("applypatch: unknown hunk kind %q", h.Kind)
		}
	}
	return pl, nil
}

func resolve(cwd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// peek returns the planned or on-disk state of abs, recording disk reads.
func (pl *Plan) peek(abs string) (fileState, error) {
	if st, ok := pl.final[abs]; ok {
		return *st, nil
	}
	if st, ok := pl.snapshot[abs]; ok {
		return *st, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			pl.snapshot[abs] = &fileState{}
			return fileState{}, err
		}
		return fileState{}, err
	}
	st := &fileState{exists: true, content: string(data)}
	pl.snapshot[abs] = st
	return *st, nil
}

// read returns the content abs has at this point of the plan, or an error if it does not exist.
func (pl *Plan) read(abs string) (string, error) {
	st, err := pl.peek(abs)
	if err != nil {
		return "", err
	}
	if !st.exists {
		return "", &fs.PathError{Op: "open", Path: abs, Err: syscall.ENOENT}
	}
	return st.content, nil
}

type replacement struct {
	start, oldLen int
	lines         []string
}

// applyChunks applies update chunks to content, matching each chunk's old lines
// at or after the previous chunk, with decreasing strictness.
func applyChunks(content string, chunks []Chunk, abs string) (string, error) {
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	crlf := isCRLF(content)
	var reps []replacement
	cursor := 0
	for _, c := range chunks {
		if c.Context != "" {
			idx := seek(lines, []string{c.Context}, cursor, false)
			if idx < 0 {
				return "", &PlanError{Msg: fmt.Sprintf("Failed to find context '%s' in %s", c.Context, abs)}
			}
			cursor = idx + 1
		}
		if len(c.OldLines) == 0 {
			reps = append(reps, replacement{start: len(lines), lines: c.NewLines})
			continue
		}
		oldLines, newLines := c.OldLines, c.NewLines
		idx := seek(lines, oldLines, cursor, c.EndOfFile)
		if idx < 0 && oldLines[len(oldLines)-1] == "" {
			// A trailing empty context line often stands for the final newline.
			oldLines = oldLines[:len(oldLines)-1]
			if len(newLines) > 0 && newLines[len(newLines)-1] == "" {
				newLines = newLines[:len(newLines)-1]
			}
			if len(oldLines) > 0 {
				idx = seek(lines, oldLines, cursor, c.EndOfFile)
			}
		}
		if idx < 0 {
			return "", &PlanError{Msg: fmt.Sprintf("Failed to find expected lines in %s:\n%s", abs, strings.Join(c.OldLines, "\n"))}
		}
		reps = append(reps, replacement{start: idx, oldLen: len(oldLines), lines: newLines})
		cursor = idx + len(oldLines)
	}
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].start < reps[j].start })
	for i := len(reps) - 1; i >= 0; i-- {
		r := reps[i]
		ins := make([]string, len(r.lines))
		for j, l := range r.lines {
			if crlf {
				l += "\r"
			}
			ins[j] = l
		}
		tail := append(ins, lines[r.start+r.oldLen:]...)
		lines = append(lines[:r.start:r.start], tail...)
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// isCRLF reports whether content's first line ends with CRLF.
func isCRLF(content string) bool {
	i := strings.IndexByte(content, '\n')
	return i > 0 && content[i-1] == '\r'
}

// matchLevels are the line comparisons seek tries, strictest first.
var matchLevels = []func(string) string{
	func(s string) string { return strings.TrimSuffix(s, "\r") },
	func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
	strings.TrimSpace,
	func(s string) string { return normalizePunct(strings.TrimSpace(s)) },
}

// seek finds pattern in lines at or after start and returns its index, or -1.
// With eof the pattern must end at the last line.
func seek(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	first, last := start, len(lines)-len(pattern)
	if eof {
		if last < start {
			return -1
		}
		first = last
	}
	for _, norm := range matchLevels {
		for i := first; i <= last; i++ {
			ok := true
			for j, p := range pattern {
				if norm(lines[i+j]) != norm(p) {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
	}
	return -1
}

// normalizePunct maps typographic dashes, quotes and spaces to their ASCII forms.
func normalizePunct(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, s)
}

// AffectedPaths returns every absolute path the plan writes or removes, sorted.
func (pl *Plan) AffectedPaths() []string {
	out := make([]string, 0, len(pl.final))
	for p := range pl.final {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
