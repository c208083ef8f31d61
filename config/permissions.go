package config

import "strings"

// recognizedSpecialPaths are the `:name` filesystem entries of a permissions profile codex-cli 0.169.0
// knows; any other is ignored with a warning.
var recognizedSpecialPaths = map[string]bool{
	":root": true, ":minimal": true, ":workspace_roots": true, ":project_roots": true, ":tmpdir": true, ":slash_tmp": true,
}

// defaultProfile returns the `[permissions.<name>]` table default_permissions selects (nil when it names a
// built-in profile, none or an undefined one).
func defaultProfile(eff tree) (string, tree) {
	name, ok := eff["default_permissions"].(string)
	if !ok || strings.HasPrefix(name, ":") {
		return "", nil
	}
	profiles, _ := eff["permissions"].(tree)
	profile, _ := profiles[name].(tree)
	return name, profile
}

// checkPermissions is the reference's check of the permissions profiles: defined profiles need
// default_permissions, and the selected profile's filesystem paths must be absolute, under `~/` or
// special (`:name`), met in sorted order, and its glob_scan_max_depth at least 1.
func checkPermissions(eff tree) error {
	if _, set := eff["default_permissions"]; !set {
		if profiles, ok := eff["permissions"].(tree); ok && len(profiles) > 0 {
			return meaningError("config defines `[permissions]` profiles but does not set `default_permissions`")
		}
		return nil
	}
	_, profile := defaultProfile(eff)
	fs, _ := profile["filesystem"].(tree)
	for _, p := range sortedKeys(fs) {
		if p == "glob_scan_max_depth" {
			continue
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, ":") && p != "~" && !strings.HasPrefix(p, "~/") {
			return meaningError("filesystem path `" + p + "` must be absolute, use `~/...`, or start with `:`")
		}
	}
	if d, ok := fs["glob_scan_max_depth"].(int64); ok && d < 1 {
		return meaningError("glob_scan_max_depth must be at least 1")
	}
	return nil
}

// PermissionWarnings are the configWarning summaries the reference sends after initialize about the
// permissions profile default_permissions selects: one without filesystem entries, then each `:name`
// entry this version does not know (in sorted order).
func (c *Config) PermissionWarnings() []string {
	name, profile := defaultProfile(c.effective)
	if profile == nil {
		return nil
	}
	fs, _ := profile["filesystem"].(tree)
	entries := len(fs)
	if _, ok := fs["glob_scan_max_depth"]; ok {
		entries-- // a setting, not an entry
	}
	if entries == 0 {
		return []string{"Permissions profile `" + name + "` does not define any recognized filesystem entries for this version of Codex. " +
			"Filesystem access will remain restricted. Upgrade Codex if this profile expects filesystem permissions."}
	}
	var out []string
	for _, p := range sortedKeys(fs) {
		if strings.HasPrefix(p, ":") && !recognizedSpecialPaths[p] {
			out = append(out, "Configured filesystem path `"+p+"` is not recognized by this version of Codex and will be ignored. "+
				"Upgrade Codex if this path is required.")
		}
	}
	return out
}

// builtinProfileModes maps the built-in permission profiles to the sandbox mode each selects.
var builtinProfileModes = map[string]string{":read-only": "read-only", ":workspace": "workspace-write", ":danger-full-access": "danger-full-access"}

// BuiltinProfileMode returns the sandbox mode ("read-only", "workspace-write", "danger-full-access") a
// built-in permission profile id selects; ok is false for any other id.
func BuiltinProfileMode(id string) (mode string, ok bool) {
	mode, ok = builtinProfileModes[id]
	return mode, ok
}

// BuiltinProfileFor returns the built-in permission profile id that selects sandbox mode ("" reads as
// read-only, the default).
func BuiltinProfileFor(mode string) string {
	for id, m := range builtinProfileModes {
		if m == mode {
			return id
		}
	}
	return ":read-only"
}

// DefaultPermissions returns default_permissions, the permission profile the configuration selects ("" when unset).
func (c *Config) DefaultPermissions() string {
	name, _ := c.effective["default_permissions"].(string)
	return name
}

// CheckPermissionProfile returns the reference's error for selecting permission profile id on this
// configuration (thread/start's and thread/settings/update's `permissions`, checked as a
// default_permissions would be), nil for a built-in profile. Named `[permissions]` profiles are not
// supported: selecting a defined one fails too.
func (c *Config) CheckPermissionProfile(id string) error {
	if _, ok := builtinProfileModes[id]; ok {
		return nil
	}
	profiles, hasTable := c.effective["permissions"].(tree)
	switch {
	case strings.HasPrefix(id, ":"):
		return meaningError("default_permissions refers to unknown built-in profile `" + id + "`")
	case !hasTable:
		return meaningError("default_permissions requires a `[permissions]` table")
	}
	if _, ok := profiles[id]; !ok {
		return meaningError("default_permissions refers to undefined profile `" + id + "`")
	}
	return meaningError("permission profile `" + id + "` is not supported by appserver: only the built-in profiles are")
}
