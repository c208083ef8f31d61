package execmgr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShellArgv(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		login *bool
		want  []string
	}{
		{"default login", nil, []string{"/bin/bash", "-lc", "echo hi"}},
		{"login true", &yes, []string{"/bin/bash", "-lc", "echo hi"}},
		{"login false", &no, []string{"/bin/bash", "-c", "echo hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ShellArgv("/bin/bash", tc.login, "echo hi"))
		})
	}
}

func TestResolveDir(t *testing.T) {
	for _, tc := range []struct{ base, dir, want string }{
		{"/w", "", "/w"},
		{"/w", "/abs", "/abs"},
		{"/w", "sub", "/w/sub"},
		{"/w", "../up", "/up"},
		{"", "rel", "rel"},
		{"", "", ""},
	} {
		require.Equal(t, tc.want, ResolveDir(tc.base, tc.dir), "ResolveDir(%q, %q)", tc.base, tc.dir)
	}
}
