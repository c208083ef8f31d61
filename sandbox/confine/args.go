package confine

import (
	"errors"
	"strconv"
)

// Args returns the arguments after our binary's path that run argv under s: [Marker, flags, dir,
// ruleset, seccomp, rule count, (access, path)..., "--", argv...].
func Args(s Spec, argv []string) []string {
	flags := ""
	if s.Init {
		flags += "i"
	}
	if s.MountProc {
		flags += "p"
	}
	if s.DropAmbient {
		flags += "a"
	}
	out := make([]string, 0, 7+2*len(s.Rules)+len(argv))
	out = append(out, Marker, "f"+flags, s.Dir,
		strconv.FormatUint(s.Ruleset.FS, 10)+","+strconv.FormatUint(s.Ruleset.Net, 10)+","+strconv.FormatUint(s.Ruleset.Scoped, 10),
		hexEncode(s.Seccomp), strconv.Itoa(len(s.Rules)))
	for _, r := range s.Rules {
		out = append(out, strconv.FormatUint(r.Access, 10), r.Path)
	}
	out = append(out, "--")
	return append(out, argv...)
}

var errBadArgs = errors.New("bad confinement arguments")

// parseArgs is the inverse of Args (without the Marker).
func parseArgs(args []string) (Spec, []string, error) {
	var s Spec
	if len(args) < 5 || len(args[0]) == 0 || args[0][0] != 'f' {
		return s, nil, errBadArgs
	}
	for _, c := range args[0][1:] {
		switch c {
		case 'i':
			s.Init = true
		case 'p':
			s.MountProc = true
		case 'a':
			s.DropAmbient = true
		default:
			return s, nil, errBadArgs
		}
	}
	s.Dir = args[1]
	var nums [3]uint64
	rest := args[2]
	for i := range nums {
		j := 0
		for j < len(rest) && rest[j] != ',' {
			j++
		}
		if (i < 2) != (j < len(rest)) {
			return s, nil, errBadArgs
		}
		n, err := strconv.ParseUint(rest[:j], 10, 64)
		if err != nil {
			return s, nil, errBadArgs
		}
		nums[i] = n
		if j < len(rest) {
			rest = rest[j+1:]
		}
	}
	s.Ruleset = Ruleset{FS: nums[0], Net: nums[1], Scoped: nums[2]}
	filter, ok := hexDecode(args[3])
	if !ok || len(filter)%8 != 0 {
		return s, nil, errBadArgs
	}
	s.Seccomp = filter
	n, err := strconv.Atoi(args[4])
	if err != nil || n < 0 || len(args) < 5+2*n+2 {
		return s, nil, errBadArgs
	}
	args = args[5:]
	for i := 0; i < n; i++ {
		a, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return s, nil, errBadArgs
		}
		s.Rules = append(s.Rules, Rule{Access: a, Path: args[1]})
		args = args[2:]
	}
	if args[0] != "--" || args[1] == "" {
		return s, nil, errBadArgs
	}
	return s, args[1:], nil
}

// hexEncode and hexDecode stand in for encoding/hex, which would bring fmt into the helper's start.
const hexDigits = "0123456789abcdef"

func hexEncode(b []byte) string {
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	return string(out)
}

func hexDecode(s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(s)/2)
	for i := range out {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out[i] = hi<<4 | lo
	}
	return out, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
