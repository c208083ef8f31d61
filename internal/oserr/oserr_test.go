package oserr_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"appserver/internal/oserr"
)

func TestText(t *testing.T) {
	_, openErr := os.Open(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, openErr)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"bare errno", syscall.ENOENT, "No such file or directory (os error 2)"},
		{"path error", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, "Permission denied (os error 13)"},
		{"wrapped", fmt.Errorf("spawn: %w", syscall.ENOEXEC), "Exec format error (os error 8)"},
		{"real open", openErr, "No such file or directory (os error 2)"},
		{"no errno", errors.New("plain failure"), "plain failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, oserr.Text(tc.err))
		})
	}
}
