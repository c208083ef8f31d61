// Package fsapi carries out the file operations an IDE asks of a remote workspace: reading and writing
// whole files (bytes, the caller does any base64), directories, metadata, removal, copies and change
// watches. Errors a client caused are *RequestError; failures of the operating system keep their errno
// so callers can render them as the reference does.
package fsapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// RequestError is a request the operation refuses (the caller's mistake, not the system's).
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

func badRequest(format string, args ...any) error {
	return &RequestError{Message: fmt.Sprintf(format, args...)}
}

// CheckAbsolute refuses a relative path.
func CheckAbsolute(p string) error {
	if !filepath.IsAbs(p) {
		return badRequest("Invalid request: AbsolutePathBuf deserialized without a base path")
	}
	return nil
}

// ReadFile returns a regular file's contents.
func ReadFile(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, badRequest("path `%s` is not a file", p)
	}
	return os.ReadFile(p)
}

// DecodeBase64 decodes standard padded base64, reporting bad input in the reference's words.
func DecodeBase64(method, data string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(data)
	if err == nil {
		return b, nil
	}
	var ce base64.CorruptInputError
	detail := "Invalid input length."
	if errors.As(err, &ce) && int(ce) < len(data) {
		if data[ce] == '=' {
			detail = "Invalid padding"
		} else {
			detail = fmt.Sprintf("Invalid symbol %d, offset %d.", data[ce], int(ce))
		}
	}
	return nil, badRequest("%s requires valid base64 dataBase64: %s", method, detail)
}

// WriteFile creates or replaces a file with data; the parent directory must exist.
func WriteFile(p string, data []byte) error {
	return os.WriteFile(p, data, 0o666)
}

// CreateDirectory makes a directory; recursive (the default) also makes missing parents and accepts an
// existing directory.
func CreateDirectory(p string, recursive *bool) error {
	if recursive == nil || *recursive {
		err := os.MkdirAll(p, 0o777)
		if errors.Is(err, unix.ENOTDIR) {
			// the path itself is a file: "File exists", as Rust's create_dir_all reports (Go says ENOTDIR)
			if fi, serr := os.Stat(p); serr == nil && !fi.IsDir() {
				return &os.PathError{Op: "mkdir", Path: p, Err: unix.EEXIST}
			}
		}
		return err
	}
	return os.Mkdir(p, 0o777)
}

// Metadata is what GetMetadata reports; kinds follow symbolic links, IsSymlink describes the path itself.
type Metadata struct {
	IsDirectory, IsFile, IsSymlink bool
	CreatedAtMs, ModifiedAtMs      int64
}

// GetMetadata describes a path.
func GetMetadata(p string) (Metadata, error) {
	lfi, err := os.Lstat(p)
	if err != nil {
		return Metadata{}, err
	}
	fi := lfi
	if lfi.Mode()&os.ModeSymlink != 0 {
		if fi, err = os.Stat(p); err != nil {
			return Metadata{}, err
		}
	}
	m := Metadata{IsDirectory: fi.IsDir(), IsFile: fi.Mode().IsRegular(), IsSymlink: lfi.Mode()&os.ModeSymlink != 0,
		ModifiedAtMs: fi.ModTime().UnixMilli()}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_BTIME, &st); err == nil && st.Mask&unix.STATX_BTIME != 0 {
		m.CreatedAtMs = st.Btime.Sec*1000 + int64(st.Btime.Nsec)/1_000_000
	}
	return m, nil
}

// DirEntry is one entry of ReadDirectory; kinds follow symbolic links.
type DirEntry struct {
	Name                string
	IsDirectory, IsFile bool
}

// ReadDirectory lists a directory in the order the file system returns it.
func ReadDirectory(p string) ([]DirEntry, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, 0, len(ents))
	for _, e := range ents {
		d := DirEntry{Name: e.Name(), IsDirectory: e.IsDir(), IsFile: e.Type().IsRegular()}
		if e.Type()&os.ModeSymlink != 0 {
			d.IsDirectory, d.IsFile = false, false
			if fi, err := os.Stat(filepath.Join(p, e.Name())); err == nil {
				d.IsDirectory, d.IsFile = fi.IsDir(), fi.Mode().IsRegular()
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// Remove deletes a path. recursive (the default) removes a directory with its contents, otherwise only
// an empty one; force (the default) makes a missing path a success.
func Remove(p string, recursive, force *bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && (force == nil || *force) {
			return nil
		}
		return err
	}
	if !fi.IsDir() {
		return unlink(os.Remove(p))
	}
	if recursive == nil || *recursive {
		return os.RemoveAll(p)
	}
	return unlink(unix.Rmdir(p))
}

// unlink unwraps the *PathError of a single removal so the errno text is what remains.
func unlink(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Copy copies a file (or a symbolic link as a link) to dst; a directory needs recursive and is merged
// into dst, which must not lie inside it.
func Copy(src, dst string, recursive *bool) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if recursive == nil || !*recursive {
			return badRequest("fs/copy requires recursive: true when sourcePath is a directory")
		}
		s, d := filepath.Clean(src), filepath.Clean(dst)
		if d == s || strings.HasPrefix(d, s+string(filepath.Separator)) {
			return badRequest("fs/copy cannot copy a directory to itself or one of its descendants")
		}
		return copyTree(s, d)
	}
	return copyOne(src, dst, fi)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o777)
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return copyOne(p, target, fi)
	})
}

func copyOne(src, dst string, fi fs.FileInfo) error {
	if fi.Mode()&os.ModeSymlink != 0 {
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		_ = os.Remove(dst)
		return os.Symlink(link, dst)
	}
	if same(src, dst) {
		return nil // copying a file onto itself leaves it as it is
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func same(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
