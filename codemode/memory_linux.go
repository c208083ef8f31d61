package codemode

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// systemMemory is the machine's RAM, or the process's cgroup limit when lower (0: unknown).
func systemMemory() uint64 {
	var si syscall.Sysinfo_t
	var total uint64
	if syscall.Sysinfo(&si) == nil {
		total = uint64(si.Totalram) * uint64(si.Unit)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}
