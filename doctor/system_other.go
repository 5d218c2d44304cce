//go:build !linux

package doctor

import "os"

// System returns this machine as the checks read it: outside Linux, its
// files alone, and no probe.
func System() Host {
	return Host{FS: os.DirFS("/")}
}
