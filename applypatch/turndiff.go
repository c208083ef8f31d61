package applypatch

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// turnDiffContext is the number of context lines in the turn diff.
const turnDiffContext = 3

const zeroOID = "0000000000000000000000000000000000000000"

// TurnDiff accumulates, for one turn, the baseline of every file a patch
// touched (as first seen) so the turn's whole diff can be rendered for
// `turn/diff/updated`. It is safe for concurrent use.
type TurnDiff struct {
	mu      sync.Mutex
	cwd     string
	entries []*turnEntry
	byPath  map[string]*turnEntry // current absolute path -> entry
}

type turnEntry struct {
	basePath   string // absolute path at baseline
	baseExists bool
	baseData   string
	baseMode   fs.FileMode
	curPath    string // absolute path the file lives at now; "" when it was replaced by a move
}

// NewTurnDiff returns an empty TurnDiff whose paths are shown relative to cwd.
func NewTurnDiff(cwd string) *TurnDiff {
	return &TurnDiff{cwd: cwd, byPath: map[string]*turnEntry{}}
}

// Track records the baselines of the files pl touches that were not seen
// before in this turn, and follows moves. Call it before pl.Apply.
func (t *TurnDiff) Track(pl *Plan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range pl.Files {
		e := t.entry(f.Path)
		if f.Kind == KindUpdate && f.MovePath != "" && f.MovePath != f.Path {
			if old := t.byPath[f.MovePath]; old != nil {
				old.curPath = ""
			} else {
				dst := t.entry(f.MovePath)
				dst.curPath = ""
			}
			delete(t.byPath, f.Path)
			e.curPath = f.MovePath
			t.byPath[f.MovePath] = e
		}
	}
}

// entry returns the entry currently living at abs, snapshotting the disk state as its baseline if new.
func (t *TurnDiff) entry(abs string) *turnEntry {
	if e := t.byPath[abs]; e != nil {
		return e
	}
	e := &turnEntry{basePath: abs, curPath: abs, baseMode: 0o644}
	if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
		if data, err := os.ReadFile(abs); err == nil {
			e.baseExists, e.baseData, e.baseMode = true, string(data), fi.Mode()
		}
	}
	t.entries = append(t.entries, e)
	t.byPath[abs] = e
	return e
}

// Diff renders the git-style unified diff from every tracked baseline to the
// files' current contents on disk ("" when nothing differs). Files are ordered
// by their baseline path.
func (t *TurnDiff) Diff() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	entries := append([]*turnEntry(nil), t.entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].basePath < entries[j].basePath })
	var b strings.Builder
	for _, e := range entries {
		curExists, curData, curMode := false, "", fs.FileMode(0o644)
		if e.curPath != "" {
			fi, err := os.Stat(e.curPath)
			switch {
			case err == nil:
				data, rerr := os.ReadFile(e.curPath)
				if rerr != nil {
					return "", fmt.Errorf("applypatch: turn diff: %w", rerr)
				}
				curExists, curData, curMode = true, string(data), fi.Mode()
			case !errors.Is(err, fs.ErrNotExist):
				return "", fmt.Errorf("applypatch: turn diff: %w", err)
			}
		}
		writeFileDiff(&b, t.rel(e.basePath), t.rel(e.curPath), e, curExists, curData, curMode)
	}
	return b.String(), nil
}

func writeFileDiff(b *strings.Builder, baseRel, curRel string, e *turnEntry, curExists bool, curData string, curMode fs.FileMode) {
	moved := curExists && e.curPath != e.basePath
	if !e.baseExists && !curExists {
		return
	}
	if e.baseExists && curExists && !moved && e.baseData == curData {
		return
	}
	aPath, bPath := baseRel, baseRel
	if curExists {
		bPath = curRel
		if !e.baseExists {
			aPath = curRel
		}
	}
	fmt.Fprintf(b, "diff --git a/%s b/%s\n", aPath, bPath)
	oldOID, newOID := zeroOID, zeroOID
	if e.baseExists {
		oldOID = blobOID(e.baseData)
	}
	if curExists {
		newOID = blobOID(curData)
	}
	switch {
	case !e.baseExists:
		fmt.Fprintf(b, "new file mode %s\n", gitMode(curMode))
	case !curExists:
		fmt.Fprintf(b, "deleted file mode %s\n", gitMode(e.baseMode))
	}
	fmt.Fprintf(b, "index %s..%s\n", oldOID, newOID)
	if oldOID == newOID {
		return
	}
	if e.baseExists {
		fmt.Fprintf(b, "--- a/%s\n", aPath)
	} else {
		b.WriteString("--- /dev/null\n")
	}
	if curExists {
		fmt.Fprintf(b, "+++ b/%s\n", bPath)
	} else {
		b.WriteString("+++ /dev/null\n")
	}
	oldData, newData := e.baseData, curData
	b.WriteString(unifiedHunks(oldData, newData, turnDiffContext))
}

// rel shows abs relative to the turn's cwd when it lies beneath it.
func (t *TurnDiff) rel(abs string) string {
	if abs == "" || t.cwd == "" {
		return filepath.ToSlash(abs)
	}
	r, err := filepath.Rel(t.cwd, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(r)
}

// blobOID is the git object id of a blob with the given content.
func blobOID(data string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil))
}

func gitMode(m fs.FileMode) string {
	if m&0o111 != 0 {
		return "100755"
	}
	return "100644"
}
