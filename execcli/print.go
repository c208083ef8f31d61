package execcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"appserver/config"
	protocol "appserver/protocol/v2"
	"appserver/server"
)

// printer shows a run: JSONL events (--json) or the human-readable transcript.
type printer interface {
	// threadStarted follows thread/start or thread/resume.
	threadStarted(info startInfo, cfg *config.Config, prompt string)
	// notification shows one engine notification; events are what the mapper made of it.
	notification(method string, params json.RawMessage, events []any)
	// turnFailed reports a turn exec gave up on (unreachable model).
	turnFailed(message string)
	// topLevelError reports a request the engine refused after the thread started.
	topLevelError(message string)
	// finish closes a completed turn (the human output prints the final message on stdout).
	finish(m *mapper)
}

// jsonPrinter writes one JSON object per line on stdout.
type jsonPrinter struct{ w io.Writer }

func newJSONPrinter(w io.Writer) *jsonPrinter { return &jsonPrinter{w: w} }

func (p *jsonPrinter) emit(ev any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		b.Reset()
		msg, _ := json.Marshal("failed to serialize exec json event: " + err.Error())
		fmt.Fprintf(&b, "{\"type\":\"error\",\"message\":%s}\n", msg)
	}
	_, _ = p.w.Write(b.Bytes())
}

func (p *jsonPrinter) threadStarted(info startInfo, _ *config.Config, _ string) {
	p.emit(ThreadStarted{Type: EventThreadStarted, ThreadID: info.threadID})
}

func (p *jsonPrinter) notification(_ string, _ json.RawMessage, events []any) {
	for _, ev := range events {
		p.emit(ev)
	}
}

func (p *jsonPrinter) turnFailed(message string) {
	p.emit(TurnFailed{Type: EventTurnFailed, Error: ErrorBody{Message: message}})
}

func (p *jsonPrinter) topLevelError(message string) {
	p.emit(ErrorEvent{Type: EventError, Message: message})
}

func (p *jsonPrinter) finish(*mapper) {}

// maxOutputLines bounds the command output shown by the human transcript.
const maxOutputLines = 20

// humanPrinter writes the transcript on stderr and the final message on stdout, as the reference.
type humanPrinter struct {
	stdout, stderr io.Writer
	ansi           bool
}

func newHumanPrinter(stdout, stderr io.Writer, ansi bool) *humanPrinter {
	return &humanPrinter{stdout: stdout, stderr: stderr, ansi: ansi}
}

