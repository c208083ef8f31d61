package filesearch

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/stretchr/testify/require"
)

// ignoreCases are rule/path pairs with the verdict the walk gives them (the semantics of go-git's
// gitignore package, which it used before; TestIgnoreRuleMatchesGoGit checks the same and more).
var ignoreCases = []struct {
	rule  string
	path  string
	isDir bool
	want  ignoreVerdict
}{
	// a name without '/' matches any component; below a matching directory everything matches
	{"*.log", "a.log", false, excluded},
	{"*.log", "x/y/a.log", false, excluded},
	{"*.log", "a.txt", false, noVerdict},
	{"build", "build", true, excluded},
	{"build", "src/build/out.o", false, excluded},
	{"build", "builds", true, noVerdict},
	{"!keep", "keep", false, included},
	{"!keep", "other", false, noVerdict},
	// directory-only rules
	{"out/", "out", true, excluded},
	{"out/", "out", false, noVerdict},
	{"out/", "out/file", false, excluded},
	{"out/", "x/out", false, noVerdict},
	{"out/", "x/out/f", false, excluded},
	// a '/' anchors the rule to the ignore file's directory
	{"/root", "root", false, excluded},
	{"/root", "sub/root", false, noVerdict},
	{"/root", "root/below", false, excluded},
	{"a/b", "a/b", false, excluded},
	{"a/b", "x/a/b", false, noVerdict},
	{"a/b", "a/b/c", false, excluded},
	{"a/*.go", "a/m.go", false, excluded},
	{"a/*.go", "a/sub/m.go", false, noVerdict},
	{"a/b/", "a/b", false, noVerdict},
	{"a/b/", "a/b", true, excluded},
	{"a/b/", "a/b/c", false, excluded},
	// "**"
	{"**/foo", "foo", false, excluded},
	{"**/foo", "x/y/foo", false, excluded},
	{"**/foo", "x/foo/z", false, excluded},
	{"**/foo", "x/y", false, noVerdict},
	{"a/**/b", "a/b", false, excluded},
	{"a/**/b", "a/x/y/b", false, excluded},
	{"a/**/b", "a/x/y", false, noVerdict},
	{"a/**/b", "c/x/b", false, noVerdict},
	{"a/**", "a", false, excluded},
	{"a/**", "a/x/y", false, excluded},
	{"a/**", "b/x", false, noVerdict},
	{"a/**/", "a", false, noVerdict},
	{"a/**/", "a", true, excluded},
	{"a/x**/b", "a/x/b", false, noVerdict},
	{"**", "anything", false, excluded},
	// spaces, escapes, malformed patterns
	{"name  ", "name", false, excluded},
	{`name\ `, `name\ `, false, noVerdict},
	{"[", "[", false, noVerdict},
	{"a/[", "a/[", false, noVerdict},
	{"*.log", "", false, noVerdict},
}

func TestIgnoreRule(t *testing.T) {
	for _, c := range ignoreCases {
		r := parseIgnoreRule(c.rule)
		require.Equal(t, c.want, r.match(splitRel(c.path), c.isDir), "%q against %q (dir %v)", c.rule, c.path, c.isDir)
	}
}

// TestIgnoreRuleMatchesGoGit compares the matcher with go-git's gitignore package over every
// combination of a set of rules and paths.
func TestIgnoreRuleMatchesGoGit(t *testing.T) {
	rules := []string{"*.log", "build", "!keep", "out/", "/root", "a/b", "a/*.go", "a/b/", "**/foo", "a/**/b",
		"a/**", "a/**/", "a/x**/b", "**", "name  ", `name\ `, "[", "a/[", "/a/**/b/", "!a/b", "**/b/", "*/b",
		"a//b", "/", "a/b/**/c/**", "?", "a/?", "**/**/b", "foo/", "!/root/"}
	paths := []string{"", "a", "b", "a/b", "a/b/c", "a/x/b", "a/x/y/b", "x/a/b", "a/m.go", "a/sub/m.go", "foo",
		"x/foo", "x/foo/z", "build", "src/build/o", "keep", "out", "out/f", "x/out", "root", "sub/root",
		"a/x", "a/[", "[", "name", `name\ `, "a/b/q/c/r", "c", "x.log", "d/x.log"}
	for _, rule := range rules {
		ours := parseIgnoreRule(rule)
		theirs := gitignore.ParsePattern(rule, nil)
		for _, p := range paths {
			for _, isDir := range []bool{false, true} {
				comps := splitRel(p)
				require.Equal(t, int(theirs.Match(comps, isDir)), int(ours.match(comps, isDir)),
					"%q against %q (dir %v)", rule, p, isDir)
			}
		}
	}
}

func splitRel(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
