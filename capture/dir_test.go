package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// startStop starts a capture of s on m, sends a frame through r, and stops it.
func startStop(t *testing.T, r *dataplanetest.Rig, m *Manager, s Spec) Status {
	t.Helper()
	id, err := m.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{}))
	r.Drain(1000)
	st, err := m.Stop(id)
	if err != nil || st.Written != 1 {
		t.Fatalf("stop: %+v, %v", st, err)
	}
	return st
}

// A symlink planted at the file's name is replaced, not followed: the file
// it pointed to keeps its bytes, and the capture is a new file of mode
// 0600. Before issue 12, capture opened with O_CREATE|O_TRUNC, 0644, and a
// switch running as root overwrote whatever the link named.
func TestCaptureReplacesSymlinkNeverFollows(t *testing.T) {
	r := line(t)
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "passwd")
	if err := os.WriteFile(target, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x.pcap", "x.1.pcap"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	m := New(r.Switch, r.Clock, Options{Dir: dir, Wall: fixedWall})
	// Rotation after every packet: the rotated name was planted too.
	s := Spec{Port: "out", Format: PCAP, Path: "x.pcap", MaxBytes: MinMaxBytes, SnapLen: 1500}
	id, err := m.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 1000, SrcPort: uint16(i)}))
		r.Drain(1000)
	}
	st, _ := m.Stop(id)
	if st.Files != 2 || st.Written != 2 || st.Error != "" {
		t.Fatalf("status %+v; want 2 packets in 2 files", st)
	}
	if b, _ := os.ReadFile(target); string(b) != "root:x:0:0\n" {
		t.Fatalf("the symlink's target now holds %q", b)
	}
	for _, name := range []string{"x.pcap", "x.1.pcap"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v; want a regular file of mode 0600", name, fi.Mode(), err)
		}
		if len(readPcap(t, filepath.Join(dir, name), 1500)) != 1 {
			t.Errorf("%s does not hold its packet", name)
		}
	}
}

// A directory inside the capture directory that is a symlink to outside
// does not lead out: the lexical check passed such paths before issue 12.
func TestCaptureSymlinkedDirStaysInside(t *testing.T) {
	r := line(t)
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	m := New(r.Switch, r.Clock, Options{Dir: dir})
	if _, err := m.Start(Spec{Port: "out", Path: "sub/x.pcapng"}); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("Start through a symlink out of the directory: %v, want an error", err)
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("the capture wrote %s outside its directory", es[0].Name())
	}
	// Directories the path names are made inside it.
	st := startStop(t, r, m, Spec{Port: "out", Path: "a/b/x.pcapng"})
	if st.File != filepath.Join(dir, "a/b/x.pcapng") {
		t.Errorf("file %q", st.File)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a/b")); err != nil || fi.Mode().Perm() != dirPerm {
		t.Errorf("a/b: %v %v; want a directory of mode %v", fi.Mode(), err, os.FileMode(dirPerm))
	}
}

// A capture directory that others may write to is refused unless the
// switch's user owns it; the switch creates a missing one 0750.
func TestCaptureDirOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the directory another owner needs root")
	}
	r := line(t)
	base := t.TempDir()
	for _, c := range []struct {
		mode    os.FileMode
		nobody  bool
		refused bool
	}{
		{0o777, true, true},
		{0o775, true, true},
		{0o757, true, true},
		{0o755, true, false},
		{0o777, false, false}, // ours: our choice
		{0o700, false, false},
	} {
		dir := filepath.Join(base, fmt.Sprintf("%o-%v", c.mode, c.nobody))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		if c.nobody {
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		m := New(r.Switch, r.Clock, Options{Dir: dir})
		id, err := m.Start(Spec{Port: "out", Path: "x.pcapng"})
		if c.refused {
			if err == nil || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "chmod go-w") {
				t.Errorf("mode %v owned by nobody: %v; want a refusal naming the owner and the fix", c.mode, err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "x.pcapng")); err == nil {
				t.Errorf("mode %v owned by nobody: the file was created", c.mode)
			}
			continue
		}
		if err != nil {
			t.Errorf("mode %v (nobody %v): %v", c.mode, c.nobody, err)
			continue
		}
		m.Stop(id)
	}
	made := filepath.Join(base, "new", "captures")
	m := New(r.Switch, r.Clock, Options{Dir: made})
	startStop(t, r, m, Spec{Port: "out", Path: "x.pcapng"})
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != dirPerm {
		t.Errorf("created capture directory: %v %v, want mode %v", fi.Mode(), err, os.FileMode(dirPerm))
	}
}

// Two running captures never write the same file, however they rotate:
// before issue 12, x.pcap rotating into x.1.pcap truncated the file
// another capture was writing.
func TestCapturesNeverShareAFile(t *testing.T) {
	r := line(t)
	dir := t.TempDir()
	for _, pair := range [][2]string{
		{"x.1.pcap", "x.pcap"}, {"x.pcap", "x.1.pcap"}, {"x", "x.3"}, {"d/x.2.pcapng", "d/x.pcapng"}, {"x.pcap", "/abs/x.pcap"},
	} {
		m := New(r.Switch, r.Clock, Options{Dir: dir})
		first, second := pair[0], pair[1]
		if strings.HasPrefix(second, "/abs/") {
			second = filepath.Join(dir, strings.TrimPrefix(second, "/abs/"))
		}
		id, err := m.Start(Spec{Port: "out", Path: first, MaxBytes: MinMaxBytes})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Start(Spec{Port: "out", Path: second, MaxBytes: MinMaxBytes}); err == nil {
			t.Errorf("%s started while %s runs", second, first)
		}
		m.Stop(id)
	}
	// Names that only look alike are fine.
	m := New(r.Switch, r.Clock, Options{Dir: dir})
	for _, p := range []string{"y.pcap", "y.01.pcap", "y.1.pcapng", "y.1x.pcap", "y1.pcap", "z/y.pcap"} {
		if _, err := m.Start(Spec{Port: "out", Path: p, MaxBytes: MinMaxBytes}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	m.Close()
}

// sameFiles agrees with a brute-force search of both families of rotated
// names, for every pair of names of up to 3 characters of "x.12" (their
// digit runs, and so the rotation numbers that matter, stay below 223).
func TestSameFilesIsFamilyIntersection(t *testing.T) {
	names := []string{""}
	for l := 0; l < 3; l++ {
		for _, n := range names {
			if len(n) == l {
				for _, c := range "x.12" {
					names = append(names, n+string(c))
				}
			}
		}
	}
	names = names[1:]
	family := map[string]map[string]bool{}
	for _, n := range names {
		f := map[string]bool{}
		for k := range 223 {
			f[rotatedName(n, k)] = true
		}
		family[n] = f
	}
	for _, a := range names {
		for _, b := range names {
			meet := false
			for n := range family[a] {
				meet = meet || family[b][n]
			}
			if got := sameFiles(a, b); got != meet {
				t.Fatalf("sameFiles(%q, %q) = %v, but the families meet: %v", a, b, got, meet)
			}
		}
	}
}

// Without a directory, each capture's file is created beneath its own
// parent, the same way.
func TestCaptureWithoutDir(t *testing.T) {
	r := line(t)
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "t")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "x.pcap"))
	m := New(r.Switch, r.Clock, Options{})
	startStop(t, r, m, Spec{Port: "out", Format: PCAP, Path: filepath.Join(dir, "x.pcap")})
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the symlink's target now holds %q", b)
	}
}
