// Command schemastrip copies the reference JSON Schema files the project needs into the repo's schema
// directory, removing every "description" annotation on the way.
//
// Usage (from the module root):
//
//	go run ./protocol/v2/internal/schemastrip -src /work/shared/reference/schema -dst schema
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"appserver/schemaexport"
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
	out, err := schemaexport.StripDescriptions(raw)
	if err != nil {
		return fmt.Errorf("strip %s: %w", from, err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, out, 0o644)
}
