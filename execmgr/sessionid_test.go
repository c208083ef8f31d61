package execmgr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSessionID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  error
	}{
		{"1234", 1234, nil},
		{"+1", 1, nil},
		{"-1", -1, nil},
		{"007", 7, nil},
		{"2147483647", 2147483647, nil},
		{"-2147483648", -2147483648, nil},
		{"", 0, ErrSessionIDEmpty},
		{"x", 0, ErrSessionIDDigit},
		{"+", 0, ErrSessionIDDigit},
		{"-", 0, ErrSessionIDDigit},
		{" 1", 0, ErrSessionIDDigit},
		{"1.0", 0, ErrSessionIDDigit},
		{"\uff10", 0, ErrSessionIDDigit},
		{"2147483648", 0, ErrSessionIDTooLarge},
		{"99999999999999999999", 0, ErrSessionIDTooLarge},
		{"3000000000x", 0, ErrSessionIDTooLarge},
		{"-2147483649", 0, ErrSessionIDTooSmall},
		{"12x99999999999", 0, ErrSessionIDDigit},
	} {
		got, err := ParseSessionID(tc.in)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}
