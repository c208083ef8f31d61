// Package review runs review turns: a review target (uncommitted changes, a base branch, a commit,
// custom instructions) becomes the reviewer's prompt, the reviewer sub-agent reads the change, and its
// answer (see package findings) ends the turn and joins the thread's history.
package review

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	protocol "appserver/protocol/v2"
)

// Instructions is the reviewer's developer message, in place of the base instructions (our own
// wording); the output format is the reference's.
const Instructions = `# Code review

You review a change another engineer made. Report only problems the author would want to fix once told about them:
- it changes behaviour for the worse: a wrong result, a crash, a security hole, lost data, a clear slowdown, or code that will be hard to keep right;
- it was introduced by this change, not already there;
- it is one specific, actionable problem, and you can point at the code it affects; no speculation about code you have not seen;
- it is not plainly what the author meant to do.

Read the change yourself with the shell tools you have (git diff, git show, reading files); you cannot change files. Leave out style nits, formatting, typos and documentation unless they hide a real problem. Look at every changed file; report each distinct problem once, at the smallest line range that shows it (a few lines at most).

For each finding:
- title: at most 80 characters, starting with its priority tag: [P0] must be fixed before anything ships, [P1] fix soon, [P2] fix eventually, [P3] nice to have;
- body: one short paragraph, matter-of-fact, saying why it is wrong and under which inputs or conditions it shows; code only in backticks, no more than three lines;
- confidence_score: how sure you are, 0.0 to 1.0;
- priority: 0 to 3, matching the tag;
- code_location: the absolute file path and a line range that overlaps the change.

Then give the verdict: "patch is correct" when nothing blocks it (existing code and tests keep working and no finding is blocking), else "patch is incorrect", with a one to three sentence explanation and your confidence in it.

Answer with this JSON object only, no code fences, no other text:
{"findings":[{"title":"...","body":"...","confidence_score":0.0,"priority":0,"code_location":{"absolute_file_path":"...","line_range":{"start":1,"end":1}}}],"overall_correctness":"patch is correct","overall_explanation":"...","overall_confidence_score":0.0}
`

// Request is what a review turn sends and shows for a target.
type Request struct {
	Prompt string // the user message the reviewer gets
	Hint   string // the short description shown in enteredReviewMode
	Target protocol.ReviewTarget
}

// ErrEmpty marks a target with a required field left empty.
var ErrEmpty = errors.New("review target is incomplete")

// emptyError names the empty field, in the reference's words ("branch must not be empty").
type emptyError string

func (e emptyError) Error() string        { return string(e) + " must not be empty" }
func (e emptyError) Is(target error) bool { return target == ErrEmpty }

// Resolve builds the prompt and hint for target; cwd is where git runs to find a merge base.
func Resolve(ctx context.Context, cwd string, target protocol.ReviewTarget) (Request, error) {
	r, err := resolve(ctx, cwd, target)
	r.Target = target
	return r, err
}

func resolve(ctx context.Context, cwd string, target protocol.ReviewTarget) (Request, error) {
	switch v := target.Value.(type) {
	case protocol.ReviewTargetUncommittedChanges:
		return Request{
			Prompt: "Review the changes in the working tree that are not committed yet (staged, unstaged and untracked files) and report prioritized findings.",
			Hint:   "current changes",
		}, nil
	case protocol.ReviewTargetBaseBranch:
		if strings.TrimSpace(v.Branch) == "" {
			return Request{}, emptyError("branch")
		}
		hint := "changes against '" + v.Branch + "'"
		if base := mergeBase(ctx, cwd, v.Branch); base != "" {
			return Request{Prompt: fmt.Sprintf("Review the changes of this branch against the base branch '%s'. Their merge base is commit %s: run `git diff %s` to see what changed, then report prioritized findings.", v.Branch, base, base), Hint: hint}, nil
		}
		return Request{Prompt: fmt.Sprintf("Review the changes of this branch against the base branch '%s'. Find the merge base with the upstream of '%s' (for example `git merge-base HEAD %s`), diff against it, then report prioritized findings.", v.Branch, v.Branch, v.Branch), Hint: hint}, nil
	case protocol.ReviewTargetCommit:
		if strings.TrimSpace(v.Sha) == "" {
			return Request{}, emptyError("sha")
		}
		short := v.Sha
		if len(short) > 7 {
			short = short[:7]
		}
		if v.Title != nil && *v.Title != "" {
			return Request{Prompt: fmt.Sprintf("Review the changes made by commit %s (\"%s\") and report prioritized findings.", v.Sha, *v.Title), Hint: fmt.Sprintf("commit %s: %s", short, *v.Title)}, nil
		}
		return Request{Prompt: fmt.Sprintf("Review the changes made by commit %s and report prioritized findings.", v.Sha), Hint: "commit " + short}, nil
	case protocol.ReviewTargetCustom:
		in := strings.TrimSpace(v.Instructions)
		if in == "" {
			return Request{}, emptyError("instructions")
		}
		return Request{Prompt: in, Hint: in}, nil
	}
	return Request{}, emptyError("target")
}

// mergeBase is the merge base of HEAD and branch (its upstream when that is ahead), or "".
func mergeBase(ctx context.Context, cwd, branch string) string {
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = cwd
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	ref := branch
	if up := git("rev-parse", "--abbrev-ref", "--symbolic-full-name", branch+"@{upstream}"); up != "" {
		ref = up
	}
	return git("merge-base", "HEAD", ref)
}

// Handoff is the user-role message that carries the review's result into the parent thread's history
// (the reference's `<user_action>` shape, our own wording).
func Handoff(rendered string) string {
	return "<user_action>\n  <context>The user ran a code review. The reviewer's full output follows; the user may ask to address some of its comments.</context>\n  <action>review</action>\n  <results>\n  " + rendered + "\n  </results>\n  </user_action>\n"
}

// HandoffCutShort is the hand-off of a review that did not finish: no results, and a note for the
// next turn (our own wording).
func HandoffCutShort() string {
	return "<user_action>\n  <context>The user started a code review that did not finish. If they ask about it, suggest running the review again and letting it complete.</context>\n  <action>review</action>\n  <results>\n  None.\n  </results>\n</user_action>\n"
}
