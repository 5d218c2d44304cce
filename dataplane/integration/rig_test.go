package integration

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// poolSize is the shared pool of the default configuration: deep enough
// that nothing but a test's own bottleneck port ever drops.
const poolSize = 4 << 20

// rig is ecnswitch running on a testbed: ports[i] drives hosts[i].SwitchIf,
// and switch port i is host i+1's port.
type rig struct {
	t     *testing.T
	tb    *testbed.Testbed
	hosts []testbed.Host
	ports []*afxdp.Port
	sw    *dataplane.Switch

	cancel  context.CancelFunc
	done    chan error
	stopped bool
	frames  []afxdp.FrameAccount // at stop, before Close
}

// withIPv6 gives every host an IPv6 address too.
func withIPv6(o *testbed.Options) { o.IPv6 = true }

// baseConfig is one port per host, each with nq DWRR queues of equal
// quantum, unshaped and unmarked, over one deep pool; one worker in the
// bounded-spin-then-wait mode (the machine has two cores).
func baseConfig(hosts []testbed.Host, nq int) dataplane.Config {
	cfg := dataplane.Config{
		Pools:   []buffer.PoolConfig{{Size: poolSize}},
		Workers: 1,
		Spin:    256,
	}
	for _, h := range hosts {
		qs := make([]buffer.QueueConfig, nq)
		for q := range qs {
			qs[q] = buffer.QueueConfig{Cap: poolSize}
		}
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name:      h.SwitchIf,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: nq},
			Queues:    qs,
		})
	}
	return cfg
}

// newRig brings up a testbed of n hosts (removed in t.Cleanup), sets their
// opens an AF_XDP port on
// every switch end and runs a switch configured by config over them until
// the test ends or stop is called.
func newRig(t *testing.T, n int, config func([]testbed.Host) dataplane.Config, opts ...testbedtest.Option) *rig {
	t.Helper()
	// Host ends without GRO by default: the tests compare what a capture
	// on a host sees (after GRO) with what the switch sent, frame for
	// frame. The switch then transmits to the hosts through its sockets;
	// TestLiveFramesToHosts covers the live-frames path.
	opts = append([]testbedtest.Option{func(o *testbed.Options) { o.NoHostGRO = true }}, opts...)
	tbd := testbedtest.New(t, n, opts...)
	r := &rig{t: t, tb: tbd, hosts: tbd.Hosts()}
	cfg := config(r.hosts)
	// One UMEM for the ports and the switch's arena, as node.Open makes it:
	// frames move from port to port without a copy.
	ifaces := make([]string, n)
	xopts := make([]afxdp.Options, n)
	for i, h := range r.hosts {
		ifaces[i] = h.SwitchIf
	}
	umem, err := afxdp.NewSwitchUMEM(ifaces, xopts, max(cfg.Workers, 1)*cmp.Or(cfg.Frames, dataplane.DefaultFrames))
	if err != nil || umem == nil {
		t.Fatalf("UMEM for the switch: %v, %v", umem, err)
	}
	t.Cleanup(func() { umem.Close() }) // runs after r.stop, registered later
	cfg.Memory = umem
	devs := make([]ports.Port, 0, n)
	for i, h := range r.hosts {
		p, err := afxdp.Open(h.SwitchIf, xopts[i])
		if err != nil {
			for _, p := range r.ports {
				p.Close()
			}
			t.Fatalf("open AF_XDP port on %s: %v", h.SwitchIf, err)
		}
		r.ports = append(r.ports, p)
		devs = append(devs, p)
	}
	sw, err := dataplane.New(cfg, devs, timestamp.NewMonotonic(), nil)
	if err != nil {
		for _, p := range r.ports {
			p.Close()
		}
		t.Fatalf("dataplane.New: %v", err)
	}
	r.sw = sw
	// The worker keeps its P while it sleeps: the hosts' TCP goroutines
	// of this process need theirs (see dataplane.Switch.Run).
	if need := runtime.NumCPU() + sw.Workers(); runtime.GOMAXPROCS(0) < need {
		old := runtime.GOMAXPROCS(need)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- sw.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// dialTCP connects from h to dst with DSCP dscp and switches the
// connection to cubic. BBR (v1), this machine's default, ignores ECN marks;
// the papers' hosts run ECN-enabled loss-based TCP (001 §2.2: "ECN-enabled
// TCP that halves its window"; DCTCP is not built into this kernel).
// testbed.Up already makes cubic every host's default
// (Options.CongestionControl); setting it per socket too (TCP_CONGESTION,
// which root may set to any algorithm) keeps these tests independent of
// that default.
func dialTCP(tb testing.TB, h testbed.Host, dst netip.AddrPort, dscp uint8) net.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialer(h, dst, dscp)(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// dialer returns a bulk.Sender's Dial function for flows from h to dst
// with DSCP dscp and cubic congestion control (see dialTCP).
func dialer(h testbed.Host, dst netip.AddrPort, dscp uint8) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		c, err := h.DialTCP(ctx, dst, dscp)
		if err != nil {
			return nil, err
		}
		if err := setCongestion(c, "cubic"); err != nil {
			c.Close()
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		return c, nil
	}
}

// setCongestion sets a TCP connection's congestion control algorithm.
func setCongestion(c net.Conn, name string) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("set congestion control: %T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set congestion control %s: %w", name, serr)
	}
	return nil
}

