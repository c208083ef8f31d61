package externalagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Transcript is one source-agent session converted to the turns of an imported thread.
type Transcript struct {
	// Cwd is the session's working directory ("" when no line names one).
	Cwd string
	// Title is what detection shows: the session's custom or generated title, else the first line of its
	// first typed prompt (slash-command records skipped), shortened.
	Title *string
	// Name is the thread name the import gives: the title, unless it is the first line of the preview.
	Name string
	// Preview is the first user message, trimmed.
	Preview string
	// Turns are the exchanges, one per user message.
	Turns []TranscriptTurn
	// LastAt is the time of the last message (unix seconds).
	LastAt int64
}

// TranscriptTurn is one user message and the assistant messages (tool calls and results rendered as text)
// that follow it.
type TranscriptTurn struct {
	StartedAt int64
	User      string
	Agent     []string
}

// titleLimit is the longest detected title, in characters, before it is shortened with "...".
const titleLimit = 120

// transcriptLine is the part of a source session line the import reads.
type transcriptLine struct {
	Type        string          `json:"type"`
	Cwd         string          `json:"cwd"`
	Timestamp   string          `json:"timestamp"`
	IsSidechain bool            `json:"isSidechain"`
	IsMeta      bool            `json:"isMeta"`
	CustomTitle string          `json:"customTitle"`
	AITitle     string          `json:"aiTitle"`
	Message     json.RawMessage `json:"message"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	ToolUseID string          `json:"tool_use_id"`
}

// startTurn opens a turn the user started at at.
func (t *Transcript) startTurn(at int64, user string) {
	t.Turns = append(t.Turns, TranscriptTurn{StartedAt: at, User: user})
	t.LastAt = at
}

// addAgent appends agent texts to the last turn, if any, as of at.
func (t *Transcript) addAgent(at int64, texts ...string) {
	if len(texts) == 0 || len(t.Turns) == 0 {
		return
	}
	last := &t.Turns[len(t.Turns)-1]
	last.Agent = append(last.Agent, texts...)
	t.LastAt = at
}

// ReadTranscript parses a source session file; malformed lines are skipped. ok is false when the file holds
// no conversation line at all.
func ReadTranscript(path string) (Transcript, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Transcript{}, false, err
	}
	defer f.Close()
	var t Transcript
	var custom, ai, prompt string
	any := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var l transcriptLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Type {
		case "custom-title":
			if l.CustomTitle != "" {
				custom = l.CustomTitle
			}
			continue
		case "ai-title":
			if l.AITitle != "" {
				ai = l.AITitle
			}
			continue
		case "user", "assistant":
		default:
			continue
		}
		any = true
		if t.Cwd == "" && l.Cwd != "" {
			t.Cwd = l.Cwd
		}
		if l.IsSidechain || l.IsMeta || len(l.Message) == 0 {
			continue
		}
		at := lineTime(l.Timestamp)
		if l.Type == "user" {
			user, results := userContent(l.Message)
			if strings.TrimSpace(user) != "" {
				if t.Preview == "" {
					t.Preview = strings.TrimSpace(user)
				}
				if prompt == "" && !isCommandMessage(user) {
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
	title := custom
	if title == "" {
		title = ai
	}
	if title == "" {
		title = shorten(prompt, titleLimit)
	}
	if title != "" {
		t.Title = &title
		// The thread is named only when its title is not what its preview already shows.
		if title != shorten(firstLine(t.Preview), titleLimit) {
			t.Name = title
		}
	}
	return t, true, nil
}

// firstLine is the first line of s holding more than whitespace, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// isCommandMessage reports whether a prompt is the record of a slash command rather than typed text.
func isCommandMessage(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "<command-") || strings.HasPrefix(s, "<local-command-")
}

// shorten cuts s to at most n characters, the last three being "...".
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

func lineTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.Unix()
}

// message is a source message: content is a string or a list of blocks.
type message struct {
	Content json.RawMessage `json:"content"`
}

func blocksOf(raw json.RawMessage) (string, []contentBlock, bool) {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return "", nil, false
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil, true
	}
	var blocks []contentBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		return "", nil, false
	}
	return "", blocks, false
}

// userContent returns a user line's prompt text (text blocks, unsupported blocks noted) and its tool results
// rendered as assistant text.
func userContent(raw json.RawMessage) (string, []string) {
	s, blocks, isString := blocksOf(raw)
	if isString {
		return s, nil
	}
	var parts, results []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		case "tool_result":
			head := "[external_agent_tool_result]"
			if b.IsError {
				head = "[external_agent_tool_result: error]"
			}
			results = append(results, head+"\n"+toolResultText(b.Content)+"\n[/external_agent_tool_result]")
		default:
			parts = append(parts, fmt.Sprintf("[external unsupported block: %s]", b.Type))
		}
	}
	if len(parts) == 0 {
		return "", results
	}
	return strings.Join(parts, "\n\n"), results
}

func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, fmt.Sprintf("[external unsupported block: %s]", b.Type))
		}
	}
	return strings.Join(parts, "\n")
}

// assistantContent renders an assistant line: its text, its tool calls as marked blocks; thinking is dropped.
func assistantContent(raw json.RawMessage) string {
	s, blocks, isString := blocksOf(raw)
	if isString {
		return s
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		case "thinking", "redacted_thinking":
		case "tool_use", "server_tool_use":
			parts = append(parts, "[external_agent_tool_call: "+b.Name+"]\n"+toolCallBody(b.Name, b.Input)+"\n[/external_agent_tool_call]")
		default:
			parts = append(parts, fmt.Sprintf("[external unsupported block: %s]", b.Type))
		}
	}
	return strings.Join(parts, "\n\n")
}

// toolCallBody summarises a tool call's input: the file of file tools, the command of Bash, the description of
// Task, the compact JSON input otherwise (members in their original order).
func toolCallBody(name string, input json.RawMessage) string {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	str := func(k string) (string, bool) {
		v, ok := fields[k].(string)
		return v, ok
	}
	switch name {
	case "Read", "Write", "Edit", "MultiEdit":
		if p, ok := str("file_path"); ok {
			return "file: " + p
		}
	case "Bash", "Shell":
		if c, ok := str("command"); ok {
			if d, ok := str("description"); ok {
				return "description: " + d + "\ncommand: " + c
			}
			return "command: " + c
		}
	case "Task":
		if d, ok := str("description"); ok {
			return "description: " + d
		}
	}
	var buf bytes.Buffer
	if len(input) == 0 || json.Compact(&buf, input) != nil {
		return "input: {}"
	}
	return "input: " + buf.String()
}

// ApproxTokens is the reference's estimate of an imported history's size: a quarter of the bytes of every
// message up to the last assistant one, rounded up (0 without any assistant message).
func (t Transcript) ApproxTokens() int64 {
	var total, upTo int64
	for _, turn := range t.Turns {
		total += int64(len(turn.User))
		for _, a := range turn.Agent {
			total += int64(len(a))
			upTo = total
		}
	}
	return (upTo + 3) / 4
}
