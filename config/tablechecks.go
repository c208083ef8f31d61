package config

import "strconv"

// checkTui checks the `[tui]` fields whose types the reference refuses. Its notification settings sit in
// a flattened struct, so their errors name `tui` (and serde's buffered enum words them "string or map").
func checkTui(r *reader, path []string, t tree) {
	for _, k := range sortedKeys(t) {
		if r.err != nil {
			return
		}
		v, p := t[k], child(path, k)
		switch k {
		case "notifications":
			if !notificationsOK(v) {
				r.failMsg(path, "data did not match any variant of untagged enum Notifications")
			}
		case "notification_method":
			if msg := contentEnumError([]string{"auto", "osc9", "osc777", "bel"}, v); msg != "" {
				r.failMsg(path, msg)
			}
		case "notification_condition":
			if msg := contentEnumError([]string{"unfocused", "always"}, v); msg != "" {
				r.failMsg(path, msg)
			}
		case "alternate_screen":
			if msg, sub := unitEnumError([]string{"auto", "always", "never"}, v); msg != "" {
				r.failMsg(append(p, sub...), msg)
			}
		case "status_line", "terminal_title":
			checkStringList(r, p, v)
		default:
			if want, ok := tuiFields[k]; ok {
				if msg := checkValue(want, v); msg != "" {
					r.failMsg(p, msg)
				}
			}
		}
	}
}

// tuiFields are the other `[tui]` fields' types (codex-cli 0.169.0's words).
var tuiFields = map[string]string{
	"animations": "a boolean", "show_tooltips": "a boolean", "raw_output_mode": "a boolean", "theme": "a string",
	"model_availability_nux": "struct ModelAvailabilityNuxConfig", "keymap": "struct TuiKeymap",
}

// notificationsOK is whether v is a tui.notifications the reference takes: a boolean or a list of strings.
func notificationsOK(v any) bool {
	switch x := v.(type) {
	case bool:
		return true
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// contentEnumError is serde's error for v read as an enum of unit variants from buffered content (a
// flattened struct's field): a string names the variant, a table of one entry names it by its key.
func contentEnumError(variants []string, v any) string {
	name := ""
	switch x := v.(type) {
	case string:
		name = x
	case tree:
		if len(x) != 1 {
			return "invalid value: map, expected map with a single key"
		}
		for k := range x {
			name = k
		}
	default:
		return "invalid type: " + serdeDescribe(v) + ", expected string or map"
	}
	for _, e := range variants {
		if e != name {
			continue
		}
		if m, ok := v.(tree); ok { // a unit variant takes no value, and TOML has no unit
			return "invalid type: " + serdeDescribe(m[name]) + ", expected unit"
		}
		return ""
	}
	return "unknown variant `" + name + "`, expected " + variantList(variants)
}

// checkStringList checks a list of strings: an item of another type is located at the item and named by
// the list.
func checkStringList(r *reader, p []string, v any) {
	items, ok := v.([]any)
	if !ok {
		r.failMsg(p, checkValue("a sequence", v))
		return
	}
	for i, it := range items {
		if msg := checkValue("a string", it); msg != "" {
			r.failMsgNamed(child(p, strconv.Itoa(i)), p, msg)
			return
		}
	}
}

// checkPermissionTypes checks every `[permissions.<name>]` profile's fields as the reference's types do.
// The profiles sit in a flattened map, so every error names `permissions` (and its enums are read from
// buffered content).
func checkPermissionTypes(r *reader, path []string, t tree) {
	fail := func(p []string, msg string) { r.failMsg(path, msg) }
	for _, name := range sortedKeys(t) {
		pp := child(path, name)
		profile, ok := t[name].(tree)
		if !ok {
			fail(pp, "invalid type: "+serdeDescribe(t[name])+", expected struct PermissionProfileToml")
			return
		}
		for _, k := range sortedKeys(profile) {
			v, p := profile[k], child(pp, k)
			msg := ""
			switch k {
			case "description", "extends":
				msg = checkValue("a string", v)
			case "workspace_roots":
				if msg = checkValue("struct WorkspaceRootsToml", v); msg == "" {
					msg = mapValuesError(v.(tree), "a boolean")
				}
			case "filesystem":
				msg = filesystemPermissionsError(v)
			case "network":
				msg = networkError(v)
			}
			if msg != "" {
				fail(p, msg)
				return
			}
		}
	}
}

// mapValuesError is the first error of a map's values read as want, in key order.
func mapValuesError(m tree, want string) string {
	for _, k := range sortedKeys(m) {
		if msg := checkValue(want, m[k]); msg != "" {
			return msg
		}
	}
	return ""
}

// filesystemAccessModes are the access values a permissions profile's filesystem path takes.
var filesystemAccessModes = map[string]bool{"read": true, "write": true, "none": true, "deny": true}

// filesystemPermissionsError checks a profile's `filesystem` table: glob_scan_max_depth a usize, every other entry an access mode or a table of sub-paths to access modes.
func filesystemPermissionsError(v any) string {
	if msg := checkValue("struct FilesystemPermissionsToml", v); msg != "" {
		return msg
	}
	fs := v.(tree)
	for _, k := range sortedKeys(fs) {
		e := fs[k]
		if k == "glob_scan_max_depth" { // its least value is checked for the selected profile (checkPermissions)
			if msg := checkValue("usize", e); msg != "" {
				return msg
			}
			continue
		}
		ok := false
		switch x := e.(type) {
		case string:
			ok = filesystemAccessModes[x]
		case tree:
			ok = true
			for _, sub := range x {
				s, isStr := sub.(string)
				ok = ok && isStr && filesystemAccessModes[s]
			}
		}
		if !ok {
			return "data did not match any variant of untagged enum FilesystemPermissionToml"
		}
	}
	return ""
}

// networkFields are the types of a profile's `network` fields other than mode, domains and unix_sockets.
var networkFields = map[string]string{
	"enabled": "a boolean", "proxy_url": "a string", "enable_socks5": "a boolean", "socks_url": "a string",
	"enable_socks5_udp": "a boolean", "allow_upstream_proxy": "a boolean",
	"dangerously_allow_non_loopback_proxy": "a boolean", "dangerously_allow_all_unix_sockets": "a boolean",
	"allow_local_binding": "a boolean", "mitm": "struct NetworkMitmTomlUnchecked",
}

// networkError checks a profile's `network` table.
func networkError(v any) string {
	if msg := checkValue("struct NetworkToml", v); msg != "" {
		return msg
	}
	n := v.(tree)
	allowDeny := []string{"allow", "deny"}
	for _, k := range sortedKeys(n) {
		e := n[k]
		msg := ""
		switch k {
		case "mode":
			msg = contentEnumError([]string{"limited", "full"}, e)
		case "domains", "unix_sockets":
			want := "struct NetworkDomainPermissionsToml"
			if k == "unix_sockets" {
				want = "struct NetworkUnixSocketPermissionsToml"
			}
			if msg = checkValue(want, e); msg == "" {
				m := e.(tree)
				for _, d := range sortedKeys(m) {
					if msg = contentEnumError(allowDeny, m[d]); msg != "" {
						break
					}
				}
			}
		default:
			if want, ok := networkFields[k]; ok {
				msg = checkValue(want, e)
			}
		}
		if msg != "" {
			return msg
		}
	}
	return ""
}
