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
