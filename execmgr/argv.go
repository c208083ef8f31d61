package execmgr

import "path/filepath"

// ShellArgv is the argv a shell tool runs: [shell, "-lc", script], or "-c" when login is explicitly false.
func ShellArgv(shell string, login *bool, script string) []string {
	flag := "-lc"
	if login != nil && !*login {
		flag = "-c"
	}
	return []string{shell, flag, script}
}

// ResolveDir resolves a requested working directory against base: base when dir is "", dir itself when it
// is absolute or base is "", else dir joined to base.
func ResolveDir(base, dir string) string {
	switch {
	case dir == "":
		return base
	case filepath.IsAbs(dir) || base == "":
		return dir
	}
	return filepath.Join(base, dir)
}
