package review

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	protocol "appserver/protocol/v2"
)

// maxDiff caps the diff handed to the reviewer (bytes); the rest is cut with a note.
const maxDiff = 256 << 10

// Diff is the change the target names, from git in cwd ("" for custom instructions or outside a
// repository): the reviewer gets it with the prompt, since its request carries no tools.
func Diff(ctx context.Context, cwd string, target protocol.ReviewTarget) string {
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager", "-c", "core.quotepath=off"}, args...)...)
		cmd.Dir = cwd
		out, _ := cmd.Output()
		return string(out)
	}
	var d string
	switch v := target.Value.(type) {
	case protocol.ReviewTargetUncommittedChanges:
		d = git("diff", "HEAD", "--no-color")
		if strings.TrimSpace(d) == "" {
			d = git("diff", "--cached", "--no-color") // no commit yet
		}
		for _, f := range strings.Split(strings.TrimSpace(git("ls-files", "--others", "--exclude-standard")), "\n") {
			if f == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, "git", "--no-pager", "diff", "--no-color", "--no-index", "--", "/dev/null", f)
			cmd.Dir = cwd
			out, _ := cmd.Output() // exit status 1 means "differs"
			d += string(out)
			if len(d) > maxDiff {
				break
			}
		}
	case protocol.ReviewTargetBaseBranch:
		if base := mergeBase(ctx, cwd, v.Branch); base != "" {
			d = git("diff", "--no-color", base)
		}
	case protocol.ReviewTargetCommit:
		d = git("show", "--no-color", "--format=commit %H%n%n%B", v.Sha)
	}
	if len(d) > maxDiff {
		d = d[:maxDiff] + fmt.Sprintf("\n[diff cut at %d bytes]\n", maxDiff)
	}
	return d
}

// DiffMessage is the text that hands the diff to the reviewer.
func DiffMessage(diff string) string {
	return "The change to review, as a unified diff:\n\n```diff\n" + strings.TrimRight(diff, "\n") + "\n```"
}
