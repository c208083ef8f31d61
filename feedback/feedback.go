// Package feedback writes a feedback report locally: a zip archive holding report.json (the event a
// feedback service would receive: classification, reason, tags) and manifest.json (the attached log
// files, none here), as the reference's feedback/save does.
package feedback

import (
	"archive/zip"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Report is what the user filed.
type Report struct {
	Classification string
	Reason         *string
	Tags           map[string]string
	ThreadID       string // "no-active-thread-<uuid>" when none was given
	CLIVersion     string
	SessionSource  string
}

// Save writes the report archive to path (mode 0600).
func Save(path string, r Report) error {
	title := "[" + capitalize(r.Classification) + "]: Codex session " + r.ThreadID
	tags := map[string]string{}
	for k, v := range r.Tags {
		tags[k] = v
	}
	tags["classification"] = r.Classification
	tags["cli_version"] = r.CLIVersion
	tags["session_source"] = r.SessionSource
	tags["thread_id"] = r.ThreadID
	event := map[string]any{
		"event_id":  strings.ReplaceAll(uuid.NewString(), "-", ""),
		"message":   title,
		"timestamp": float64(time.Now().UnixMicro()) / 1e6,
		"tags":      tags,
	}
	if r.Reason != nil {
		tags["reason"] = *r.Reason
		event["exception"] = map[string]any{"values": []map[string]string{{"type": title, "value": *r.Reason}}}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, part := range []struct {
		name string
		v    any
	}{{"report.json", event}, {"manifest.json", []any{}}} {
		w, err := zw.Create(part.name)
		if err == nil {
			err = json.NewEncoder(w).Encode(part.v)
		}
		if err != nil {
			zw.Close()
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// NoThreadID is the thread id a report without a thread carries.
func NoThreadID() string { return "no-active-thread-" + uuid.Must(uuid.NewV7()).String() }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
