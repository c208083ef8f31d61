package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommandActionsMatchReference replays the commandActions the reference showed for these commands
// (cwd /w).
func TestCommandActionsMatchReference(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{"ls", `[{"type":"listFiles","command":"ls","path":null}]`},
		{"ls -la", `[{"type":"listFiles","command":"ls -la","path":null}]`},
		{"ls src", `[{"type":"listFiles","command":"ls src","path":"src"}]`},
		{"ls -l src/ docs", `[{"type":"listFiles","command":"ls -l src/ docs","path":"src"}]`},
		{"cat a.txt", `[{"type":"read","command":"cat a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"cat -n a.txt", `[{"type":"read","command":"cat -n a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"head a.txt", `[{"type":"read","command":"head a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"head -n 5 a.txt", `[{"type":"read","command":"head -n 5 a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"tail a.txt", `[{"type":"read","command":"tail a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"tail -n 20 a.txt", `[{"type":"read","command":"tail -n 20 a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"tail -f a.txt", `[{"type":"unknown","command":"tail -f a.txt"}]`},
		{"nl a.txt", `[{"type":"read","command":"nl a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"nl -ba a.txt", `[{"type":"read","command":"nl -ba a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"sed -n 1,5p a.txt", `[{"type":"read","command":"sed -n '1,5p' a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"sed -n '10,20p' src/x.go", `[{"type":"read","command":"sed -n '10,20p' src/x.go","name":"x.go","path":"/w/src/x.go"}]`},
		{"sed s/a/b/ a.txt", `[{"type":"unknown","command":"sed s/a/b/ a.txt"}]`},
		{"grep foo", `[{"type":"search","command":"grep foo","query":"foo","path":null}]`},
		{"grep foo a.txt", `[{"type":"search","command":"grep foo a.txt","query":"foo","path":"a.txt"}]`},
		{"grep -n foo src", `[{"type":"search","command":"grep -n foo src","query":"foo","path":"src"}]`},
		{"grep -rn 'foo bar' .", `[{"type":"search","command":"grep -rn 'foo bar' .","query":"foo bar","path":"."}]`},
		{"rg foo", `[{"type":"search","command":"rg foo","query":"foo","path":null}]`},
		{"rg -n foo src", `[{"type":"search","command":"rg -n foo src","query":"foo","path":"src"}]`},
		{"rg --files", `[{"type":"listFiles","command":"rg --files","path":null}]`},
		{"rg --files src", `[{"type":"listFiles","command":"rg --files src","path":"src"}]`},
		{"rg -l foo", `[{"type":"search","command":"rg -l foo","query":"foo","path":null}]`},
		{"find .", `[{"type":"listFiles","command":"find .","path":"."}]`},
		{"find . -name '*.go'", `[{"type":"search","command":"find . -name '*.go'","query":"*.go","path":"."}]`},
		{"find src -type f", `[{"type":"listFiles","command":"find src -type f","path":"src"}]`},
		{"fd foo", `[{"type":"search","command":"fd foo","query":"foo","path":null}]`},
		{"git status", `[{"type":"unknown","command":"git status"}]`},
		{"git diff", `[{"type":"unknown","command":"git diff"}]`},
		{"git log", `[{"type":"unknown","command":"git log"}]`},
		{"pwd", `[{"type":"unknown","command":"pwd"}]`},
		{"echo hi", `[{"type":"unknown","command":"echo hi"}]`},
		{"cd src", `[]`},
		{"cd src && cat a.txt", `[{"type":"read","command":"cat a.txt","name":"a.txt","path":"/w/src/a.txt"}]`},
		{"cat a.txt | head", `[{"type":"read","command":"cat a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"cat a.txt | grep foo", `[{"type":"read","command":"cat a.txt","name":"a.txt","path":"/w/a.txt"},{"type":"search","command":"grep foo","query":"foo","path":null}]`},
		{"grep foo a.txt | wc -l", `[{"type":"search","command":"grep foo a.txt","query":"foo","path":"a.txt"}]`},
		{"ls | wc -l", `[{"type":"listFiles","command":"ls","path":null}]`},
		{"ls && pwd", `[{"type":"unknown","command":"ls && pwd"}]`},
		{"cat a.txt && cat b.txt", `[{"type":"read","command":"cat a.txt","name":"a.txt","path":"/w/a.txt"},{"type":"read","command":"cat b.txt","name":"b.txt","path":"/w/b.txt"}]`},
		{"echo a; ls", `[{"type":"listFiles","command":"ls","path":null}]`},
		{"wc -l a.txt", `[{"type":"unknown","command":"wc -l a.txt"}]`},
		{"awk '{print $1}' a.txt", `[{"type":"read","command":"awk '{print $1}' a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"less a.txt", `[{"type":"read","command":"less a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"more a.txt", `[{"type":"read","command":"more a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"cat", `[{"type":"unknown","command":"cat"}]`},
		{"tree", `[{"type":"listFiles","command":"tree","path":null}]`},
		{"du -sh .", `[{"type":"listFiles","command":"du -sh .","path":"."}]`},
		{"file a.txt", `[{"type":"unknown","command":"file a.txt"}]`},
		{"stat a.txt", `[{"type":"unknown","command":"stat a.txt"}]`},
		{"which go", `[{"type":"unknown","command":"which go"}]`},
		{"go test ./...", `[{"type":"unknown","command":"go test ./..."}]`},
		{"ls src | sort", `[{"type":"listFiles","command":"ls src","path":"src"}]`},
		{"rg foo | head -n 5", `[{"type":"search","command":"rg foo","query":"foo","path":null}]`},
		{"true", `[{"type":"unknown","command":"true"}]`},
		{"cat /abs/path/file.txt", `[{"type":"read","command":"cat /abs/path/file.txt","name":"file.txt","path":"/abs/path/file.txt"}]`},
		{"head -c 100 a.txt", `[{"type":"unknown","command":"head -c 100 a.txt"}]`},
		{"grep -e foo -e bar a.txt", `[{"type":"search","command":"grep -e foo -e bar a.txt","query":"foo","path":"a.txt"}]`},
		{"rg -g '*.go' foo", `[{"type":"search","command":"rg -g '*.go' foo","query":"foo","path":null}]`},
		{"sed -n 5p a.txt", `[{"type":"read","command":"sed -n 5p a.txt","name":"a.txt","path":"/w/a.txt"}]`},
		{"cat a.txt b.txt", `[{"type":"unknown","command":"cat a.txt b.txt"}]`},
		{"ls -1", `[{"type":"listFiles","command":"ls -1","path":null}]`},
		{"ls a.txt b.txt", `[{"type":"listFiles","command":"ls a.txt b.txt","path":"a.txt"}]`},
		{"echo $HOME", `[{"type":"unknown","command":"echo $HOME"}]`},
		{"cd /x && ls", `[{"type":"listFiles","command":"ls","path":null}]`},
		{"cd /x && cat ../y.txt", `[{"type":"read","command":"cat ../y.txt","name":"y.txt","path":"/y.txt"}]`},
	} {
		got, err := json.Marshal(commandActions(tc.script, parseCommand(nil, tc.script).cmds, "/w"))
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(got), "%q", tc.script)
	}
}
