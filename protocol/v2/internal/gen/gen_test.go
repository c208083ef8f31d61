package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPascal(t *testing.T) {
	cases := map[string]string{
		"threadId":                     "ThreadID",
		"httpStatusCode":               "HTTPStatusCode",
		"text_elements":                "TextElements",
		"imageUrl":                     "ImageURL",
		"mcpServer":                    "McpServer",
		"apiKey":                       "APIKey",
		"on-request":                   "OnRequest",
		"otlp-http":                    "OtlpHTTP",
		"thread/start":                 "ThreadStart",
		"thread/increment_elicitation": "ThreadIncrementElicitation",
		"openai/form":                  "OpenaiForm",
		"_meta":                        "Meta",
		"uri":                          "URI",
		"jsonSchema":                   "JSONSchema",
		"ids":                          "Ids",
		"2fa":                          "V2fa",
	}
	for in, want := range cases {
		require.Equal(t, want, pascal(in), in)
	}
}

// TestGeneratedFilesUpToDate regenerates into a temp dir: the output must equal the committed files (so
// `go generate` is deterministic and has been run).
func TestGeneratedFilesUpToDate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run("../../../../schema", dir))
	for _, f := range []string{"types_gen.go", "methods_gen.go"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("..", "..", f))
		require.NoError(t, err)
		require.True(t, string(got) == string(want), "%s is stale: run go generate ./protocol/...", f)
	}
}

func TestStripSchemaKeepsDescriptionProperties(t *testing.T) {
	b, err := loadBundle("../../../../schema/codex_app_server_protocol.v2.schemas.json")
	require.NoError(t, err)
	require.Len(t, b.Definitions, 864)
	// DynamicToolSpec's function variant has a property named "description", which must survive stripping.
	require.Contains(t, b.Definitions["DynamicToolSpec"].OneOf[0].Properties, "description")
}

// TestEveryDefinitionHasAType checks that each definition of the v2 bundle, and each server-request type
// of the "all" bundle, is declared as a Go type in the protocol package (generated or hand-written).
func TestEveryDefinitionHasAType(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../..", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	declared := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
					for _, s := range gd.Specs {
						declared[s.(*ast.TypeSpec).Name.Name] = true
					}
				}
			}
		}
	}
	isSkipped := map[string]bool{}
	for _, s := range skipped {
		isSkipped[s] = true
	}
	v2, err := loadBundle("../../../../schema/codex_app_server_protocol.v2.schemas.json")
	require.NoError(t, err)
	n := 0
	for name := range v2.Definitions {
		if isSkipped[name] {
			continue
		}
		require.True(t, declared[name], "no Go type for v2 definition %s", name)
		n++
	}
	require.Equal(t, 864-2, n) // ClientRequest and ServerNotification are described by the method tables
	for _, name := range []string{"CommandExecutionRequestApprovalParams", "CommandExecutionRequestApprovalResponse",
		"McpServerElicitationRequestParams", "McpServerElicitationRequestResponse", "ToolRequestUserInputParams",
		"ToolRequestUserInputResponse", "FileChangeRequestApprovalParams", "ReviewDecision", "InitializeParams",
		"InitializeResponse", "JSONRPCErrorError"} {
		require.True(t, declared[name], name)
	}
}
