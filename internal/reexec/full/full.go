// Package full runs the complete sandbox helper from a package initializer (see package reexec).
package full

import "appserver/sandbox"

func init() { sandbox.RunHelperIfRequested() }
