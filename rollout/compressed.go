package rollout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// CompressedSuffix ends the name of a rollout the reference compressed with zstd (rollout-….jsonl.zst). With
// its experimental feature local_thread_store_compression on, the reference's start-up worker compresses
// rollouts that have been idle for a while, keeping their mtime; it reads them in place and, when such a thread
// is resumed, writes the plain .jsonl back ("materializes" it) and removes the .zst file.
const CompressedSuffix = ".zst"

// IsCompressed reports whether path names a compressed rollout.
func IsCompressed(path string) bool { return strings.HasSuffix(path, ".jsonl"+CompressedSuffix) }

// PlainPath returns the name of the plain rollout for path (path itself when it is not compressed): the path the
// reference reports for a thread whose rollout is compressed.
func PlainPath(path string) string {
	if IsCompressed(path) {
		return strings.TrimSuffix(path, CompressedSuffix)
	}
	return path
}

// decoders recycles zstd decoders (each holds its window buffers): an index build may read many compressed
// rollouts.
var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(1<<27))
	if err != nil {
		return nil
	}
	return d
}}

// OpenRolloutFile opens a rollout for reading, decompressing a .jsonl.zst one on the fly.
func OpenRolloutFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !IsCompressed(path) {
		return f, nil
	}
	d, _ := decoders.Get().(*zstd.Decoder)
	if d == nil {
		_ = f.Close()
		return nil, errors.New("rollout: zstd decoder unavailable")
	}
	if err := d.Reset(f); err != nil {
		_ = f.Close()
		decoders.Put(d)
		return nil, fmt.Errorf("rollout: zstd %s: %w", path, err)
	}
	return &zstdFile{f: f, d: d}, nil
}

type zstdFile struct {
	f *os.File
	d *zstd.Decoder
}

func (z *zstdFile) Read(p []byte) (int, error) {
	if z.d == nil {
		return 0, os.ErrClosed
	}
	return z.d.Read(p)
}

func (z *zstdFile) Close() error {
	if z.d != nil {
		_ = z.d.Reset(nil)
		decoders.Put(z.d)
		z.d = nil
	}
	return z.f.Close()
}

// Materialize turns a compressed rollout back into a plain one, as the reference does before appending to it:
// the content is decompressed to a temporary file beside it, renamed to the plain name, and the compressed file
// removed. It returns the plain path; a plain path is returned unchanged. If a plain file already exists it
// wins (the compressed one is left alone).
func Materialize(path string) (string, error) {
	if !IsCompressed(path) {
		return path, nil
	}
	plain := PlainPath(path)
	if fileExists(plain) {
		return plain, nil
	}
	src, err := OpenRolloutFile(path)
	if err != nil {
		return "", fmt.Errorf("rollout: materialize: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rollout-materialize-*")
	if err != nil {
		return "", fmt.Errorf("rollout: materialize: %w", err)
	}
	_, cerr := io.Copy(tmp, src)
	if err := errors.Join(cerr, tmp.Sync(), tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("rollout: materialize %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("rollout: materialize: %w", err)
	}
	if err := os.Rename(tmp.Name(), plain); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("rollout: materialize: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("rollout: materialize: remove %s: %w", path, err)
	}
	return plain, nil
}
