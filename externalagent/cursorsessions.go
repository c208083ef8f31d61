package externalagent

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// cursorTranscriptLine is the part of a Cursor agent transcript line the import reads.
type cursorTranscriptLine struct {
	Role        string          `json:"role"`
	TimestampMs int64           `json:"timestamp_ms"`
	Message     json.RawMessage `json:"message"`
}

// The patterns are compiled on first use: the server links this package but rarely imports sessions.
var (
	userQueryRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<user_query>(.*?)</user_query>`) })
	metaTagRE   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)<(timestamp|cursor_commands)>.*?</(timestamp|cursor_commands)>`)
	})
)

// cursorPrompt is the typed part of a Cursor user message: its <user_query> contents, else the text
// without Cursor's metadata tags.
func cursorPrompt(s string) string {
	if m := userQueryRE().FindAllStringSubmatch(s, -1); len(m) > 0 {
		parts := make([]string, 0, len(m))
		for _, x := range m {
			parts = append(parts, strings.TrimSpace(x[1]))
		}
		return strings.Join(parts, "\n\n")
	}
	return strings.TrimSpace(metaTagRE().ReplaceAllString(s, ""))
}

// readCursorTranscript parses a Cursor agent transcript of the project at cwd; lines without a time take
// the file's modification time.
func readCursorTranscript(path, cwd string) (Transcript, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Transcript{}, false, err
	}
	fallback := st.ModTime().Unix()
	f, err := os.Open(path)
	if err != nil {
		return Transcript{}, false, err
	}
	defer f.Close()
	t := Transcript{Cwd: cwd}
	var prompt string
	any := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var l cursorTranscriptLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || (l.Role != "user" && l.Role != "assistant") || len(l.Message) == 0 {
			continue
		}
		any = true
		at := fallback
		if l.TimestampMs > 0 {
			at = l.TimestampMs / 1000
		}
		if l.Role == "user" {
			text, results := userContent(l.Message)
			if user := cursorPrompt(text); user != "" {
				if t.Preview == "" {
					t.Preview = user
				}
				if prompt == "" {
					prompt = firstLine(user)
				}
				t.startTurn(at, user)
			}
			t.addAgent(at, results...)
			continue
		}
		if text := assistantContent(l.Message); text != "" {
			t.addAgent(at, text)
		}
	}
	if err := sc.Err(); err != nil {
		return Transcript{}, false, err
	}
	if !any {
		return Transcript{}, false, nil
	}
	if title := shorten(prompt, titleLimit); title != "" {
		t.Title = &title
		if title != shorten(firstLine(t.Preview), titleLimit) {
			t.Name = title
		}
	}
	return t, true, nil
}

// cursorSessionFiles lists a Cursor project's transcripts: agent-transcripts/*.jsonl and
// agent-transcripts/<session>/*.jsonl (sub-agent folders below are not sessions).
func cursorSessionFiles(project string) []string {
	root := filepath.Join(project, "agent-transcripts")
	var out []string
	top, _ := filepath.Glob(filepath.Join(root, "*.jsonl"))
	nested, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	out = append(out, top...)
	return append(out, nested...)
}

// decodeProjectKey finds the existing directory a Cursor project key names: the path with its separators
// turned into "-" and the leading one dropped ("" when no directory matches).
func decodeProjectKey(key string) string {
	tokens := strings.Split(key, "-")
	var walk func(dir string, i int) string
	walk = func(dir string, i int) string {
		if i == len(tokens) {
			return dir
		}
		// Try the longest component first: names may hold dashes.
		for j := len(tokens); j > i; j-- {
			name := strings.Join(tokens[i:j], "-")
			if name == "" {
				continue
			}
			next := filepath.Join(dir, name)
			if isDir(next) {
				if found := walk(next, j); found != "" {
					return found
				}
			}
		}
		return ""
	}
	return walk(string(filepath.Separator), 0)
}

// cursorSessionCwd is the working directory of the Cursor transcript at path (under projects/<key>/).
func (s *Service) cursorSessionCwd(path string) string {
	rel, err := filepath.Rel(filepath.Join(s.SourceHome, "projects"), path)
	if err != nil {
		return ""
	}
	key, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return decodeProjectKey(key)
}
