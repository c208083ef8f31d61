package applypatch

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// RejectedOutput is the tool output sent to the model when the user declines the patch.
const RejectedOutput = "patch rejected by user"

// SuccessText is the bare success report: "Success. Updated the following files:"
// then one "A|M|D path" line per hunk (adds, then updates, then deletes, each in
// patch order; paths as written in the patch, a move's destination for moves).
func SuccessText(pl *Plan) string {
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, group := range []struct {
		kind   Kind
		letter string
	}{{KindAdd, "A "}, {KindUpdate, "M "}, {KindDelete, "D "}} {
		for _, f := range pl.Files {
			if f.Kind == group.kind {
				b.WriteString(group.letter)
				b.WriteString(f.DisplayPath)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// SuccessOutput is the tool output for an applied patch, SuccessText wrapped
// as the reference does: "Exit code: 0\nWall time: 0 seconds\nOutput:\n…".
func SuccessOutput(pl *Plan, wall time.Duration) string {
	return WrapOutput(0, wall, SuccessText(pl))
}

// WrapOutput frames a tool body with its exit code and wall time, e.g.
// "Exit code: 1\nWall time: 0.3 seconds\nOutput:\n<body>".
func WrapOutput(exitCode int, wall time.Duration, body string) string {
	return "Exit code: " + strconv.Itoa(exitCode) + "\nWall time: " + FormatWallTime(wall) + " seconds\nOutput:\n" + body
}

// FormatWallTime renders a duration in seconds rounded to one decimal, without
// a trailing ".0" ("0", "0.3", "12").
func FormatWallTime(d time.Duration) string {
	s := math.Round(d.Seconds()*10) / 10
	return strconv.FormatFloat(s, 'f', -1, 64)
}

// VerificationFailedOutput is the tool output for a patch that failed to parse
// or plan (no fileChange item is emitted in that case): "patch rejected: empty
// patch" for ErrEmptyPatch, else "apply_patch verification failed: <err>".
func VerificationFailedOutput(err error) string {
	if errors.Is(err, ErrEmptyPatch) {
		return "patch rejected: " + err.Error()
	}
	return "apply_patch verification failed: " + err.Error()
}

// ApplyFailedOutput is the tool output when Apply fails after approval (the
// item then completes with status "failed"): the error wrapped with exit code 1.
func ApplyFailedOutput(err error, wall time.Duration) string {
	return WrapOutput(1, wall, err.Error()+"\n")
}
