package applypatch

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
)

// ErrStale reports that a file the plan read changed on disk before Apply;
// re-plan the patch (e.g. after a long approval wait) and try again.
var ErrStale = errors.New("file changed on disk since the patch was planned")

// ApplyError is a failure while writing a plan to disk; nothing was changed.
// Its text is the reference's ("Failed to write file <path>", "Failed to delete file <path>").
type ApplyError struct {
	Msg string
	Err error
}

// Error returns the message.
func (e *ApplyError) Error() string { return e.Msg }

// Unwrap returns the underlying cause.
func (e *ApplyError) Unwrap() error { return e.Err }

// rename is os.Rename; tests swap it to inject failures.
var rename = os.Rename

type applyOp struct {
	path    string
	write   bool // write content; otherwise remove path
	content string
	tmp     string // new content staged next to path
	backup  string // original file moved aside
	placed  bool   // tmp renamed onto path
}

// Apply writes the plan to disk atomically: all files change or none do. New
// contents are staged in temporary files beside their targets, originals are
// moved aside, the staged files are renamed into place, and on any failure every
// step is undone. Parent directories of new files are created (and removed again
// on failure). Files the plan read must be unchanged since planning (ErrStale).
func (pl *Plan) Apply() (err error) {
	paths := make([]string, 0, len(pl.final))
	for p := range pl.final {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for p, snap := range pl.snapshot {
		if !snap.exists {
			continue
		}
		data, rerr := os.ReadFile(p)
		if rerr != nil || string(data) != snap.content {
			return &ApplyError{Msg: fmt.Sprintf("Failed to write file %s: %v", p, ErrStale), Err: ErrStale}
		}
	}

	var ops []*applyOp
	var createdDirs []string
	defer func() {
		if err == nil {
			return
		}
		rollback(ops, createdDirs)
	}()

	// Stage every new content.
	for _, p := range paths {
		st := pl.final[p]
		op := &applyOp{path: p, write: st.exists, content: st.content}
		ops = append(ops, op)
		if !op.write {
			continue
		}
		dirs, derr := mkdirAll(filepath.Dir(p))
		createdDirs = append(createdDirs, dirs...)
		if derr != nil {
			return &ApplyError{Msg: "Failed to write file " + p, Err: derr}
		}
		mode := fs.FileMode(0o644)
		if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
		tmp, terr := writeTemp(filepath.Dir(p), filepath.Base(p), op.content, mode)
		if terr != nil {
			return &ApplyError{Msg: "Failed to write file " + p, Err: terr}
		}
		op.tmp = tmp
	}

	// Move originals aside and put the new contents in place.
	for _, op := range ops {
		if _, lerr := os.Lstat(op.path); lerr == nil {
			bak, berr := reserveName(filepath.Dir(op.path), filepath.Base(op.path))
			if berr == nil {
				berr = rename(op.path, bak)
				if berr != nil {
					_ = os.Remove(bak)
				}
			}
			if berr != nil {
				if op.write {
					return &ApplyError{Msg: "Failed to write file " + op.path, Err: berr}
				}
				return &ApplyError{Msg: "Failed to delete file " + op.path, Err: berr}
			}
			op.backup = bak
		}
		if op.write {
			if rerr := rename(op.tmp, op.path); rerr != nil {
				return &ApplyError{Msg: "Failed to write file " + op.path, Err: rerr}
			}
			op.tmp = ""
			op.placed = true
		}
	}

	for _, op := range ops {
		if op.backup != "" {
			if rerr := os.Remove(op.backup); rerr != nil {
				slog.Warn("applypatch: removing backup", "path", op.backup, "err", rerr)
			}
		}
	}
	return nil
}

// rollback undoes the steps recorded in ops, last first, then removes the
// directories Apply created.
func rollback(ops []*applyOp, createdDirs []string) {
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		if op.placed {
			if err := os.Remove(op.path); err != nil {
				slog.Warn("applypatch: rollback remove", "path", op.path, "err", err)
			}
		}
		if op.backup != "" {
			if err := os.Rename(op.backup, op.path); err != nil {
				slog.Error("applypatch: rollback restore failed", "path", op.path, "backup", op.backup, "err", err)
			}
		}
		if op.tmp != "" {
			_ = os.Remove(op.tmp)
		}
	}
	for i := len(createdDirs) - 1; i >= 0; i-- {
		_ = os.Remove(createdDirs[i])
	}
}

// mkdirAll creates dir and its missing parents, returning the directories it
// created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			return created, err
		}
		created = append(created, missing[i])
	}
	return created, nil
}

func writeTemp(dir, base, content string, mode fs.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".applypatch-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, werr := f.WriteString(content)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(name)
		return "", werr
	}
	return name, nil
}

// reserveName creates an empty placeholder with a unique name in dir, to be
// replaced by a rename.
func reserveName(dir, base string) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".applypatch-orig-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}