// stop stops the switch, records where every UMEM frame is, closes the
// ports and checks that no XDP program is left on any switch interface.
// It is idempotent and runs in t.Cleanup.
func (r *rig) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("switch Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		r.t.Fatal("switch Run did not return within 10 s of its context being cancelled")
	}
	// Run has returned, so this goroutine now owns the ports. Reap the last
	// completions and wait until the kernel holds no frame between rings.
	r.frames = make([]afxdp.FrameAccount, len(r.ports))
	for i, p := range r.ports {
		r.frames[i] = p.Settle(2 * time.Second)
	}
	// Every frame moved between the ports and the switch's arena by
	// exchange, never by copy: they share one UMEM.
	for i, p := range r.ports {
		qs, err := p.QueueStats()
		if err != nil {
			r.t.Errorf("%s queue stats: %v", r.hosts[i].SwitchIf, err)
			continue
		}
		for _, q := range qs {
			if q.RxCopied != 0 || q.TxCopied != 0 {
				r.t.Errorf("%s queue %d: %d received and %d transmitted frames copied; want all exchanged (shared UMEM)",
					r.hosts[i].SwitchIf, q.Queue, q.RxCopied, q.TxCopied)
			}
		}
	}
	if err := r.sw.Close(); err != nil {
		r.t.Errorf("switch Close: %v", err)
	}
	for _, h := range r.hosts {
		if id, mode := xdpAttached(r.t, h.SwitchIf); id != 0 {
			r.t.Errorf("after Close, %s still has XDP program %d attached (mode %d)", h.SwitchIf, id, mode)
		}
	}
}

// xdpAttached returns the ID and attach mode of the XDP program on ifname
// as netlink reports it (IFLA_XDP), or 0 when none is attached.
func xdpAttached(tb testing.TB, ifname string) (id uint32, mode uint32) {
	tb.Helper()
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		tb.Fatalf("look up %s: %v", ifname, err)
	}
	x := l.Attrs().Xdp
	if x == nil || !x.Attached {
		return 0, 0
	}
	return x.ProgId, x.AttachMode
}

// netnsExists reports whether the named network namespace is mounted.
func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

// hostLinkStats returns the counters of the host's interface, read in its
// namespace.
func hostLinkStats(tb testing.TB, h testbed.Host) netlink.LinkStatistics {
	tb.Helper()
	var st netlink.LinkStatistics
	err := h.Do(func() error {
		nh, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer nh.Close()
		l, err := nh.LinkByName(h.HostIf)
		if err != nil {
			return err
		}
		if s := l.Attrs().Statistics; s != nil {
			st = *s
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("host %s: link statistics: %v", h.Name, err)
	}
	return st
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quiesce waits until the switch has been idle for 100 ms — no packet
// buffered, no counter moving — so that counters read next are final. It
// reads Stats, whose counters are atomics; Account is only exact (and
// race-free) once Run has returned.
func (r *rig) quiesce() {
	r.t.Helper()
	type snap struct{ rx, tx, drops, buffered uint64 }
	read := func() snap {
		var s snap
		for _, p := range r.sw.Stats().Ports {
			s.rx += p.RxPackets
			s.tx += p.TxPackets
			s.buffered += uint64(p.Packets)
			for _, n := range p.Drops {
				s.drops += n
			}
		}
		return s
	}
	last, stable := read(), 0
	waitFor(r.t, "the switch to drain", 10*time.Second, func() bool {
		s := read()
		if s == last && s.buffered == 0 {
			stable++
		} else {
			stable = 0
		}
		last = s
		return stable >= 10
	})
}

// port returns the switch's counters of host h's port.
func (r *rig) port(h testbed.Host) dataplane.PortStats {
	return r.sw.Stats().Ports[h.Index-1]
}
