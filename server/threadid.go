package server

import (
	"fmt"
	"strings"
)

// validateThreadID checks a thread id the way the reference's uuid parser does, with its messages.
func validateThreadID(id string) error {
	if err := uuidError(id); err != "" {
		return fmt.Errorf("invalid thread id: %s", err)
	}
	return nil
}

// validateSessionID is validateThreadID worded as the reference's rollout-level methods (thread/resume,
// thread/fork, thread/archive, thread/unarchive) word it: "invalid session id: …".
func validateSessionID(id string) error {
	if err := uuidError(id); err != "" {
		return fmt.Errorf("invalid session id: %s", err)
	}
	return nil
}

func uuidError(s string) string {
	offset := 0
	if strings.HasPrefix(s, "urn:uuid:") {
		s = s[len("urn:uuid:"):]
		offset = len("urn:uuid:")
	}
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && len(s) >= 2 {
		s = s[1 : len(s)-1]
		offset++
	}
	for i, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return fmt.Sprintf("invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%c` at %d", r, i+offset+1)
		}
	}
	if !strings.Contains(s, "-") {
		if len(s) != 32 {
			return fmt.Sprintf("invalid length: expected length 32 for simple format, found %d", len(s))
		}
		return ""
	}
	groups := strings.Split(s, "-")
	if len(groups) != 5 {
		return fmt.Sprintf("invalid group count: expected 5, found %d", len(groups))
	}
	want := []int{8, 4, 4, 4, 12}
	for i, g := range groups {
		if len(g) != want[i] {
			return fmt.Sprintf("invalid group length in group %d: expected %d, found %d", i, want[i], len(g))
		}
	}
	return ""
}
