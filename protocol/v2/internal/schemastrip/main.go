// Command schemastrip copies the reference JSON Schema files the project needs into the repo's schema
// directory, removing every "description" annotation on the way.
//
// Usage (from the module root):
//
//	go run ./protocol/v2/internal/schemastrip -src /work/shared/reference/schema -dst schema
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// files lists the schema files copied, relative to the source directory.
var files = []string{
	"codex_app_server_protocol.v2.schemas.json",
	"stable-only.v2.schemas.json",
	"codex_app_server_protocol.schemas.json",
	"ClientRequest.json",
	"ServerRequest.json",
	"ServerNotification.json",
	"ClientNotification.json",
	"JSONRPCErrorError.json",
	"v1/InitializeParams.json",
	"v1/InitializeResponse.json",
}

func main() {
	src := flag.String("src", "/work/shared/reference/schema", "reference schema directory")
	dst := flag.String("dst", "schema", "destination directory")
	flag.Parse()
	for _, f := range files {
		if err := copyStripped(filepath.Join(*src, f), filepath.Join(*dst, f)); err != nil {
			slog.Error("schemastrip", "file", f, "err", err)
			os.Exit(1)
		}
	}
}

func copyStripped(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("decode %s: %w", from, err)
	}
	out, err := json.MarshalIndent(strip(doc), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, append(out, '\n'), 0o644)
}

// strip removes string-valued "description" keys (schema annotations) recursively; a property that is
// itself named "description" has an object value and is kept.
func strip(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			if _, isString := x.(string); k == "description" && isString {
				continue
			}
			m[k] = strip(x)
		}
		return m
	case []any:
		for i := range t {
			t[i] = strip(t[i])
		}
		return t
	default:
		return v
	}
}
