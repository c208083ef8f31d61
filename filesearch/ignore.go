package filesearch

import (
	"path/filepath"
	"strings"
)

// The matcher below replaces go-git's plumbing/format/gitignore, which the walk used for nothing else:
// that package pulls twelve others into the server (go-git's config format, gcfg and, through it,
// encoding/gob, go-billy, x/net/context), whose initialisers ran at every start of the binary. It keeps
// the semantics the walk had, pattern for pattern (ignore_test.go checks them case by case).

// ignoreVerdict is what one rule says about a path.
type ignoreVerdict int

const (
	noVerdict ignoreVerdict = iota // the rule does not match
	excluded                       // the rule ignores the path
	included                       // a "!" rule re-includes the path
)

// ignoreRule is one line of an ignore file.
type ignoreRule struct {
	parts    []string // the pattern split at '/', each part a filepath.Match pattern (or "**")
	negate   bool     // "!pattern"
	dirOnly  bool     // "pattern/": the last component must be a directory
	anchored bool     // the pattern has a '/': matched from the first component on; else against any one
}

// parseIgnoreRule reads one non-empty, non-comment line of an ignore file.
func parseIgnoreRule(line string) ignoreRule {
	var r ignoreRule
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		r.negate, line = true, rest
	}
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " ")
	}
	if rest, ok := strings.CutSuffix(line, "/"); ok {
		r.dirOnly, line = true, rest
	}
	r.anchored = strings.Contains(line, "/")
	r.parts = strings.Split(line, "/")
	return r
}

// match applies the rule to a path given as its components, relative to the ignore file's directory.
func (r *ignoreRule) match(comps []string, isDir bool) ignoreVerdict {
	if len(comps) == 0 {
		return noVerdict
	}
	var ok bool
	if r.anchored {
		ok = r.matchPath(comps, isDir)
	} else {
		ok = r.matchName(comps, isDir)
	}
	switch {
	case !ok:
		return noVerdict
	case r.negate:
		return included
	}
	return excluded
}

// matchName: a pattern without '/' matches when any component matches it (a matching directory
// covers what is below it); a directory-only pattern does not match a file as the last component.
func (r *ignoreRule) matchName(comps []string, isDir bool) bool {
	for i, c := range comps {
		ok, err := filepath.Match(r.parts[0], c)
		if err != nil {
			return false
		}
		if ok {
			return !r.dirOnly || isDir || i < len(comps)-1
		}
	}
	return false
}

// matchPath: the parts match leading components one for one; "**" lets the next part match any later
// component, and a trailing "**" matches whatever is left. Empty parts (a leading '/' or "//") are
// skipped; a part that only contains "**" among other characters never matches.
func (r *ignoreRule) matchPath(comps []string, isDir bool) bool {
	matched, anyDepth := false, false
	for i, part := range r.parts {
		switch {
		case part == "":
			anyDepth = false
			continue
		case part == "**":
			if i == len(r.parts)-1 {
				return matched && r.lastOK(comps, isDir)
			}
			anyDepth = true
			continue
		case strings.Contains(part, "**"):
			return false
		case len(comps) == 0:
			return false
		}
		if anyDepth {
			anyDepth, matched = false, false
			for len(comps) > 0 && !matched {
				ok, err := filepath.Match(part, comps[0])
				if err != nil {
					return false
				}
				matched, comps = ok, comps[1:]
			}
			continue
		}
		if ok, err := filepath.Match(part, comps[0]); err != nil || !ok {
			return false
		}
		matched, comps = true, comps[1:]
	}
	return matched && r.lastOK(comps, isDir)
}

// lastOK: a directory-only pattern whose parts used up the path matched its last component, which
// must then be a directory.
func (r *ignoreRule) lastOK(rest []string, isDir bool) bool {
	return !r.dirOnly || isDir || len(rest) > 0
}
