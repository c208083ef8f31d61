//go:build !linux

package codemode

// systemMemory is unknown outside Linux: the cap stays at its ceiling.
func systemMemory() uint64 { return 0 }
