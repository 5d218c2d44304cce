package integration

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestLinkFlapWithTraffic: h1 sends a steady stream of UDP frames to h2
// while h2's link goes down twice and comes back. Every frame is
// accounted for — received by h2, or dropped and counted on the way (by
// the switch with a reason, by the switch port's device, or by the
// kernel before the switch) — and forwarding resumes after each return.
func TestLinkFlapWithTraffic(t *testing.T) {
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) })
	h1, h2 := r.hosts[0], r.hosts[1]
	if got := ping(t, h1, h2.IPv4, 3, 2*time.Second); got != 3 { // both MACs learned
		t.Fatalf("%d of 3 echo replies before the flaps", got)
	}
	// h2's interface counters count what reached it: a capture socket
	// would end at the first link down (ENETDOWN).
	received := func() uint64 { return hostLinkStats(t, h2).RxPackets }
	before, r2 := r.path(h1, h2), received()
	sent, stop := stream(t, h1, h2)
	setLink := func(up bool) {
		err := h2.Do(func() error {
			l, err := netlink.LinkByName(h2.HostIf)
			if err != nil {
				return err
			}
			if up {
				return netlink.LinkSetUp(l)
			}
			return netlink.LinkSetDown(l)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for flap := range 2 {
		time.Sleep(200 * time.Millisecond)
		before := received()
		setLink(false)
		time.Sleep(200 * time.Millisecond)
		setLink(true)
		waitFor(t, "frames to reach h2 after its link returned", 5*time.Second, func() bool {
			return received() > before+100
		})
		t.Logf("flap %d: h2 received %d frames since the link went down", flap, received()-before)
	}
	stop()
	r.quiesce()

	d := r.path(h1, h2).dropsSince(before)
	n := sent()
	got := received() - r2
	t.Logf("sent %d: h2 received %d; dropped %s", n, got, d)
	// h1's own frames (a neighbour solicitation, say) may be among those
	// received or dropped, so the sum may exceed what the test sent by a few.
	if sum := got + d.total(); got > n || sum < n || sum > n+10 {
		t.Errorf("sent %d, accounted for %d: frames lost uncounted, or counted twice", n, sum)
	}
	if d.switchDrops+d.device == 0 {
		t.Errorf("no drop counted while h2's link was down twice for 200 ms under traffic")
	}
	r.stop()
	if a := r.sw.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("packet balance after stop %+v: want balanced, nothing held", a)
	}
}

// stream sends h2 a steady stream of UDP frames from h1, about 20 000 a
// second: a load, and room for h2's receive to keep up. It returns the
// count of frames sent so far and the function that stops the stream.
func stream(t *testing.T, h1, h2 testbed.Host) (sent func() uint64, stop func()) {
	t.Helper()
	frame := packettest.UDP4(t, packettest.Options{
		SrcMAC: packet.MAC(h1.MAC), DstMAC: packet.MAC(h2.MAC), Src: h1.IPv4, Dst: h2.IPv4,
		Size: 200, SrcPort: 7000, DstPort: 7001,
	})
	var fd, ifindex int
	err := h1.Do(func() error {
		ifi, err := net.InterfaceByName(h1.HostIf)
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatalf("host %s: AF_PACKET socket: %v", h1.Name, err)
	}
	var n atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		to := &unix.SockaddrLinklayer{Ifindex: ifindex}
		for {
			select {
			case <-quit:
				return
			default:
			}
			for range 10 {
				if unix.Sendto(fd, frame, 0, to) == nil {
					n.Add(1)
				}
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			<-done
			unix.Close(fd)
		})
	}
	t.Cleanup(stop)
	return n.Load, stop
}

// TestSwitchEndDownWithTraffic: the switch's own end of h2's link goes
// administratively down under traffic, twice. While it is down, the port
// takes no frame past the transmit call that found it down: the switch
// drops the rest at once, counted as tx_error, instead of filling the TX
// ring with frames that would leave late. Forwarding resumes when
// the link returns. The switch stops with the link down, and the frames
// the downed link holds count as at rest. Every frame is accounted for.
func TestSwitchEndDownWithTraffic(t *testing.T) {
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) })
	h1, h2 := r.hosts[0], r.hosts[1]
	if got := ping(t, h1, h2.IPv4, 3, 2*time.Second); got != 3 { // both MACs learned
		t.Fatalf("%d of 3 echo replies before the link went down", got)
	}
	// The most frames one transmit call offers: the staged list of four
	// passes' batches.
	const oneCall = 4 * dataplane.DefaultBatch
	sw, err := netlink.LinkByName(h2.SwitchIf)
	if err != nil {
		t.Fatal(err)
	}
	setLink := func(up bool) {
		t.Helper()
		set := netlink.LinkSetDown
		if up {
			set = netlink.LinkSetUp
		}
		if err := set(sw); err != nil {
			t.Fatalf("set %s up=%v: %v", h2.SwitchIf, up, err)
		}
	}
	t.Cleanup(func() { netlink.LinkSetUp(sw) })
	received := func() uint64 { return hostLinkStats(t, h2).RxPackets }
	before, r2 := r.path(h1, h2), received()
	sent, stop := stream(t, h1, h2)
	// Once the link is down, a transmit call finds it so and keeps its
	// frames (the one that was under way when it went down may have sent
	// its own), and after that call (the switch counts its first tx_error
	// drop) the device takes nothing.
	downFor := func() {
		t.Helper()
		setLink(false)
		down := r.port(h2)
		var found dataplane.PortStats
		waitFor(t, "a tx_error drop once the switch end is down", 5*time.Second, func() bool {
			found = r.port(h2)
			return found.Drops["tx_error"] > down.Drops["tx_error"]
		})
		if held := found.Device.TxPackets - down.Device.TxPackets; held > 2*oneCall {
			t.Errorf("the device took %d frames after its link went down; want at most two calls' (%d)", held, 2*oneCall)
		}
		waitFor(t, "500 more tx_error drops", 5*time.Second, func() bool {
			return r.port(h2).Drops["tx_error"] > found.Drops["tx_error"]+500
		})
		after := r.port(h2)
		taken := after.Device.TxPackets - found.Device.TxPackets
		t.Logf("down: after the first tx_error drop the device took %d frames, the switch dropped %d", taken, after.Drops["tx_error"]-found.Drops["tx_error"])
		if taken != 0 {
			t.Errorf("the device took %d frames after its link was found down; want none", taken)
		}
	}
	for flap := range 2 {
		time.Sleep(100 * time.Millisecond)
		downFor()
		before := received()
		setLink(true)
		waitFor(t, "frames to reach h2 after the switch end returned", 5*time.Second, func() bool {
			return received() > before+100
		})
		t.Logf("flap %d: h2 received %d frames since the link returned", flap, received()-before)
	}
	downFor()
	stop()
	r.quiesce()
	d := r.path(h1, h2).dropsSince(before)
	r.stop() // with the link down
	held := r.frames[1]
	if !held.LinkDown || !held.AtRest() || held.Tx > oneCall {
		t.Errorf("frames of the downed port at stop %+v: want the link down, at rest, at most %d held", held, oneCall)
	}
	n := sent()
	got := received() - r2
	t.Logf("sent %d: h2 received %d; dropped %s; %d held by the downed link", n, got, d, held.Tx)
	if sum := got + d.total() + uint64(held.Tx); got > n || sum < n || sum > n+10 {
		t.Errorf("sent %d, accounted for %d: frames lost uncounted, or counted twice", n, sum)
	}
	if a := r.sw.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("packet balance after stop %+v: want balanced, nothing held", a)
	}
}

