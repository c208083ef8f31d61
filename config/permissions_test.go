package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	noFilesystem = "Permissions profile `p` does not define any recognized filesystem entries for this version of Codex. " +
		"Filesystem access will remain restricted. Upgrade Codex if this profile expects filesystem permissions."
	unknownPath = "Configured filesystem path `%s` is not recognized by this version of Codex and will be ignored. " +
		"Upgrade Codex if this path is required."
)

// TestPermissionProfiles pins the reference's (0.169.0) checks and start-up warnings about the
// `[permissions.<name>]` profile default_permissions selects.
func TestPermissionProfiles(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		err        string   // the load's error ("" = loads)
		warnings   []string // PermissionWarnings
	}{
		{"empty profile", "default_permissions = \"p\"\n[permissions.p]\n", "", []string{noFilesystem}},
		{"empty filesystem", "default_permissions = \"p\"\n[permissions.p.filesystem]\n", "", []string{noFilesystem}},
		{"network only", "default_permissions = \"p\"\n[permissions.p.network]\nenabled = true\n", "", []string{noFilesystem}},
		{"recognized", "default_permissions = \"p\"\n[permissions.p.filesystem]\n\":root\" = \"read\"\n\":tmpdir\" = \"write\"\n\"/abs\" = \"read\"\n\"~/x\" = \"read\"\n\"~\" = \"read\"\n", "", nil},
		{"unknown special paths, sorted", "default_permissions = \"p\"\n[permissions.p.filesystem]\n\":cwd\" = \"write\"\n\":bogus\" = \"read\"\n\":minimal\" = \"read\"\n", "",
			[]string{fmt.Sprintf(unknownPath, ":bogus"), fmt.Sprintf(unknownPath, ":cwd")}},
		{"not the default profile", "default_permissions = \"q\"\n[permissions.q.filesystem]\n\":root\" = \"read\"\n[permissions.p]\n[permissions.r.filesystem]\nbogus = \"read\"\n", "", nil},
		{"built-in default", "default_permissions = \":read-only\"\n[permissions.p]\n", "", nil},
		{"empty permissions table", "[permissions]\n", "", nil},
		{"profiles without default", "[permissions.p]\n", "config defines `[permissions]` profiles but does not set `default_permissions`", nil},
		{"relative path, first sorted", "default_permissions = \"p\"\n[permissions.p.filesystem]\n\"zz\" = \"read\"\n\"rel/x\" = \"read\"\n",
			"filesystem path `rel/x` must be absolute, use `~/...`, or start with `:`", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(home(t, tc.file), nil)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.warnings, c.PermissionWarnings())
		})
	}
}
