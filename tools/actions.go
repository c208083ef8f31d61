package tools

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"appserver/execmgr"
	protocol "appserver/protocol/v2"
)

// commandActions summarizes a script for the UI the way the reference does: reads, file listings and
// searches of a plain script, `cd` folded into later paths, helper commands (echo, wc, sort, a stdin
// head…) dropped from multi-command scripts, and one unknown action for anything else. cmds is the
// script's simple commands (parsedCommand.cmds; nil when the script is not plain).
func commandActions(script string, cmds [][]string, cwd string) []protocol.CommandAction {
	unknown := []protocol.CommandAction{{Value: protocol.CommandActionUnknown{Command: script}}}
	if len(cmds) == 0 {
		return unknown
	}
	out := []protocol.CommandAction{}
	dir := cwd
	for _, argv := range cmds {
		if argv[0] == "cd" {
			if len(argv) == 2 {
				dir = resolvePath(dir, argv[1])
			}
			continue
		}
		if len(cmds) > 1 && isHelper(argv) {
			continue
		}
		a, known := classify(argv, dir)
		if !known {
			return unknown
		}
		out = append(out, protocol.CommandAction{Value: a})
	}
	if len(out) == 0 && !(len(cmds) == 1 && cmds[0][0] == "cd") {
		return unknown
	}
	return out
}

func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// isHelper reports commands that only format or echo (dropped from pipelines and lists).
func isHelper(argv []string) bool {
	switch argv[0] {
	case "echo", "wc", "sort", "uniq", "cut", "tr", "true", "column", "xargs":
		return true
	case "head", "tail", "nl", "sed", "cat", "less", "more":
		return len(positionals(argv[1:], valueFlags[argv[0]])) == 0 // reading stdin
	}
	return false
}

// valueFlags are, per command, the flags whose value is the next argument.
var valueFlags = map[string]map[string]bool{
	"head": {"-n": true, "-c": true},
	"tail": {"-n": true, "-c": true},
	"sed":  {"-e": true, "-f": true},
	"grep": {"-e": true, "-f": true, "-A": true, "-B": true, "-C": true, "-m": true, "--include": true, "--exclude": true},
	"rg": {"-e": true, "-f": true, "-g": true, "--glob": true, "-t": true, "--type": true, "-T": true, "--type-not": true,
		"-A": true, "-B": true, "-C": true, "-m": true, "--max-count": true, "--max-depth": true},
	"fd":   {"-e": true, "--extension": true, "-t": true, "--type": true, "-d": true, "--max-depth": true},
	"tree": {"-L": true, "-I": true, "-P": true},
	"du":   {"-d": true},
}

// positionals returns the non-flag arguments, skipping the values of value-taking flags.
func positionals(args []string, takesValue map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			if takesValue[a] {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		for _, f := range flags {
			if a == f {
				return true
			}
		}
	}
	return false
}

func strPtr(s string) *string { return &s }

func listPath(ps []string) *string {
	if len(ps) == 0 {
		return nil
	}
	p := strings.TrimSuffix(ps[0], "/")
	if p == "" {
		p = "/"
	}
	return &p
}

var sedPrintRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+(,\d+)?p$`) })

// classify maps one simple command to its action; known is false for commands shown as unknown.
func classify(argv []string, dir string) (protocol.CommandActionVariant, bool) {
	cmd := execmgr.ShellJoin(argv)
	args := argv[1:]
	read := func(file string) (protocol.CommandActionVariant, bool) {
		return protocol.CommandActionRead{Command: cmd, Name: filepath.Base(file), Path: protocol.LegacyAppPathString(resolvePath(dir, file))}, true
	}
	switch argv[0] {
	case "ls", "tree", "du":
		return protocol.CommandActionListFiles{Command: cmd, Path: listPath(positionals(args, valueFlags[argv[0]]))}, true
	case "cat", "less", "more", "nl":
		if ps := positionals(args, valueFlags[argv[0]]); len(ps) == 1 {
			return read(ps[0])
		}
	case "head", "tail":
		if hasFlag(args, "-f", "-F", "-c", "--follow") {
			return nil, false
		}
		if ps := positionals(args, valueFlags[argv[0]]); len(ps) == 1 {
			return read(ps[0])
		}
	case "sed":
		ps := positionals(args, valueFlags["sed"])
		if hasFlag(args, "-n") && len(ps) == 2 && sedPrintRE().MatchString(ps[0]) {
			return read(ps[1])
		}
	case "awk":
		if ps := positionals(args, map[string]bool{"-F": true, "-v": true, "-f": true}); len(ps) == 2 {
			return read(ps[1])
		}
	case "grep", "rg", "fd":
		if argv[0] == "rg" && hasFlag(args, "--files") {
			return protocol.CommandActionListFiles{Command: cmd, Path: listPath(positionals(args, valueFlags["rg"]))}, true
		}
		ps := positionals(args, valueFlags[argv[0]])
		var query *string
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-e" {
				query = strPtr(args[i+1])
				break
			}
		}
		if query == nil {
			if len(ps) == 0 {
				return nil, false
			}
			query, ps = strPtr(ps[0]), ps[1:]
		}
		return protocol.CommandActionSearch{Command: cmd, Query: query, Path: listPath(ps)}, true
	case "find":
		var path *string
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			path = listPath(args[:1])
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-name" || args[i] == "-iname" {
				return protocol.CommandActionSearch{Command: cmd, Query: strPtr(args[i+1]), Path: path}, true
			}
		}
		return protocol.CommandActionListFiles{Command: cmd, Path: path}, true
	}
	return nil, false
}
