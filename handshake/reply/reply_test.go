package reply

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scannerDescription is how the user agent's OS was described before this package read os-release
// without bufio and strings; describeOS must agree with it.
func scannerDescription(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	id := vals["ID"]
	if id == "" {
		id = runtime.GOOS
	}
	name := strings.ToUpper(id[:1]) + id[1:]
	ver := vals["VERSION_ID"]
	if ver == "" {
		return name
	}
	for strings.Count(ver, ".") < 2 {
		ver += ".0"
	}
	return name + " " + ver
}

func TestDescribeOS(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{
		"", "\n", "ID=debian\nVERSION_ID=\"12\"\n", "NAME=\"Ubuntu\"\r\nID=ubuntu\r\nVERSION_ID=\"24.04\"\r\n",
		"ID='arch'\nBUILD_ID=rolling", "ID=\"\"\nVERSION_ID=1.2.3.4\n", "ID=ñandu\nVERSION_ID=\n", "ID=\xffx\n",
		"ID=a=b\nVERSION_ID='\"7\"'\nID=alpine\n", "junk\nID\n=x\n", "VERSION_ID=3\n" + strings.Repeat("x", 70<<10) + "\nID=late\n",
	} {
		file := filepath.Join(dir, "os-release")
		require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
		require.Equal(t, scannerDescription(file), describeOS(file), "%d: %q", i, content)
	}
	missing := filepath.Join(dir, "missing")
	require.Equal(t, scannerDescription(missing), describeOS(missing))
	require.Equal(t, scannerDescription("/etc/os-release"), describeOS("/etc/os-release"))
}
