package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// A capture that says nothing of rotation rotates: files of
// DefaultMaxBytes, the newest DefaultMaxFiles kept. Before issue 12 it
// wrote one file without bound.
func TestCaptureRotatesByDefault(t *testing.T) {
	r := line(t)
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir()})
	defer m.Close()
	if _, err := m.Start(Spec{Port: "out", Path: "x.pcapng"}); err != nil {
		t.Fatal(err)
	}
	st := m.Status()[0]
	if st.Spec.MaxBytes != DefaultMaxBytes || st.Spec.MaxFiles != DefaultMaxFiles {
		t.Errorf("defaults: max_bytes %d, max_files %d; want %d and %d", st.Spec.MaxBytes, st.Spec.MaxFiles, DefaultMaxBytes, DefaultMaxFiles)
	}
	if b, ok := st.Spec.DiskBound(); !ok || b != DefaultMaxFiles*(DefaultMaxBytes+DefaultSnapLen+recordSlack) {
		t.Errorf("disk bound %d, %v", b, ok)
	}
}

// The capture directory has a quota: a capture starts only if the files
// there, the bounds of the running captures and its own bound fit. Before
// issue 12 any number of unbounded captures could fill the disk.
func TestCaptureQuota(t *testing.T) {
	r := line(t)
	dir := t.TempDir()
	spec := func(name string) Spec {
		return Spec{Port: "out", Format: PCAP, Path: name, MaxBytes: 1 << 20, MaxFiles: 2}
	}
	bound, _ := spec("").DiskBound()
	m := New(r.Switch, r.Clock, Options{Dir: dir, Quota: 2*bound + 4096})
	defer m.Close()
	a, err := m.Start(spec("a.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(spec("b.pcap")); err != nil {
		t.Fatal(err)
	}
	_, err = m.Start(spec("c.pcap"))
	if err == nil || !strings.Contains(err.Error(), "capture.quota") || !errorsIsInvalid(err) {
		t.Fatalf("a third capture over the quota: %v", err)
	}
	// A stopped capture's files stay and count at their size: a's few
	// bytes leave room for c.
	r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{}))
	r.Drain(1000)
	if _, err := m.Stop(a); err != nil {
		t.Fatal(err)
	}
	c, err := m.Start(spec("c.pcap"))
	if err != nil {
		t.Fatalf("after a stopped: %v", err)
	}
	m.Stop(c)
	// Other files count too.
	if err := os.WriteFile(filepath.Join(dir, "old.pcap"), make([]byte, bound), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(spec("d.pcap")); err == nil {
		t.Error("a capture started with an old file filling the quota")
	}
	// Without a bound, no capture fits a quota.
	_, err = m.Start(Spec{Port: "out", Path: "e.pcap", MaxBytes: Unlimited})
	if err == nil || !strings.Contains(err.Error(), "no size bound") {
		t.Errorf("an unbounded capture: %v", err)
	}
	// Quota −1 turns it off.
	m2 := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Quota: -1})
	defer m2.Close()
	if _, err := m2.Start(Spec{Port: "out", Path: "e.pcap", MaxBytes: Unlimited}); err != nil {
		t.Errorf("an unbounded capture without a quota: %v", err)
	}
}

// The rings of the running captures share a memory budget. Before issue
// 12, 64 captures could take 256 MiB of ring each.
func TestCaptureRingMemory(t *testing.T) {
	r := line(t)
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), RingMemory: 3 << 20})
	defer m.Close()
	s := func(name string) Spec { return Spec{Port: "out", Path: name, Ring: 4096, SnapLen: 256} } // 1 MiB each
	var ids []int
	for _, name := range []string{"a", "b", "c"} {
		id, err := m.Start(s(name))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, err := m.Start(s("d"))
	if err == nil || !strings.Contains(err.Error(), "capture.ring_memory") || !errorsIsInvalid(err) {
		t.Fatalf("a fourth 1 MiB ring in 3 MiB: %v", err)
	}
	m.Stop(ids[0])
	if _, err := m.Start(s("d")); err != nil {
		t.Errorf("after one stopped: %v", err)
	}
	// The default budget holds one largest ring (256 MiB) and nothing
	// beside it.
	m2 := New(r.Switch, r.Clock, Options{Dir: t.TempDir()})
	defer m2.Close()
	if _, err := m2.Start(Spec{Port: "out", Path: "a", Ring: 1 << 16}); err != nil { // 16 MiB
		t.Fatal(err)
	}
	if _, err := m2.Start(Spec{Port: "out", Path: "b", Ring: 1 << 20}); err == nil { // 256 MiB
		t.Error("a 256 MiB ring started beside a 16 MiB one under the default budget")
	}
}

func errorsIsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
