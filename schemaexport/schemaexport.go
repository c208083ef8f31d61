// Package schemaexport writes the protocol's JSON Schema tree (what `codex app-server
// generate-json-schema` writes, file for file, without description annotations) from an embedded
// archive, and TypeScript definitions generated from that schema by our own generator.
package schemaexport

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// archive holds two trees, "stable/" and "experimental/", each the reference's generate-json-schema output
// (without and with --experimental) with descriptions stripped; rebuild it with internal/mkarchive.
//
//go:embed schema.tar.gz
var archive []byte

var (
	loadOnce sync.Once
	trees    map[string]map[string][]byte // variant → relative path → content
	loadErr  error
)

func load() (map[string]map[string][]byte, error) {
	loadOnce.Do(func() {
		gz, err := gzip.NewReader(bytes.NewReader(archive))
		if err != nil {
			loadErr = err
			return
		}
		trees = map[string]map[string][]byte{}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				loadErr = err
				return
			}
			variant, rel, ok := strings.Cut(h.Name, "/")
			if !ok {
				continue
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				loadErr = err
				return
			}
			if trees[variant] == nil {
				trees[variant] = map[string][]byte{}
			}
			trees[variant][rel] = data
		}
	})
	return trees, loadErr
}

func variant(experimental bool) string {
	if experimental {
		return "experimental"
	}
	return "stable"
}

// Files returns the schema tree for the variant: relative slash-separated path → file content.
func Files(experimental bool) (map[string][]byte, error) {
	t, err := load()
	if err != nil {
		return nil, fmt.Errorf("embedded schema archive: %w", err)
	}
	files := t[variant(experimental)]
	if len(files) == 0 {
		return nil, fmt.Errorf("embedded schema archive has no %s tree", variant(experimental))
	}
	return files, nil
}

// WriteJSONSchema writes the schema tree into dir (created if missing).
func WriteJSONSchema(dir string, experimental bool) error {
	files, err := Files(experimental)
	if err != nil {
		return err
	}
	return writeTree(dir, files)
}

func writeTree(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(path.Clean(n)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
