package dctcp_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
)

// TestHolderNames: holder names become file names in bpffs, so only
// lowercase letters, digits and '-' pass, and nothing is touched before
// the name is checked.
func TestHolderNames(t *testing.T) {
	o := dctcp.Options{PinDir: filepath.Join(t.TempDir(), "pins")}
	for _, h := range []string{"", "Testbed-1", "a/b", "../x", "a b", strings.Repeat("a", 65)} {
		if _, err := dctcp.Acquire(h, o); err == nil || !strings.Contains(err.Error(), "holder") {
			t.Errorf("Acquire(%q): %v; want an error naming the holder", h, err)
		}
		if _, err := dctcp.Release(h, o); err == nil {
			t.Errorf("Release(%q) succeeded", h)
		}
	}
	if _, err := os.Stat(o.PinDir); err == nil {
		t.Errorf("rejected holders created %s", o.PinDir)
	}
}

// private returns options that register the program under a name of the
// test's own, pinned in a directory of its own, and unregister it in
// t.Cleanup.
func private(t *testing.T) (dctcp.Options, string) {
	t.Helper()
	testenv.MustBeRoot(t, "registering a congestion control needs CAP_BPF and CAP_NET_ADMIN")
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(b[:])
	name := "dctcpt" + id // 12 bytes: TCP_CA_NAME_MAX is 16 with the NUL
	o := dctcp.WithName(dctcp.Options{PinDir: "/sys/fs/bpf/ecnswitch/test-" + id}, name)
	t.Cleanup(func() {
		if _, err := dctcp.Unload(o); err != nil {
			t.Errorf("unload: %v", err)
		}
		if err := os.RemoveAll(o.PinDir); err != nil {
			t.Errorf("remove %s: %v", o.PinDir, err)
		}
		if available(t, name) {
			t.Errorf("%s still registered after the test", name)
		}
	})
	return o, name
}

// available reports whether the kernel lists name.
func available(t *testing.T, name string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(strings.Fields(string(b)), name)
}

// TestHolds: the first holder registers the congestion control, later
// holders share its link, and it stays registered, and usable by a socket,
// until the last holder releases it; then the kernel no longer lists it.
// A holder that acquires twice holds once; releasing twice is harmless.
func TestHolds(t *testing.T) {
	o, name := private(t)
	if available(t, name) {
		t.Fatalf("%s registered before the test", name)
	}
	for _, h := range []string{"a", "b", "a"} {
		src, err := dctcp.Acquire(h, o)
		if err != nil || src != dctcp.BPF {
			t.Fatalf("Acquire(%s) = %v, %v; want bpf", h, src, err)
		}
	}
	st, err := dctcp.Stat(o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source != dctcp.BPF || !slices.Equal(st.Holders, []string{"a", "b"}) || st.Link == 0 {
		t.Fatalf("Stat = %+v; want bpf held by a and b, with a link", st)
	}
	if !available(t, name) {
		t.Fatalf("%s not in tcp_available_congestion_control while held", name)
	}
	useIt(t, name)

	if unloaded, err := dctcp.Release("a", o); err != nil || unloaded {
		t.Fatalf("Release(a) = %v, %v; want it still held by b", unloaded, err)
	}
	if !available(t, name) {
		t.Fatalf("%s unregistered while b holds it", name)
	}
	if unloaded, err := dctcp.Release("b", o); err != nil || !unloaded {
		t.Fatalf("Release(b) = %v, %v; want the last holder to unregister it", unloaded, err)
	}
	if available(t, name) {
		t.Fatalf("%s still listed after its last holder released it", name)
	}
	if unloaded, err := dctcp.Release("b", o); err != nil || unloaded {
		t.Fatalf("Release(b) again = %v, %v; want nothing done", unloaded, err)
	}
	if st, err := dctcp.Stat(o); err != nil || st.Source != dctcp.Missing || len(st.Holders) != 0 {
		t.Fatalf("Stat after the last release = %+v, %v; want missing, no holders", st, err)
	}

	// A new holder registers it anew; Unload takes it away from all.
	if src, err := dctcp.Acquire("c", o); err != nil || src != dctcp.BPF {
		t.Fatalf("Acquire(c) = %v, %v", src, err)
	}
	if held, err := dctcp.Unload(o); err != nil || !slices.Equal(held, []string{"c"}) {
		t.Fatalf("Unload = %v, %v; want it to have been held by c", held, err)
	}
	if available(t, name) {
		t.Fatalf("%s still listed after Unload", name)
	}
}

// useIt makes name a socket's congestion control, as TCP_CONGESTION does
// for an application.
func useIt(t *testing.T, name string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
		t.Fatalf("TCP_CONGESTION %s: %v", name, err)
	}
	if got, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil || got != name {
		t.Fatalf("a socket's congestion control %q, %v; want %s", got, err, name)
	}
}

// TestHoldOutlivesProcess: a holder's pin keeps the congestion control
// registered after the process that loaded it exits, as `ecnswitch
// testbed up` and `ecnswitch dctcp load` need; another process releases
// it.
func TestHoldOutlivesProcess(t *testing.T) {
	o, name := private(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAcquire$")
	cmd.Env = append(os.Environ(), "DCTCP_HELPER_PINDIR="+o.PinDir, "DCTCP_HELPER_NAME="+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !available(t, name) {
		t.Fatalf("%s not registered after the process that loaded it exited", name)
	}
	if st, err := dctcp.Stat(o); err != nil || !slices.Equal(st.Holders, []string{"child"}) {
		t.Fatalf("Stat = %+v, %v; want held by child", st, err)
	}
	if unloaded, err := dctcp.Release("child", o); err != nil || !unloaded {
		t.Fatalf("Release(child) = %v, %v", unloaded, err)
	}
	if available(t, name) {
		t.Fatalf("%s still registered after its holder released it", name)
	}
}

// TestHelperAcquire is TestHoldOutlivesProcess's other process.
func TestHelperAcquire(t *testing.T) {
	dir, name := os.Getenv("DCTCP_HELPER_PINDIR"), os.Getenv("DCTCP_HELPER_NAME")
	if dir == "" {
		t.Skip("run by TestHoldOutlivesProcess")
	}
	if src, err := dctcp.Acquire("child", dctcp.WithName(dctcp.Options{PinDir: dir}, name)); err != nil || src != dctcp.BPF {
		t.Fatalf("Acquire = %v, %v", src, err)
	}
}
