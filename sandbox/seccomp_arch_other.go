//go:build linux && !amd64 && !arm64

package sandbox

const (
	seccompArchKnown = false
	seccompAuditArch = 0
	seccompX32Bit    = 0
)

var metadataSyscallsArch []uintptr
