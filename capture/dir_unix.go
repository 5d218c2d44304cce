//go:build unix

package capture

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkDir refuses a capture directory that its group or others may write
// to unless the switch's own user owns it: whoever may write there can
// plant names where the switch creates files as root. (A directory owned
// by the switch's user, /tmp with its sticky bit for root say, is its
// owner's choice.)
func checkDir(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("capture directory %s: mode %v lets its group or others write, and it is owned by uid %d, not uid %d that the switch runs as: "+
			"anyone who can write there could plant files where the switch writes; chmod go-w it, or choose another capture.dir",
			path, perm, st.Uid, os.Geteuid())
	}
	return nil
}
