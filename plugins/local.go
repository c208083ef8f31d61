package plugins

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// MarketplaceFile is where a marketplace root keeps its catalogue.
var MarketplaceFile = filepath.Join(".agents", "plugins", "marketplace.json")

// Marketplace is one local catalogue of plugins.
type Marketplace struct {
	Name        string
	Path        string // the marketplace.json file
	DisplayName string
	Plugins     []Plugin
}

// Plugin is one catalogue entry with its manifest (.codex-plugin/plugin.json).
type Plugin struct {
	Name          string
	Marketplace   string
	SourcePath    string // absolute plugin folder
	InstallPolicy string // AVAILABLE unless the entry says otherwise
	AuthPolicy    string // ON_INSTALL unless the entry says otherwise
	Category      string
	Manifest      Manifest
}

// ID is "<plugin>@<marketplace>", the key of `[plugins."<id>"]` in config.toml.
func (p Plugin) ID() string { return p.Name + "@" + p.Marketplace }

// Manifest is the part of .codex-plugin/plugin.json that is reported.
type Manifest struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Keywords    []string `json:"keywords"`
	Interface   struct {
		DisplayName      string   `json:"displayName"`
		ShortDescription string   `json:"shortDescription"`
		LongDescription  string   `json:"longDescription"`
		DeveloperName    string   `json:"developerName"`
		Category         string   `json:"category"`
		Capabilities     []string `json:"capabilities"`
		WebsiteURL       string   `json:"websiteURL"`
		PrivacyPolicyURL string   `json:"privacyPolicyURL"`
		TermsURL         string   `json:"termsOfServiceURL"`
		BrandColor       string   `json:"brandColor"`
		DefaultPrompt    []string `json:"defaultPrompt"`
	} `json:"interface"`
}

type catalogue struct {
	Name      string `json:"name"`
	Interface struct {
		DisplayName string `json:"displayName"`
	} `json:"interface"`
	Plugins []struct {
		Name   string          `json:"name"`
		Source json.RawMessage `json:"source"`
		Policy struct {
			Installation   string `json:"installation"`
			Authentication string `json:"authentication"`
		} `json:"policy"`
		Category string `json:"category"`
	} `json:"plugins"`
}

// ReadMarketplace reads a marketplace.json (or a marketplace root holding one). Entries whose source is
// not a local folder inside the root, or whose manifest is unreadable, are skipped.
func ReadMarketplace(path string) (Marketplace, error) {
	if err := CheckMarketplaceFile(path); err != nil {
		return Marketplace{}, err
	}
	if st, _ := os.Stat(path); st != nil && st.IsDir() {
		for _, n := range manifestNames {
			if fi, err := os.Stat(filepath.Join(path, n)); err == nil && fi.Mode().IsRegular() {
				path = filepath.Join(path, n)
				break
			}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Marketplace{}, err
	}
	var c catalogue
	if err := json.Unmarshal(data, &c); err != nil {
		return Marketplace{}, fmt.Errorf("invalid marketplace file `%s`: %v", path, err)
	}
	if c.Name == "" {
		return Marketplace{}, fmt.Errorf("invalid marketplace file `%s`: missing field `name`", path)
	}
	root := marketplaceRoot(path)
	m := Marketplace{Name: c.Name, Path: path, DisplayName: c.Interface.DisplayName}
	for _, e := range c.Plugins {
		rel := SourcePath(e.Source, "local")
		if rel == "" || e.Name == "" {
			continue
		}
		dir := filepath.Clean(filepath.Join(root, rel))
		if dir != root && !strings.HasPrefix(dir, root+string(filepath.Separator)) {
			continue
		}
		var man Manifest
		b, err := os.ReadFile(filepath.Join(dir, ".codex-plugin", "plugin.json"))
		if err != nil || json.Unmarshal(b, &man) != nil {
			continue
		}
		p := Plugin{Name: e.Name, Marketplace: c.Name, SourcePath: dir, InstallPolicy: e.Policy.Installation, AuthPolicy: e.Policy.Authentication, Category: e.Category, Manifest: man}
		if p.InstallPolicy == "" {
			p.InstallPolicy = "AVAILABLE"
		}
		if p.AuthPolicy == "" {
			p.AuthPolicy = "ON_INSTALL"
		}
		m.Plugins = append(m.Plugins, p)
	}
	return m, nil
}

// marketplaceRoot is the folder plugin sources are relative to: the one holding .agents/plugins/.
func marketplaceRoot(file string) string {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == "plugins" && filepath.Base(filepath.Dir(dir)) == ".agents" {
		return filepath.Dir(filepath.Dir(dir))
	}
	if filepath.Base(dir) == ".codex-plugin" {
		return filepath.Dir(dir)
	}
	return dir
}

// SourcePath returns the relative folder of a catalogue entry's source given as "./x" or as
// {"source": kind, "path": "./x"} with kind one of kinds; "" for any other source.
func SourcePath(raw json.RawMessage, kinds ...string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Source string `json:"source"`
		Path   string `json:"path"`
	}
	if json.Unmarshal(raw, &o) == nil && slices.Contains(kinds, o.Source) {
		return o.Path
	}
	return ""
}

