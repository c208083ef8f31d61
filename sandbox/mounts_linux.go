//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// errNoMountNS reports that the calling thread may not create a mount namespace.
var errNoMountNS = errors.New("cannot create a mount namespace")

// stNoSymfollow is statfs's ST_NOSYMFOLLOW (Linux 5.10), which x/sys/unix does not define.
const stNoSymfollow = 0x2000

// errNewMountAPI reports that open_tree/mount_setattr failed before anything was changed, so the
// per-mount remount fallback may still be tried.
var errNewMountAPI = errors.New("new mount API unavailable")

// confineMounts gives the calling thread a private mount namespace in which every mount is
// read-only except the writable roots, which are mounted back over themselves as they were, and
// the protected paths are read-only binds of themselves on top. Metadata changes (chmod, chown,
// utimes, xattrs) outside the roots then fail with EROFS, which Landlock alone cannot refuse. It
// needs CAP_SYS_ADMIN (directly or in the thread's user namespace). ownNS says the thread already
// has a private mount namespace (process 1 of the PID namespace), which is then reused; remount
// forces the per-mount fallback (tests). Devices, FIFOs and sockets stay usable on read-only mounts.
func confineMounts(roots, protected []string, ownNS, remount bool) error {
	if !ownNS {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("%w: %w", errNoMountNS, err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make mounts private: %w", err)
		}
	}
	if err := readOnlyTree(outermost(roots), remount); err != nil {
		return err
	}
	return protectPaths(protected)
}

// outermost returns the roots that lie in no other root, sorted.
func outermost(roots []string) []string {
	sorted := append([]string(nil), roots...)
	sort.Strings(sorted)
	var out []string
	for _, r := range sorted {
		if len(out) > 0 && within(r, out[len(out)-1]) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// readOnlyTree makes every mount read-only except the roots (outermost, canonical).
func readOnlyTree(roots []string, remount bool) error {
	for _, r := range roots {
		if r == "/" {
			return nil // the whole tree is writable
		}
	}
	if !remount {
		err := readOnlyTreeAtomic(roots)
		if err == nil || !errors.Is(err, errNewMountAPI) {
			return err
		}
	}
	return readOnlyTreeRemount(roots)
}

// readOnlyTreeAtomic clones each root's mount tree (detached, flags as they are), makes the whole
// tree read-only in one mount_setattr(AT_RECURSIVE) call, and attaches the clones over the roots.
func readOnlyTreeAtomic(roots []string) error {
	clones := make([]int, 0, len(roots))
	defer func() {
		for _, fd := range clones {
			_ = unix.Close(fd)
		}
	}()
	for _, r := range roots {
		fd, err := unix.OpenTree(unix.AT_FDCWD, r, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("%w: open_tree %s: %w", errNewMountAPI, r, err)
		}
		clones = append(clones, fd)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("%w: mount_setattr /: %w", errNewMountAPI, err)
	}
	for i, r := range roots {
		if err := unix.MoveMount(clones[i], "", unix.AT_FDCWD, r, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount %s back writable: %w", r, err)
		}
	}
	return nil
}

// readOnlyTreeRemount is the fallback without the new mount API: each root is bound over itself
// (recursively, flags kept), then every other visible mount is bind-remounted read-only with its
// own nosuid/nodev/noexec/atime flags, as read from /proc/self/mountinfo.
func readOnlyTreeRemount(roots []string) error {
	for _, r := range roots {
		if err := unix.Mount(r, r, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", r, err)
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	mounts, err := parseMountInfo(string(b))
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, m := range mounts {
		if done[m.point] || inAny(m.point, roots) {
			continue
		}
		// A remount by path reaches the top-most mount there, which is the visible one.
		done[m.point] = true
		flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY) | mountFlags(m.opts)
		err := unix.Mount("", m.point, "", flags, "")
		if err != nil && !unreachable(m.point, err) {
			return fmt.Errorf("remount %s read-only: %w", m.point, err)
		}
	}
	return nil
}

// unreachable reports whether a remount of point failed because no path leads to that mount:
// the command, with the same credentials, cannot reach it either.
func unreachable(point string, err error) bool {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES):
		return true
	case errors.Is(err, unix.EINVAL):
		// Covered by a mount on a parent directory: the path leads into another mount.
		var stx unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, point, unix.AT_SYMLINK_NOFOLLOW, 0, &stx) != nil {
			return true
		}
		return stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0
	}
	return false
}

func inAny(path string, roots []string) bool {
	for _, r := range roots {
		if within(path, r) {
			return true
		}
	}
	return false
}

// mountFlags are the MS_ flags that keep a mount's per-mount options (opts from mountinfo) on a
// bind remount; leaving one out would clear it, which a user namespace may not do.
func mountFlags(opts map[string]bool) uintptr {
	var flags uintptr
	for name, f := range map[string]uintptr{
		"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
		"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
		"nosymfollow": unix.MS_NOSYMFOLLOW,
	} {
		if opts[name] {
			flags |= f
		}
	}
	if !opts["noatime"] && !opts["relatime"] {
		flags |= unix.MS_STRICTATIME
	}
	return flags
}

// protectPaths bind-mounts every protected path onto itself read-only, keeping the nosuid/nodev/
// noexec/atime flags of the mount below.
func protectPaths(protected []string) error {
	for _, p := range protected {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", p, err)
		}
		opts := map[string]bool{}
		for name, f := range map[string]int64{
			"nosuid": unix.ST_NOSUID, "nodev": unix.ST_NODEV, "noexec": unix.ST_NOEXEC,
			"noatime": unix.ST_NOATIME, "nodiratime": unix.ST_NODIRATIME, "relatime": unix.ST_RELATIME,
			"nosymfollow": stNoSymfollow,
		} {
			opts[name] = st.Flags&f != 0
		}
		if err := unix.Mount("", p, "", uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY)|mountFlags(opts), ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", p, err)
		}
	}
	return nil
}

// mountInfo is one line of /proc/self/mountinfo: where a mount is, its type and its per-mount
// options (ro/rw, nosuid, nodev, noexec, atime flags).
type mountInfo struct {
	point  string
	fstype string
	opts   map[string]bool
}

// parseMountInfo parses the text of /proc/<pid>/mountinfo (see proc(5)).
func parseMountInfo(s string) ([]mountInfo, error) {
	var out []mountInfo
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("bad mountinfo line %q", line)
		}
		point, err := unescapeMountPath(f[4])
		if err != nil {
			return nil, fmt.Errorf("bad mountinfo line %q: %w", line, err)
		}
		opts := map[string]bool{}
		for _, o := range strings.Split(f[5], ",") {
			opts[o] = true
		}
		out = append(out, mountInfo{point: point, fstype: f[sep+1], opts: opts})
	}
	return out, nil
}

// unescapeMountPath decodes the octal escapes (\040 for a space, ...) of a mountinfo path.
func unescapeMountPath(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}
