package thread

import (
	"path/filepath"
	"strings"
	"time"

	protocol "appserver/protocol/v2"
	"appserver/sandbox"
)

// environmentContext is the user message that tells the model where it works: cwd, shell, date, timezone
// and what the sandbox lets commands touch (the reference's tags, with ours' protected entries).
func environmentContext(s Settings, now time.Time) string {
	var b strings.Builder
	b.WriteString("<environment_context>\n")
	b.WriteString("  <cwd>" + s.Cwd + "</cwd>\n")
	b.WriteString("  <shell>" + shellName() + "</shell>\n")
	writeDateAndFilesystem(&b, s, now)
	return b.String()
}

// environmentUpdate is the environment context sent when only the sandbox changed: like the reference's, it
// leaves out the cwd and the shell, which the model still knows.
func environmentUpdate(s Settings, now time.Time) string {
	var b strings.Builder
	b.WriteString("<environment_context>\n")
	writeDateAndFilesystem(&b, s, now)
	return b.String()
}

func writeDateAndFilesystem(b *strings.Builder, s Settings, now time.Time) {
	b.WriteString("  <current_date>" + now.Format("2006-01-02") + "</current_date>\n")
	b.WriteString("  <timezone>" + timezoneName() + "</timezone>\n")
	b.WriteString("  " + filesystemText(s) + "\n")
	b.WriteString("</environment_context>")
}

// filesystemText describes, in the reference's <filesystem> form, the workspace root (the cwd) and what the
// sandbox lets commands read and write: ":root" is every file, ":slash_tmp" /tmp and ":tmpdir" $TMPDIR; the
// read entries under writable roots are the ones our sandbox keeps read-only.
func filesystemText(s Settings) string {
	var b strings.Builder
	b.WriteString("<filesystem><workspace_roots><root>" + s.Cwd + "</root></workspace_roots>")
	entry := func(access, kind, value string) {
		b.WriteString(`<entry access="` + access + `"><` + kind + ">" + value + "</" + kind + "></entry>")
	}
	switch v := s.Sandbox.Value.(type) {
	case protocol.SandboxPolicyDangerFullAccess:
		b.WriteString(`<permission_profile type="disabled"><file_system type="unrestricted" /></permission_profile>`)
	case protocol.SandboxPolicyExternalSandbox:
		b.WriteString(`<permission_profile type="external"><file_system type="external" /></permission_profile>`)
	case protocol.SandboxPolicyWorkspaceWrite:
		b.WriteString(`<permission_profile type="managed"><file_system type="restricted">`)
		entry("read", "special", ":root")
		roots := []string{s.Cwd}
		entry("write", "path", s.Cwd)
		if v.ExcludeSlashTmp == nil || !*v.ExcludeSlashTmp {
			entry("write", "special", ":slash_tmp")
		}
		if v.ExcludeTmpdirEnvVar == nil || !*v.ExcludeTmpdirEnvVar {
			entry("write", "special", ":tmpdir")
		}
		for _, r := range v.WritableRoots {
			root := string(r)
			if !filepath.IsAbs(root) {
				root = filepath.Join(s.Cwd, root)
			}
			if root = filepath.Clean(root); root == s.Cwd {
				continue
			}
			entry("write", "path", root)
			roots = append(roots, root)
		}
		for _, root := range roots {
			for _, name := range sandbox.ProtectedNames {
				entry("read", "path", filepath.Join(root, name))
			}
		}
		b.WriteString(`</file_system></permission_profile>`)
	default: // read-only
		b.WriteString(`<permission_profile type="managed"><file_system type="restricted">`)
		entry("read", "special", ":root")
		b.WriteString(`</file_system></permission_profile>`)
	}
	b.WriteString("</filesystem>")
	return b.String()
}
