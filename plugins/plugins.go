// Package plugins answers the plugin, app and marketplace catalogue questions from local state. appserver
// installs no plugins and has no remote catalogue: local lists are empty, local marketplace files are
// checked as the reference checks them, and every remote-catalogue operation fails the way the reference
// fails without a ChatGPT login.
package plugins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// RemoteError is the failure of a remote-catalogue operation (op names it, e.g. "read remote plugin details").
func RemoteError(op string) error {
	return fmt.Errorf("%s: chatgpt authentication required for remote plugin catalog", op)
}

// ErrUnsupported marks an operation appserver recognises but does not perform.
var ErrUnsupported = errors.New("not supported by appserver")

// manifestNames are the files that make a directory a marketplace root.
var manifestNames = []string{"marketplace.json", filepath.Join(".agents", "plugins", "marketplace.json"), filepath.Join(".codex-plugin", "marketplace.json")}

// CheckMarketplaceFile validates a local marketplace path (a manifest file or a directory holding one).
func CheckMarketplaceFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("marketplace file `%s` does not exist", path)
	}
	if st.IsDir() {
		for _, n := range manifestNames {
			if fi, err := os.Stat(filepath.Join(path, n)); err == nil && fi.Mode().IsRegular() {
				return nil
			}
		}
		return fmt.Errorf("invalid marketplace file `%s`: marketplace root does not contain a supported manifest", path)
	}
	return nil
}

// SourceKind classifies a marketplace/add source.
type SourceKind int

// Kinds of marketplace source.
const (
	SourceInvalid SourceKind = iota
	SourceGitHub             // owner/repo
	SourceGitURL             // https://…, git@…, ssh://…
	SourceLocal              // an absolute or ./ path
)

var ownerRepo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`) })

// ClassifySource tells what kind of marketplace source s is.
func ClassifySource(s string) SourceKind {
	switch {
	case strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "~/"):
		return SourceLocal
	case strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "ssh://") || strings.HasPrefix(s, "git@") || strings.HasSuffix(s, ".git"):
		return SourceGitURL
	case ownerRepo().MatchString(s):
		return SourceGitHub
	}
	return SourceInvalid
}

// ErrInvalidSource is marketplace/add's answer to a source of no known kind.
var ErrInvalidSource = errors.New("invalid marketplace source format; expected owner/repo, a git URL, or a local marketplace path")
