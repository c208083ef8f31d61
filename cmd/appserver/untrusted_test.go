package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference (0.169.0) refuses approval_policy = "untrusted" in config.toml and exits before answering
// anything, although the protocol still accepts the policy per thread. We accept it (issue 6): the
// thread starts with it.
func TestUntrustedApprovalPolicyInConfigIsAccepted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		args   []string
	}{
		{"config.toml", "approval_policy = \"untrusted\"\n", nil},
		{"-c override", "", []string{"-c", "approval_policy=\"untrusted\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := writeConfig(t, tc.config)
			p := startBinary(t, home, tc.args...)
			res := p.request(0, "initialize", map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}})
			require.NotNil(t, res["result"])
			started := p.request(1, "thread/start", map[string]any{"ephemeral": true})
			require.Equal(t, "untrusted", started["result"].(map[string]any)["approvalPolicy"])
		})
	}
}
