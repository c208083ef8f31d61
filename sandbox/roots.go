package sandbox

import (
	"path/filepath"
	"strings"
)

// ProtectedNames are the entries of every writable root that stay read-only under WorkspaceWrite (the
// reference's list and order, which the model also reads in its environment context).
var ProtectedNames = []string{".git", ".agents", ".codex", ".aws"}

// EffectiveRoots returns the cleaned absolute directories writable under p for a command run in cwd
// whose environment has TMPDIR=tmpdir ("" when unset): nil for ReadOnly and for the unrestricted
// kinds. Relative writable roots are resolved against cwd; symlinks are not resolved.
func (p Policy) EffectiveRoots(cwd, tmpdir string) []string {
	if p.Kind != WorkspaceWrite {
		return nil
	}
	var out []string
	add := func(dir string) {
		if dir == "" {
			return
		}
		if !filepath.IsAbs(dir) {
			if cwd == "" {
				return
			}
			dir = filepath.Join(cwd, dir)
		}
		dir = filepath.Clean(dir)
		for _, d := range out {
			if d == dir {
				return
			}
		}
		out = append(out, dir)
	}
	add(cwd)
	for _, r := range p.WritableRoots {
		add(r)
	}
	if !p.ExcludeSlashTmp {
		add("/tmp")
	}
	if !p.ExcludeTmpdirEnvVar && filepath.IsAbs(tmpdir) {
		add(tmpdir)
	}
	return out
}

// AllowsWrite reports whether p lets a command run in cwd (with TMPDIR=tmpdir) write path, by the
// same rules the kernel sandbox enforces; it is a lexical check meant for approval decisions,
// not for enforcement.
func (p Policy) AllowsWrite(path, cwd, tmpdir string) bool {
	switch p.Kind {
	case DangerFullAccess, External:
		return true
	case ReadOnly:
		return false
	}
	if !filepath.IsAbs(path) {
		if cwd == "" {
			return false
		}
		path = filepath.Join(cwd, path)
	}
	path = filepath.Clean(path)
	roots := p.EffectiveRoots(cwd, tmpdir)
	allowed := false
	for _, r := range roots {
		if within(path, r) {
			allowed = true
		}
		for _, name := range ProtectedNames {
			if within(path, filepath.Join(r, name)) {
				return false
			}
		}
	}
	return allowed
}

// within reports whether path equals dir or lies beneath it (both clean and absolute).
func within(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+"/")
}
