package externalagent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/stopwatch"
)

// Names of the source agent's files.
const (
	sourceDirName   = ".claude"
	sourceDocName   = "CLAUDE.md"
	sourceMCPFile   = ".mcp.json"
	sourceStateFile = ".claude.json"
)

// ItemType is a migration item's kind (the wire's ExternalAgentConfigMigrationItemType).
type ItemType = protocol.ExternalAgentConfigMigrationItemType

// Item types, as on the wire.
const (
	TypeAgentsMD  = protocol.ExternalAgentConfigMigrationItemTypeAGENTSMD
	TypeConfig    = protocol.ExternalAgentConfigMigrationItemTypeCONFIG
	TypeSkills    = protocol.ExternalAgentConfigMigrationItemTypeSKILLS
	TypePlugins   = protocol.ExternalAgentConfigMigrationItemTypePLUGINS
	TypeMCP       = protocol.ExternalAgentConfigMigrationItemTypeMCPSERVERCONFIG
	TypeSubagents = protocol.ExternalAgentConfigMigrationItemTypeSUBAGENTS
	TypeHooks     = protocol.ExternalAgentConfigMigrationItemTypeHOOKS
	TypeCommands  = protocol.ExternalAgentConfigMigrationItemTypeCOMMANDS
	TypeMemory    = protocol.ExternalAgentConfigMigrationItemTypeMEMORY
	TypeSessions  = protocol.ExternalAgentConfigMigrationItemTypeSESSIONS
)

// resultOrder is the order of the per-type groups in a completed import.
var resultOrder = []ItemType{TypeConfig, TypeSkills, TypeAgentsMD, TypePlugins, TypeMCP, TypeSubagents, TypeHooks, TypeCommands, TypeMemory, TypeSessions}

// Service detects and imports the source agent's configuration for one CODEX_HOME.
type Service struct {
	// CodexHome is the Codex home the home-scoped items go to.
	CodexHome string
	// SourceHome is the source agent's home directory (normally $HOME/.claude).
	SourceHome string
	// ValidateHomeConfig, when set, checks CODEX_HOME/config.toml's new content before it is written.
	ValidateHomeConfig func(data []byte) error
	// CreateThread, when set, makes the threads imported sessions become; without it sessions fail to import.
	CreateThread ThreadCreator
	// GitTimeout bounds each git command fetching a remote marketplace (DefaultGitTimeout when zero).
	GitTimeout time.Duration
	// Clock times GitTimeout (nil: the wall clock); tests pass a fake one.
	Clock stopwatch.Clock
	// cursor selects Cursor as the source agent (UseSource) instead of Claude Code.
	cursor bool
}

// New returns the service for codexHome with the source agent's files under userHome.
func New(codexHome, userHome string) *Service {
	return &Service{CodexHome: codexHome, SourceHome: filepath.Join(userHome, sourceDirName)}
}

// scope is where one detection or import looks and writes: the home (repo == "") or one repository.
type scope struct {
	repo string
	// source paths
	sourceDir      string // ~/.claude or <repo>/.claude
	sourceSettings string
	mcpRoot        string // directory holding .mcp.json / .claude.json: $HOME or the repo
	// target paths
	targetConfig string
	targetHooks  string
	targetSkills string
	targetAgents string
	targetDoc    string
}

func (s *Service) homeScope() scope {
	return scope{
		sourceDir:      s.SourceHome,
		sourceSettings: filepath.Join(s.SourceHome, "settings.json"),
		mcpRoot:        filepath.Dir(s.SourceHome),
		targetConfig:   filepath.Join(s.CodexHome, "config.toml"),
		targetHooks:    filepath.Join(s.CodexHome, "hooks.json"),
		targetSkills:   filepath.Join(filepath.Dir(s.CodexHome), ".agents", "skills"),
		targetAgents:   filepath.Join(s.CodexHome, "agents"),
		targetDoc:      filepath.Join(s.CodexHome, "AGENTS.md"),
	}
}

func (s *Service) repoScope(repo string) scope {
	src := filepath.Join(repo, filepath.Base(s.SourceHome))
	return scope{
		repo:           repo,
		sourceDir:      src,
		sourceSettings: filepath.Join(src, "settings.json"),
		mcpRoot:        repo,
		targetConfig:   filepath.Join(repo, ".codex", "config.toml"),
		targetHooks:    filepath.Join(repo, ".codex", "hooks.json"),
		targetSkills:   filepath.Join(repo, ".agents", "skills"),
		targetAgents:   filepath.Join(repo, ".codex", "agents"),
		targetDoc:      filepath.Join(repo, "AGENTS.md"),
	}
}

// scopeFor resolves an item's cwd: empty means the home; a path that does not exist means nothing
// (ok false); otherwise the enclosing git repository, or the directory itself outside one.
func (s *Service) scopeFor(cwd string) (scope, bool, error) {
	if cwd == "" {
		return s.homeScope(), true, nil
	}
	repo, ok, err := findRepoRoot(cwd)
	if err != nil || !ok {
		return scope{}, false, err
	}
	return s.repoScope(repo), true, nil
}

// findRepoRoot walks up from cwd to the directory holding .git; outside a repository it is cwd itself
// (its directory when cwd is a file). A cwd that does not exist has none.
func findRepoRoot(cwd string) (string, bool, error) {
	if !filepath.IsAbs(cwd) {
		wd, err := os.Getwd()
		if err != nil {
			return "", false, err
		}
		cwd = filepath.Join(wd, cwd)
	}
	st, err := os.Stat(cwd)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	cur := cwd
	if !st.IsDir() {
		cur = filepath.Dir(cwd)
	}
	fallback := cur
	for {
		if _, err := os.Stat(filepath.Join(cur, ".git")); err == nil {
			return cur, true, nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return fallback, true, nil
		}
		cur = parent
	}
}

// isFile reports whether path is a regular file (following links).
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isMissingOrEmpty reports whether path is absent or a file holding only whitespace; a directory is neither.
func isMissingOrEmpty(path string) (bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "", nil
}

// isNonEmptyFile reports whether path is a file with more than whitespace in it.
func isNonEmptyFile(path string) (bool, error) {
	if !isFile(path) {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) != "", nil
}

// invalidData marks an error caused by malformed input files.
type invalidData struct{ msg string }

func (e *invalidData) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidData{msg: fmt.Sprintf(format, args...)}
}

// wireOrder is the item types in the schema's order (serde names them in this order in its errors).
var wireOrder = []ItemType{TypeAgentsMD, TypeConfig, TypeSkills, TypePlugins, TypeMCP, TypeSubagents, TypeHooks, TypeCommands, TypeMemory, TypeSessions}

// CheckItemType refuses a value outside the item type enum with serde's wording.
func CheckItemType(t ItemType) error {
	quoted := make([]string, len(wireOrder))
	for i, w := range wireOrder {
		if w == t {
			return nil
		}
		quoted[i] = "`" + string(w) + "`"
	}
	return fmt.Errorf("unknown variant `%s`, expected one of %s", t, strings.Join(quoted, ", "))
}
