package sandbox

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPolicyMarshalWireForms(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want string
	}{
		{"readOnly", Policy{Kind: ReadOnly}, `{"type":"readOnly","networkAccess":false}`},
		{"readOnly net", Policy{Kind: ReadOnly, NetworkAccess: true}, `{"type":"readOnly","networkAccess":true}`},
		{"workspaceWrite default", Policy{Kind: WorkspaceWrite},
			`{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`},
		{"workspaceWrite full", Policy{Kind: WorkspaceWrite, WritableRoots: []string{"/a", "/b"}, NetworkAccess: true,
			ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
			`{"type":"workspaceWrite","writableRoots":["/a","/b"],"networkAccess":true,"excludeTmpdirEnvVar":true,"excludeSlashTmp":true}`},
		{"danger", Policy{Kind: DangerFullAccess, NetworkAccess: true}, `{"type":"dangerFullAccess"}`},
		{"external restricted", Policy{Kind: External}, `{"type":"externalSandbox","networkAccess":"restricted"}`},
		{"external enabled", Policy{Kind: External, NetworkAccess: true}, `{"type":"externalSandbox","networkAccess":"enabled"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.p)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			var back Policy
			require.NoError(t, json.Unmarshal(got, &back))
			if tc.p.Kind == DangerFullAccess {
				tc.p.NetworkAccess = false // not carried on the wire
			}
			if tc.p.Kind == WorkspaceWrite && tc.p.WritableRoots == nil {
				tc.p.WritableRoots = []string{}
			}
			require.Equal(t, tc.p, back)
		})
	}
}

func TestPolicyMarshalBadKind(t *testing.T) {
	_, err := json.Marshal(Policy{Kind: Kind(42)})
	require.Error(t, err)
	require.Equal(t, "Kind(42)", Kind(42).String())
}

func TestPolicyUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want Policy
	}{
		{`"read-only"`, Policy{Kind: ReadOnly}},
		{`"workspace-write"`, Policy{Kind: WorkspaceWrite}},
		{`"danger-full-access"`, Policy{Kind: DangerFullAccess}},
		{` {"type":"readOnly"}`, Policy{Kind: ReadOnly}},
		{`{"type":"workspaceWrite"}`, Policy{Kind: WorkspaceWrite}},
		{`{"type":"workspaceWrite","writableRoots":["/x"],"networkAccess":true,"extra":1}`,
			Policy{Kind: WorkspaceWrite, WritableRoots: []string{"/x"}, NetworkAccess: true}},
		{`{"type":"externalSandbox"}`, Policy{Kind: External}},
		{`{"type":"externalSandbox","networkAccess":"enabled"}`, Policy{Kind: External, NetworkAccess: true}},
		{`{"type":"dangerFullAccess"}`, Policy{Kind: DangerFullAccess}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var p Policy
			require.NoError(t, json.Unmarshal([]byte(tc.in), &p))
			require.Equal(t, tc.want, p)
		})
	}
}

func TestPolicyUnmarshalRejectsBadInput(t *testing.T) {
	for _, in := range []string{
		`"on-request"`,
		`"readOnly"`,
		`""`,
		`null`,
		`42`,
		`[]`,
		`{}`,
		`{"type":null}`,
		`{"type":"sandboxed"}`,
		`{"type":"readOnly","networkAccess":"yes"}`,
		`{"type":"workspaceWrite","writableRoots":"/x"}`,
		`{"type":"workspaceWrite","writableRoots":[""]}`,
		`{"type":"externalSandbox","networkAccess":true}`,
		`{"type":"externalSandbox","networkAccess":"open"}`,
		`{"type":"readOnly"`,
	} {
		t.Run(in, func(t *testing.T) {
			var p Policy
			err := p.UnmarshalJSON([]byte(in))
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidPolicy), "error %v should wrap ErrInvalidPolicy", err)
		})
	}
}

func TestParseModeAndMode(t *testing.T) {
	for _, m := range []string{ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess} {
		p, err := ParseMode(m)
		require.NoError(t, err)
		require.Equal(t, m, p.Mode())
	}
	require.Equal(t, "", Policy{Kind: External}.Mode())
	_, err := ParseMode("workspace_write")
	require.ErrorIs(t, err, ErrInvalidPolicy)
	require.Contains(t, err.Error(), "unknown variant")
}

func TestSandboxed(t *testing.T) {
	require.True(t, Policy{Kind: ReadOnly}.Sandboxed())
	require.True(t, Policy{Kind: WorkspaceWrite}.Sandboxed())
	require.False(t, Policy{Kind: DangerFullAccess}.Sandboxed())
	require.False(t, Policy{Kind: External}.Sandboxed())
}

func TestEffectiveRoots(t *testing.T) {
	tests := []struct {
		name   string
		p      Policy
		cwd    string
		tmpdir string
		want   []string
	}{
		{"readOnly", Policy{Kind: ReadOnly}, "/w", "/t", nil},
		{"danger", Policy{Kind: DangerFullAccess}, "/w", "/t", nil},
		{"defaults", Policy{Kind: WorkspaceWrite}, "/w", "/t", []string{"/w", "/tmp", "/t"}},
		{"no tmpdir", Policy{Kind: WorkspaceWrite}, "/w", "", []string{"/w", "/tmp"}},
		{"relative tmpdir ignored", Policy{Kind: WorkspaceWrite}, "/w", "t", []string{"/w", "/tmp"}},
		{"excluded", Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, "/w", "/t", []string{"/w"}},
		{"extra and dedupe", Policy{Kind: WorkspaceWrite, WritableRoots: []string{"/x/", "rel", "/w"}, ExcludeSlashTmp: true},
			"/w", "/tmp/", []string{"/w", "/x", "/w/rel", "/tmp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.p.EffectiveRoots(tc.cwd, tc.tmpdir))
		})
	}
}

func TestAllowsWrite(t *testing.T) {
	ww := Policy{Kind: WorkspaceWrite, WritableRoots: []string{"/extra"}}
	tests := []struct {
		p    Policy
		path string
		want bool
	}{
		{ww, "/w/a.txt", true},
		{ww, "sub/a.txt", true},
		{ww, "/w", true},
		{ww, "/wx/a", false},
		{ww, "/w/.git/config", false},
		{ww, "/w/.git", false},
		{ww, "/w/.codex/x", false},
		{ww, "/w/sub/.git/config", true}, // only the top-level entries of a root are protected
		{ww, "/w/../etc/passwd", false},
		{ww, "/extra/f", true},
		{ww, "/extra/.git/f", false},
		{ww, "/tmp/f", true},
		{ww, "/t/f", true},
		{Policy{Kind: WorkspaceWrite, ExcludeSlashTmp: true}, "/tmp/f", false},
		{Policy{Kind: ReadOnly}, "/w/a", false},
		{Policy{Kind: DangerFullAccess}, "/etc/passwd", true},
		{Policy{Kind: External}, "/etc/passwd", true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, tc.p.AllowsWrite(tc.path, "/w", "/t"), "%s %s", tc.p.Kind, tc.path)
	}
	require.False(t, ww.AllowsWrite("rel", "", ""))
}
