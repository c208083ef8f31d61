// Command mkarchive builds schemaexport's embedded archive from the reference's own output: run
// `codex app-server generate-json-schema --out A` and `... --experimental --out B`, then
//
//	go run ./schemaexport/internal/mkarchive -stable A -experimental B -out schemaexport/schema.tar.gz
//
// Every file is re-encoded with "description" annotations removed, keys sorted and two-space indent
// (the form of the repo's schema/ copy).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"appserver/schemaexport"
)

func main() {
	stable := flag.String("stable", "", "reference output without --experimental")
	experimental := flag.String("experimental", "", "reference output with --experimental")
	out := flag.String("out", "schemaexport/schema.tar.gz", "archive to write")
	flag.Parse()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	for _, tree := range []struct{ prefix, dir string }{{"stable", *stable}, {"experimental", *experimental}} {
		var files []string
		err := filepath.WalkDir(tree.dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			fail(err)
		}
		sort.Strings(files)
		for _, f := range files {
			rel, _ := filepath.Rel(tree.dir, f)
			data, err := stripFile(f)
			if err != nil {
				fail(err)
			}
			hdr := &tar.Header{Name: tree.prefix + "/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data))}
			if err := tw.WriteHeader(hdr); err != nil {
				fail(err)
			}
			if _, err := tw.Write(data); err != nil {
				fail(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		fail(err)
	}
	if err := gz.Close(); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	slog.Error("mkarchive", "error", err)
	os.Exit(1)
}

func stripFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return schemaexport.StripDescriptions(raw)
}