// LoadError is a marketplace that could not be read.
type LoadError struct{ Path, Message string }

// Discover reads the marketplaces visible from cwds: each cwd's repository root and the user's home
// (~/.agents/plugins/marketplace.json), once each, in that order.
func Discover(userHome string, cwds []string) ([]Marketplace, []LoadError) {
	var files []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			if _, err := os.Stat(f); err == nil {
				files = append(files, f)
			}
		}
	}
	for _, cwd := range cwds {
		add(filepath.Join(repoRoot(cwd), MarketplaceFile))
	}
	if userHome != "" {
		add(filepath.Join(userHome, MarketplaceFile))
	}
	var out []Marketplace
	var errs []LoadError
	for _, f := range files {
		m, err := ReadMarketplace(f)
		if err != nil {
			errs = append(errs, LoadError{f, err.Error()})
			continue
		}
		out = append(out, m)
	}
	return out, errs
}

func repoRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// CacheDir is where an installed plugin's copy lives: $CODEX_HOME/plugins/cache/<market>/<plugin>/<version>.
func CacheDir(codexHome string, p Plugin) string {
	v := p.Manifest.Version
	if v == "" {
		v = "local"
	}
	return filepath.Join(codexHome, "plugins", "cache", p.Marketplace, p.Name, v)
}

// Install copies the plugin folder into the cache (replacing an older copy of the same version).
func Install(codexHome string, p Plugin) error {
	dst := CacheDir(codexHome, p)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(p.SourcePath, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(p.SourcePath, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		}
		return nil // symlinks and devices are not copied
	})
}

// Uninstall removes every cached copy of plugin id ("<plugin>@<marketplace>").
func Uninstall(codexHome, id string) error {
	name, market, ok := strings.Cut(id, "@")
	if !ok || name == "" || market == "" {
		return fmt.Errorf("invalid plugin id `%s`", id)
	}
	return os.RemoveAll(filepath.Join(codexHome, "plugins", "cache", market, name))
}

// Installed reports whether a cached copy of p exists.
func Installed(codexHome string, p Plugin) bool {
	entries, err := os.ReadDir(filepath.Join(codexHome, "plugins", "cache", p.Marketplace, p.Name))
	return err == nil && len(entries) > 0
}

// EnabledIDs reads `[plugins."<id>"] enabled` from a raw configuration.
func EnabledIDs(raw map[string]any) map[string]bool {
	out := map[string]bool{}
	ps, _ := raw["plugins"].(map[string]any)
	ids := make([]string, 0, len(ps))
	for id := range ps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t, _ := ps[id].(map[string]any)
		on, ok := t["enabled"].(bool)
		out[id] = !ok || on
	}
	return out
}
