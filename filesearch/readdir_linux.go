package filesearch

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirent is one directory entry as the kernel lists it.
type dirent struct {
	name  string
	isDir bool
	link  bool
}

// readDir lists a directory with raw getdents64 calls: without the poller registration and sorting of
// os.ReadDir it is several times faster, which dominates a 100k-file walk.
func readDir(path string, buf []byte, out []dirent) ([]dirent, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return out, err
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			nameBytes := buf[off+19 : off+reclen]
			l := 0
			for l < len(nameBytes) && nameBytes[l] != 0 {
				l++
			}
			name := string(nameBytes[:l])
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			d := dirent{name: name}
			switch typ {
			case unix.DT_DIR:
				d.isDir = true
			case unix.DT_LNK:
				d.link = true
			case unix.DT_UNKNOWN:
				if fi, err := os.Lstat(path + "/" + name); err == nil {
					d.isDir = fi.IsDir()
					d.link = fi.Mode()&os.ModeSymlink != 0
				}
			}
			out = append(out, d)
		}
	}
}
