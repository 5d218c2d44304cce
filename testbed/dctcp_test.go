package testbed_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestDCTCPHosts: with CongestionControl dctcp and RTOMin 10 ms, on a
// kernel without tcp_dctcp as on one with it,
//   - every host defaults to dctcp and has tcp_rto_min_us = 10000, and a
//     connection's RTO sits at that floor, not Linux's 200 ms;
//   - its SYN, SYN-ACK and every other packet carry ECT(0), as
//     TCP_CONG_NEEDS_ECN makes them (with tcp_ecn=1 cubic's SYNs are
//     Not-ECT: TestDialSetsDSCPAndKeepsECT);
//   - through an unmarking bridge, α decays from 1 by exactly
//     α ← α − ⌊α/16⌋ per window (DCTCP's Eq. 1 with F = 0, g = 1/16);
//   - a listener that does not need ECN (cubic) refuses an ECT SYN's ECN
//     request, and the connection falls back to Reno without ECT, as
//     tcp_dctcp.c's does;
//   - after Down the testbed's hold is gone, and dctcp stays registered
//     only while someone else holds it.
func TestDCTCPHosts(t *testing.T) {
	const rtoMin = 10 * time.Millisecond
	tb := testbedtest.New(t, 2, func(o *testbed.Options) {
		o.CongestionControl = dctcp.Name
		o.RTOMin = rtoMin
	})
	st, err := dctcp.Stat(dctcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	holder := "testbed-" + tb.ID()
	bpf := st.Source == dctcp.BPF
	switch {
	case bpf != tb.HoldsDCTCP():
		t.Fatalf("dctcp comes from %s, and HoldsDCTCP() = %v", st.Source, tb.HoldsDCTCP())
	case bpf && !slices.Contains(st.Holders, holder):
		t.Fatalf("dctcp holders %v: want %s among them", st.Holders, holder)
	case !bpf && st.Source != dctcp.Kernel:
		t.Fatalf("dctcp comes from %s after Up: want the BPF one or the kernel's", st.Source)
	}
	t.Logf("dctcp: %s, holders %v", st.Source, st.Holders)
	if got := tb.RTOMin(); got != rtoMin {
		t.Errorf("RTOMin() = %v, want %v", got, rtoMin)
	}
	for _, h := range tb.Hosts() {
		if got := readSysctl(t, h.Netns, "net/ipv4/tcp_congestion_control"); got != dctcp.Name {
			t.Errorf("%s: tcp_congestion_control = %s, want dctcp", h.Netns, got)
		}
		if got := readSysctl(t, h.Netns, "net/ipv4/tcp_rto_min_us"); got != "10000" {
			t.Errorf("%s: tcp_rto_min_us = %s, want 10000", h.Netns, got)
		}
	}

	bridge(t, tb)
	h1, h2 := tb.Hosts()[0], tb.Hosts()[1]

	t.Run("dctcp to dctcp", func(t *testing.T) {
		capt := startCapture(t, h1.SwitchIf)
		c, rcv := connect(t, h1, h2, "")
		if got := congestionControl(t, c); got != dctcp.Name {
			t.Errorf("the connection runs %s, want dctcp", got)
		}
		const n = 1 << 20
		if _, err := c.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		info := tcpInfo(t, c)
		rto := time.Duration(info.Rto) * time.Microsecond
		if rto < rtoMin || rto >= rtoMin+40*time.Millisecond {
			t.Errorf("RTO %v: want at the floor of %v (Linux's default floor is 200 ms)", rto, rtoMin)
		}
		if bpf {
			checkAlphaDecays(t, c)
		}
		c.Close()
		waitFlowsDone(t, rcv, 1)
		rcv.Close()
		var syns, other int
		for _, f := range capt.stop() {
			if f.proto != unix.IPPROTO_TCP {
				continue
			}
			if ecn := packet.ECN(f.tos & 3); ecn != packet.ECT0 {
				t.Fatalf("a TCP packet from %s (SYN %v, %d bytes) carries %v: want ECT(0) on every packet", f.src, f.syn, f.payload, ecn)
			}
			if f.syn {
				syns++
			} else {
				other++
			}
		}
		if syns != 2 || other < n/1500 {
			t.Errorf("captured %d SYNs and %d other TCP packets; want the SYN and SYN-ACK and at least %d", syns, other, n/1500)
		}
	})

	t.Run("fallback to reno", func(t *testing.T) {
		capt := startCapture(t, h1.SwitchIf)
		c, rcv := connect(t, h1, h2, "cubic")
		if got := congestionControl(t, c); got != "reno" {
			t.Errorf("a dctcp connection to a cubic listener runs %s, want reno", got)
		}
		if _, err := c.Write(make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		waitFlowsDone(t, rcv, 1)
		rcv.Close()
		var synECT, data int
		for _, f := range capt.stop() {
			switch {
			case f.proto != unix.IPPROTO_TCP || f.src != h1.IPv4:
			case f.syn:
				if packet.ECN(f.tos&3) == packet.ECT0 {
					synECT++
				}
			case f.payload > 0:
				data++
				if ecn := packet.ECN(f.tos & 3); ecn != packet.NotECT {
					t.Fatalf("a data segment of the fallen-back connection carries %v, want Not-ECT", ecn)
				}
			}
		}
		if synECT != 1 || data == 0 {
			t.Errorf("captured %d ECT(0) SYNs and %d data segments from h1; want 1 and some", synECT, data)
		}
	})

	if err := tb.Down(); err != nil {
		t.Fatal(err)
	}
	// Read the holders and the kernel's list under the lock Acquire and
	// Release take: tests of other packages may hold dctcp meanwhile.
	held, avail := lockedDCTCPState(t)
	if slices.Contains(held, holder) {
		t.Errorf("after Down, %s still holds dctcp (holders %v)", holder, held)
	}
	registered := slices.Contains(avail, dctcp.Name)
	if bpf && registered != (len(held) > 0) {
		t.Errorf("after Down: dctcp registered = %v with holders %v; want registered exactly while someone holds it", registered, held)
	}
	if bpf && len(held) == 0 {
		t.Logf("dctcp unregistered by Down: available %v", avail)
	}
}

// connect listens on h2, with congestion control cc if not "", and
// dials it from h1 with h1's default congestion control.
func connect(t *testing.T, h1, h2 testbed.Host, cc string) (net.Conn, *bulk.Receiver) {
	t.Helper()
	ln, err := h2.ListenTCP(0)
	if err != nil {
		t.Fatal(err)
	}
	if cc != "" {
		setConnCC(t, ln.(*net.TCPListener), cc)
	}
	rcv := bulk.Serve(ln)
	t.Cleanup(func() { rcv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := h1.DialTCP(ctx, netip.AddrPortFrom(h2.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port)), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, rcv
}

// control runs fn on c's descriptor.
func control(t *testing.T, c syscall.Conn, fn func(fd int) error) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
}

func setConnCC(t *testing.T, c syscall.Conn, cc string) {
	t.Helper()
	control(t, c, func(fd int) error { return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
}

func congestionControl(t *testing.T, c net.Conn) string {
	t.Helper()
	var cc string
	control(t, c.(syscall.Conn), func(fd int) (err error) {
		cc, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		return err
	})
	return cc
}

func tcpInfo(t *testing.T, c net.Conn) *unix.TCPInfo {
	t.Helper()
	var info *unix.TCPInfo
	control(t, c.(syscall.Conn), func(fd int) (err error) {
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	})
	return info
}

// checkAlphaDecays compares the α the BPF program published for c, a
// connection whose packets no one marked, with Eq. 1 in the program's
// fixed point: from α = 1024/1024, each window subtracts ⌊α/16⌋, and
// takes α to 0 once that rounds to 0 (tcp_dctcp.c's min_not_zero).
func checkAlphaDecays(t *testing.T, c net.Conn) {
	t.Helper()
	s, err := dctcp.ReadStats(c.(syscall.Conn), dctcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Windows == 0 {
		t.Fatalf("α stats %+v: no window completed after 1 MiB", s)
	}
	alpha, sum := uint32(1024), 0.0
	for range s.Windows {
		if alpha>>4 != 0 {
			alpha -= alpha >> 4
		} else {
			alpha = 0
		}
		sum += float64(alpha)
	}
	want := float64(alpha) / 1024
	wantMean := sum / float64(s.Windows) / 1024
	if s.Alpha != want || s.MeanFraction != 0 || !near(s.MeanAlpha, wantMean, 1e-9) {
		t.Errorf("after %d unmarked windows: α %v, mean α %v, mean F %v; want %v, %v, 0",
			s.Windows, s.Alpha, s.MeanAlpha, s.MeanFraction, want, wantMean)
	}
	t.Logf("α after %d unmarked windows: %.4f", s.Windows, s.Alpha)
}

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }

// lockedDCTCPState reads the holders of the BPF dctcp and the kernel's
// available list while holding a shared flock on the pin directory, the
// lock testbed/dctcp documents.
func lockedDCTCPState(t *testing.T) (held, available []string) {
	t.Helper()
	if fd, err := unix.Open(dctcp.DefaultPinDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		defer unix.Close(fd)
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dctcp.DefaultPinDir, "holders"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		held = append(held, e.Name())
	}
	return held, strings.Fields(readSysctl(t, "", "net/ipv4/tcp_available_congestion_control"))
}
