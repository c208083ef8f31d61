// Package sandbox confines shell commands run on behalf of the model: it maps the protocol's
// SandboxPolicy/SandboxMode onto kernel mechanisms (Landlock, seccomp, a private mount namespace)
// that a re-executed helper applies to itself before exec'ing the target command.
package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Kind is the sandbox flavour of a Policy.
type Kind int

// The policy kinds, matching the wire tags of SandboxPolicy.
const (
	// ReadOnly allows reads everywhere and no writes.
	ReadOnly Kind = iota
	// WorkspaceWrite allows writes under cwd, the writable roots and the temp directories.
	WorkspaceWrite
	// DangerFullAccess applies no restriction at all.
	DangerFullAccess
	// External means the server already runs inside a sandbox managed by someone else; no restriction is added.
	External
)

// Wire names of SandboxMode (thread/start "sandbox").
const (
	ModeReadOnly         = "read-only"
	ModeWorkspaceWrite   = "workspace-write"
	ModeDangerFullAccess = "danger-full-access"
)

// ErrInvalidPolicy reports a policy value that is neither a known SandboxMode nor a known SandboxPolicy.
var ErrInvalidPolicy = errors.New("invalid sandbox policy")

var kindTags = [...]string{
	ReadOnly:         "readOnly",
	WorkspaceWrite:   "workspaceWrite",
	DangerFullAccess: "dangerFullAccess",
	External:         "externalSandbox",
}

// String returns the wire tag of k ("readOnly", "workspaceWrite", "dangerFullAccess", "externalSandbox").
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindTags) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindTags[k]
}

// Policy is a sandbox policy as carried by turn/start and command/exec ("sandboxPolicy") or
// derived from a SandboxMode string.
type Policy struct {
	// Kind selects the flavour.
	Kind Kind
	// WritableRoots are extra directories writable under WorkspaceWrite (cwd is always included).
	WritableRoots []string
	// NetworkAccess allows network use; for External it maps to "enabled" vs "restricted".
	NetworkAccess bool
	// ExcludeTmpdirEnvVar drops $TMPDIR from the WorkspaceWrite roots.
	ExcludeTmpdirEnvVar bool
	// ExcludeSlashTmp drops /tmp from the WorkspaceWrite roots.
	ExcludeSlashTmp bool
}

// Sandboxed reports whether commands under p must run through the sandbox helper.
func (p Policy) Sandboxed() bool { return p.Kind == ReadOnly || p.Kind == WorkspaceWrite }

// Mode returns the SandboxMode string for p, or "" for External (which has no mode string).
func (p Policy) Mode() string {
	switch p.Kind {
	case ReadOnly:
		return ModeReadOnly
	case WorkspaceWrite:
		return ModeWorkspaceWrite
	case DangerFullAccess:
		return ModeDangerFullAccess
	}
	return ""
}

// ParseMode converts a SandboxMode string into the default Policy of that mode.
func ParseMode(mode string) (Policy, error) {
	switch mode {
	case ModeReadOnly:
		return Policy{Kind: ReadOnly}, nil
	case ModeWorkspaceWrite:
		return Policy{Kind: WorkspaceWrite}, nil
	case ModeDangerFullAccess:
		return Policy{Kind: DangerFullAccess}, nil
	}
	return Policy{}, fmt.Errorf("%w: unknown variant %q, expected one of %q, %q, %q",
		ErrInvalidPolicy, mode, ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess)
}

type readOnlyWire struct {
	Type          string `json:"type"`
	NetworkAccess bool   `json:"networkAccess"`
}

type workspaceWriteWire struct {
	Type                string   `json:"type"`
	WritableRoots       []string `json:"writableRoots"`
	NetworkAccess       bool     `json:"networkAccess"`
	ExcludeTmpdirEnvVar bool     `json:"excludeTmpdirEnvVar"`
	ExcludeSlashTmp     bool     `json:"excludeSlashTmp"`
}

type externalWire struct {
	Type          string `json:"type"`
	NetworkAccess string `json:"networkAccess"`
}

type typeOnlyWire struct {
	Type string `json:"type"`
}

// MarshalJSON writes the SandboxPolicy object form with every field present, as the reference does.
func (p Policy) MarshalJSON() ([]byte, error) {
	switch p.Kind {
	case ReadOnly:
		return json.Marshal(readOnlyWire{Type: p.Kind.String(), NetworkAccess: p.NetworkAccess})
	case WorkspaceWrite:
		roots := p.WritableRoots
		if roots == nil {
			roots = []string{}
		}
		return json.Marshal(workspaceWriteWire{Type: p.Kind.String(), WritableRoots: roots,
			NetworkAccess: p.NetworkAccess, ExcludeTmpdirEnvVar: p.ExcludeTmpdirEnvVar, ExcludeSlashTmp: p.ExcludeSlashTmp})
	case DangerFullAccess:
		return json.Marshal(typeOnlyWire{Type: p.Kind.String()})
	case External:
		na := "restricted"
		if p.NetworkAccess {
			na = "enabled"
		}
		return json.Marshal(externalWire{Type: p.Kind.String(), NetworkAccess: na})
	}
	return nil, fmt.Errorf("%w: kind %d", ErrInvalidPolicy, int(p.Kind))
}

// UnmarshalJSON accepts either a SandboxMode string or a SandboxPolicy object; absent fields take
// their schema defaults and unknown fields are ignored.
func (p *Policy) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var mode string
		if err := json.Unmarshal(data, &mode); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
		}
		np, err := ParseMode(mode)
		if err != nil {
			return err
		}
		*p = np
		return nil
	}
	if len(data) == 0 || data[0] != '{' {
		return fmt.Errorf("%w: expected a mode string or an object, got %s", ErrInvalidPolicy, truncate(data))
	}
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	if head.Type == nil {
		return fmt.Errorf("%w: missing field `type`", ErrInvalidPolicy)
	}
	var np Policy
	switch *head.Type {
	case "readOnly":
		var w readOnlyWire
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
		}
		np = Policy{Kind: ReadOnly, NetworkAccess: w.NetworkAccess}
	case "workspaceWrite":
		var w workspaceWriteWire
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
		}
		for _, r := range w.WritableRoots {
			if r == "" {
				return fmt.Errorf("%w: empty writable root", ErrInvalidPolicy)
			}
		}
		np = Policy{Kind: WorkspaceWrite, WritableRoots: w.WritableRoots, NetworkAccess: w.NetworkAccess,
			ExcludeTmpdirEnvVar: w.ExcludeTmpdirEnvVar, ExcludeSlashTmp: w.ExcludeSlashTmp}
	case "dangerFullAccess":
		np = Policy{Kind: DangerFullAccess}
	case "externalSandbox":
		var w struct {
			NetworkAccess *string `json:"networkAccess"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
		}
		np = Policy{Kind: External}
		if w.NetworkAccess != nil {
			switch *w.NetworkAccess {
			case "restricted":
			case "enabled":
				np.NetworkAccess = true
			default:
				return fmt.Errorf("%w: unknown variant %q, expected `restricted` or `enabled`", ErrInvalidPolicy, *w.NetworkAccess)
			}
		}
	default:
		return fmt.Errorf("%w: unknown variant %q, expected one of `dangerFullAccess`, `readOnly`, `externalSandbox`, `workspaceWrite`",
			ErrInvalidPolicy, *head.Type)
	}
	*p = np
	return nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
