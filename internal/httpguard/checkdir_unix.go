//go:build unix

package httpguard

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// CheckDir refuses a directory that its group or others may write to
// unless the process's effective user owns it: whoever may write there
// could put names where the switch creates its socket.
func CheckDir(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("directory %s: mode %v lets its group or others write, and it is owned by uid %d, not uid %d that the switch runs as: "+
			"anyone who can write there could plant names where the switch creates its socket; chmod go-w it, or choose another control.socket",
			path, perm, st.Uid, os.Geteuid())
	}
	return nil
}