// pathCounters are the counters along h1 → switch → h2 at one instant:
// both switch ports and h1's host end.
type pathCounters struct {
	p1, p2 dataplane.PortStats
	l1     netlink.LinkStatistics
}

// path reads the counters along h1 → switch → h2.
func (r *rig) path(h1, h2 testbed.Host) pathCounters {
	return pathCounters{p1: r.port(h1), p2: r.port(h2), l1: hostLinkStats(r.t, h1)}
}

// pathDrops are the frames dropped on the way from h1 to h2, by where.
type pathDrops struct {
	switchDrops uint64 // by the switch, with a reason, on either port
	device      uint64 // by h2's port's device (TX errors)
	kernel      uint64 // by the kernel below h1's port (no fill frame, ring full, too large)
	veth        uint64 // by h1's veth
	h2Drops     map[string]uint64
}

// dropsSince returns the drops between snapshot a and c.
func (c pathCounters) dropsSince(a pathCounters) pathDrops {
	delta := func(a, b map[string]uint64) (n uint64) {
		for k, v := range b {
			n += v - a[k]
		}
		return n
	}
	return pathDrops{
		switchDrops: delta(a.p1.Drops, c.p1.Drops) + delta(a.p2.Drops, c.p2.Drops),
		device:      c.p2.Device.TxErrors - a.p2.Device.TxErrors,
		kernel:      (c.p1.Device.RxDropped + c.p1.Device.RxOversize) - (a.p1.Device.RxDropped + a.p1.Device.RxOversize),
		veth:        c.l1.TxDropped - a.l1.TxDropped,
		h2Drops:     c.p2.Drops,
	}
}

func (d pathDrops) total() uint64 { return d.switchDrops + d.device + d.kernel + d.veth }

func (d pathDrops) String() string {
	return fmt.Sprintf("by the switch %d (h2's port %v), by h2's port's device %d, by the kernel %d (socket) + %d (veth)",
		d.switchDrops, d.h2Drops, d.device, d.kernel, d.veth)
}
