package logenv

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		rust, level string
		want        slog.Level
	}{
		{"", "", slog.LevelWarn},
		{"debug", "", slog.LevelDebug},
		{"trace", "error", slog.LevelDebug},
		{"", "info", slog.LevelInfo},
		{"codex_core=debug", "", slog.LevelWarn},
		{"codex_core=debug,error", "", slog.LevelError},
		{"off", "", slog.LevelError},
		{"bogus", "", slog.LevelWarn},
	} {
		require.Equal(t, tc.want, Level(tc.rust, tc.level, slog.LevelWarn), "%q %q", tc.rust, tc.level)
	}
}
