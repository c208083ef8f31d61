package confine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArgsRoundTrip(t *testing.T) {
	s := Spec{Dir: "/w s", Init: true, MountProc: true, DropAmbient: true, Ruleset: Ruleset{FS: 32754, Net: 3, Scoped: 3},
		Rules:   []Rule{{Access: 2, Path: "/dev/null"}, {Access: 16386, Path: "/dev/pts"}, {Access: 1, Path: "--"}},
		Seccomp: []byte{0x20, 0, 0, 0, 4, 0, 0, 0}}
	argv := []string{"sh", "-c", "echo -- x"}
	args := Args(s, argv)
	require.Equal(t, Marker, args[0])
	got, gotArgv, err := parseArgs(args[1:])
	require.NoError(t, err)
	require.Equal(t, s, got)
	require.Equal(t, argv, gotArgv)

	for _, bad := range [][]string{
		{"fx", "/", "1,2,3", "", "0", "--", "true"},           // unknown flag
		{"f", "/", "1,2", "", "0", "--", "true"},              // ruleset fields
		{"f", "/", "1,2,3", "abc", "0", "--", "true"},         // odd hex
		{"f", "/", "1,2,3", "0011", "0", "--", "true"},        // not whole instructions
		{"f", "/", "1,2,3", "", "2", "1", "/a", "--", "true"}, // missing rule
		{"f", "/", "1,2,3", "", "0", "true"},                  // no --
		{"f", "/", "1,2,3", "", "0", "--", ""},                // empty command
	} {
		_, _, err := parseArgs(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestLaunchRequestRoundTrip(t *testing.T) {
	r := LaunchRequest{Argv: []string{"sh", "-c", "echo a b"}, Env: []string{"A=1", "B="}, Dir: "/w s",
		Setsid: true, Setctty: true, Cgroup: true}
	got, ok := parseLaunchRequest(r.Marshal())
	require.True(t, ok)
	require.Equal(t, r, got)
	r = LaunchRequest{Argv: []string{"true"}, Env: []string{}, Setpgid: true}
	got, ok = parseLaunchRequest(r.Marshal())
	require.True(t, ok)
	require.Equal(t, r, got)
	for _, bad := range [][]byte{nil, {'S'}, {'X', 0}, {'S', 16, 0, '1', 0, 'x', 0}, {'S', 0, 0, '2', 0, 'x', 0},
		{'S', 0, 0, '1', 0, 0}, {'S', 0, 0, '1', 0, 'x'}} {
		_, ok := parseLaunchRequest(bad)
		require.False(t, ok, "%q", bad)
	}
}