func (p *humanPrinter) style(code, s string) string {
	if !p.ansi {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p *humanPrinter) line(format string, a ...any) { fmt.Fprintf(p.stderr, format+"\n", a...) }

func (p *humanPrinter) threadStarted(info startInfo, cfg *config.Config, prompt string) {
	p.line("appserver exec (codex-cli %s compatible)\n--------", server.CompatVersion)
	effort := "none"
	if info.effort != nil {
		effort = string(*info.effort)
	}
	summary := cfg.ModelReasoningSummary
	if summary == "" {
		summary = "none"
	}
	for _, kv := range [][2]string{
		{"workdir", info.cwd}, {"model", info.model}, {"provider", info.provider}, {"approval", "never"},
		{"sandbox", describeSandbox(info.sandbox)}, {"reasoning effort", effort}, {"reasoning summaries", summary},
		{"session id", info.threadID},
	} {
		p.line("%s %s", p.style("1", kv[0]+":"), kv[1])
	}
	p.line("--------")
	p.line("%s\n%s", p.style("36", "user"), prompt)
}

func (p *humanPrinter) notification(method string, params json.RawMessage, events []any) {
	switch method {
	case protocol.NotifyWarning:
		var n protocol.WarningNotification
		if json.Unmarshal(params, &n) == nil {
			p.line("%s %s", p.style("1;33", "warning:"), n.Message)
		}
	case protocol.NotifyConfigWarning, protocol.NotifyDeprecationNotice:
		for _, ev := range events {
			if it, ok := ev.(ItemEvent); ok {
				if e, ok := it.Item.(ErrorItem); ok {
					p.line("%s %s", p.style("1;33", "warning:"), e.Message)
				}
			}
		}
	case protocol.NotifyError:
		var n protocol.ErrorNotification
		if json.Unmarshal(params, &n) == nil {
			p.line("%s %s", p.style("31", "ERROR:"), n.Error.Message)
		}
	case protocol.NotifyItemStarted:
		var n protocol.ItemStartedNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		switch v := n.Item.Value.(type) {
		case protocol.ThreadItemCommandExecution:
			p.line("%s\n%s in %s", p.style("3;35", "exec"), p.style("1", v.Command), v.Cwd)
		case protocol.ThreadItemMcpToolCall:
			p.line("%s %s/%s started", p.style("35", "mcp:"), v.Server, v.Tool)
		case protocol.ThreadItemWebSearch:
			p.line("%s %s", p.style("35", "web search:"), v.Query)
		}
	case protocol.NotifyItemCompleted:
		var n protocol.ItemCompletedNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		p.itemCompleted(n.Item)
	case protocol.NotifyTurnPlanUpdated:
		var n protocol.TurnPlanUpdatedNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		p.line("%s", p.style("35", "Plan update"))
		for _, s := range n.Plan {
			mark := "☐"
			switch s.Status {
			case protocol.TurnPlanStepStatusCompleted:
				mark = "✔"
			case protocol.TurnPlanStepStatusInProgress:
				mark = "→"
			}
			p.line("  %s %s", mark, s.Step)
		}
	case protocol.NotifyTurnCompleted:
		var n protocol.TurnCompletedNotification
		if json.Unmarshal(params, &n) == nil && n.Turn.Status == protocol.TurnStatusFailed {
			for _, ev := range events {
				if f, ok := ev.(TurnFailed); ok {
					p.line("%s %s", p.style("31", "ERROR:"), f.Error.Message)
				}
			}
		}
	}
}

func (p *humanPrinter) itemCompleted(it protocol.ThreadItem) {
	switch v := it.Value.(type) {
	case protocol.ThreadItemReasoning:
		if text := strings.Join(v.Summary, "\n"); strings.TrimSpace(text) != "" {
			p.line("%s", p.style("3;35", text))
		}
	case protocol.ThreadItemAgentMessage:
		p.line("%s\n%s", p.style("3;35", "codex"), v.Text)
	case protocol.ThreadItemCommandExecution:
		dur := ""
		if v.DurationMs != nil {
			dur = " in " + formatDuration(time.Duration(*v.DurationMs)*time.Millisecond)
		}
		out := ""
		if v.AggregatedOutput != nil {
			lines := strings.Split(*v.AggregatedOutput, "\n")
			if len(lines) > maxOutputLines {
				lines = lines[:maxOutputLines]
			}
			out = strings.Join(lines, "\n")
		}
		switch {
		case v.ExitCode != nil && *v.ExitCode == 0:
			p.line("%s", p.style("32", " succeeded"+dur+":"))
		case v.ExitCode != nil:
			p.line("%s", p.style("31", fmt.Sprintf(" exited %d%s:", *v.ExitCode, dur)))
		default:
			p.line("%s", p.style("31", " "+snake(string(v.Status))+dur+":"))
		}
		p.line("%s", p.style("2", out))
	case protocol.ThreadItemMcpToolCall:
		p.line("%s %s/%s (%s)", p.style("35", "mcp:"), v.Server, v.Tool, snake(string(v.Status)))
	case protocol.ThreadItemFileChange:
		p.line("%s %s", p.style("35", "file update:"), snake(string(v.Status)))
		for _, c := range v.Changes {
			p.line("%s %s", strings.ToUpper(patchKind(c.Kind)[:1]), c.Path)
		}
	}
}

func (p *humanPrinter) turnFailed(message string) {
	p.line("%s %s", p.style("31", "ERROR:"), message)
}

func (p *humanPrinter) topLevelError(message string) { p.turnFailed(message) }

func (p *humanPrinter) finish(m *mapper) {
	if m.usage != nil { // a review reports no usage: the reference then prints no count
		p.line("%s\n%s", p.style("3;35", "tokens used"), withSeparators(m.totalTokens()))
	}
	if m.final != nil {
		fmt.Fprintln(p.stdout, *m.final)
	}
}

// formatDuration is "250ms" under a second, "1.50s" under a minute, else "2m 05s".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func withSeparators(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
