package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// TrustTrusted is the trust_level value that marks a trusted project.
const TrustTrusted = "trusted"

// projectRoot returns the nearest ancestor of dir (dir included) holding a
// .git entry, or dir itself when there is none.
func projectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// TrustLevel returns the trust_level configured for cwd, falling back to
// the entry of its project root (nearest ancestor with .git); "" if none.
func (c *Config) TrustLevel(cwd string) string {
	cwd = filepath.Clean(cwd)
	lookup := func(dir string) (string, bool) {
		for k, p := range c.Projects {
			if filepath.Clean(k) == dir && p.TrustLevel != "" {
				return p.TrustLevel, true
			}
		}
		return "", false
	}
	if lvl, ok := lookup(cwd); ok {
		return lvl
	}
	if lvl, ok := lookup(projectRoot(cwd)); ok {
		return lvl
	}
	return ""
}

// IsTrusted reports whether cwd (or its project root) is a trusted project.
func (c *Config) IsTrusted(cwd string) bool { return c.TrustLevel(cwd) == TrustTrusted }

// projectLayers reads .codex/config.toml from the project root down to cwd
// (lowest precedence first). Layers of an untrusted project are returned
// disabled, with the reason config/read reports.
func (c *Config) projectLayers(cwd string) ([]*layer, error) {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("resolve cwd: %w", err)
	}
	root := projectRoot(abs)
	var dirs []string
	for d := abs; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	trusted := c.IsTrusted(abs)
	var out []*layer
	for i := len(dirs) - 1; i >= 0; i-- {
		folder := filepath.Join(dirs[i], ".codex")
		file := filepath.Join(folder, ConfigFileName)
		if _, err := os.Stat(file); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, &Error{File: file, Msg: err.Error()}
		}
		l, err := readFileLayer(SourceProject, file)
		var ce *Error
		if errors.As(err, &ce) && ce.Syntax {
			if data, rerr := os.ReadFile(file); rerr == nil {
				if perr := projectSyntaxError(file, data); perr != nil {
					err = perr
				}
			}
		}
		if err != nil && !trusted {
			// An untrusted project's file is not read for its settings: malformed, it is listed all the same.
			l, err = &layer{source: SourceProject, raw: tree{}}, nil
		}
		if err != nil {
			return nil, err
		}
		l.file = folder
		if !trusted {
			l.disabled = fmt.Sprintf("To load project-local config, hooks, and exec policies, add %s as a trusted project in %s.",
				root, filepath.Join(c.CodexHome, ConfigFileName))
		}
		out = append(out, l)
	}
	return out, nil
}

// UntrustedProjectWarning is the reference's start-up warning for the .codex folders of an untrusted
// project holding cwd whose config.toml is not applied ("" when there are none).
func (c *Config) UntrustedProjectWarning(cwd string) string {
	layers, err := c.projectLayers(cwd)
	if err != nil {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, l := range layers {
		if l.disabled == "" {
			continue
		}
		n++
		fmt.Fprintf(&b, "    %d. %s\n       %s\n", n, l.file, l.disabled)
	}
	if n == 0 {
		return ""
	}
	return "Project-local config, hooks, and exec policies are disabled in the following folders until the project is trusted, but skills still load.\n" + b.String()
}

// trustMu serialises AppendProjectTrust within the process.
var trustMu sync.Mutex

// AppendProjectTrust appends `[projects."<cwd>"]` with trust_level =
// "trusted" to <codexHome>/config.toml (creating it) unless that project
// already has an entry. A malformed config.toml is left untouched and
// reported.
func AppendProjectTrust(codexHome, cwd string) error {
	trustMu.Lock()
	defer trustMu.Unlock()
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return fmt.Errorf("resolve cwd: %w", err)
	}
	file := filepath.Join(codexHome, ConfigFileName)
	l, err := readFileLayer(SourceUser, file)
	if err != nil {
		return err
	}
	if projects, ok := l.raw["projects"].(tree); ok {
		for k := range projects {
			if filepath.Clean(k) == abs {
				return nil
			}
		}
	}
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", file, err)
	}
	var b strings.Builder
	if len(data) > 0 {
		if data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[projects.%s]\ntrust_level = \"%s\"\n", tomlQuote(abs), TrustTrusted)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// tomlQuote renders s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
