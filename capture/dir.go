package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dirPerm is the mode of the directories the Manager creates; files are
// created 0600.
const (
	dirPerm  = 0o750
	filePerm = 0o600
)

// openDir opens the directory captures are written in as an os.Root,
// creating it (and its parents, mode 0750) when create is set, and checks
// who may write there (checkDir). Every capture file is then created
// beneath the opened directory, whatever happens to its path later: a
// parent renamed or a symlink swapped in moves nothing.
func openDir(path string, create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(path, dirPerm); err != nil {
			return nil, fmt.Errorf("capture directory: %w", err)
		}
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("capture directory: %w", err)
	}
	fi, err := root.Stat(".")
	if err == nil {
		err = checkDir(path, fi)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// createFile creates name beneath root for writing, mode 0600. An entry
// already there (a file of an earlier run, or a symlink) is removed, never
// followed, and the file is then created with O_EXCL, so that a name
// planted in between fails the open instead of redirecting it. os.Root
// resolves any directories in name beneath root only.
func createFile(root *os.Root, name string) (*os.File, error) {
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
}

// sameFiles reports whether two captures whose first files are a and b
// could ever write the same file, counting every file rotation makes of
// each (rotatedName). Two families of names meet exactly when one first
// name is among the other's files, because a rotation number is a run of
// digits between the stem and the extension.
func sameFiles(a, b string) bool {
	return a == b || isRotation(a, b) || isRotation(b, a)
}

// isRotation reports whether name is rotatedName(first, k) for some k ≥ 1.
func isRotation(name, first string) bool {
	ext := filepath.Ext(first)
	stem, ok := strings.CutSuffix(name, ext)
	if !ok {
		return false
	}
	k, ok := strings.CutPrefix(stem, strings.TrimSuffix(first, ext)+".")
	if !ok || k == "" || k[0] == '0' {
		return false
	}
	for _, c := range k {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
