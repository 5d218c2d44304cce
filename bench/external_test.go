package bench_test

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/internal/nsenter"
	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// extNet is an "external device" made for a test: two veth pairs, whose
// tester ends (gen, sink) are in namespace tester and whose other ends
// are ports of a Linux bridge in namespace dut, both namespaces the
// test's own.
type extNet struct {
	tester, dut string // namespaces
	gen, sink   string // the tester's interfaces
	dutPorts    []string
	bridge      string
}

// newExtNet makes the namespaces, veths and bridge, IPv6 off (so no
// interface sends anything of its own), and removes them in Cleanup.
func newExtNet(tb testing.TB) *extNet {
	tb.Helper()
	testbedtest.SkipIfNotRoot(tb)
	id, err := testbed.RandomID()
	if err != nil {
		tb.Fatal(err)
	}
	p := "ecnx" + id
	n := &extNet{tester: p + "-t", dut: p + "-d", gen: p + "g", sink: p + "s", dutPorts: []string{p + "G", p + "S"}, bridge: p + "br"}
	ip := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{n.tester, n.dut} {
		ip("netns", "add", ns)
		tb.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				tb.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		})
		ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	ip("-n", n.dut, "link", "add", n.bridge, "type", "bridge", "stp_state", "0")
	for i, t := range []string{n.gen, n.sink} {
		ip("-n", n.tester, "link", "add", t, "type", "veth", "peer", "name", n.dutPorts[i], "netns", n.dut)
		ip("-n", n.dut, "link", "set", n.dutPorts[i], "master", n.bridge, "up")
		ip("-n", n.tester, "link", "set", t, "up")
	}
	ip("-n", n.dut, "link", "set", n.bridge, "up")
	return n
}

// dutDrops sums every drop counter of the bridge and its ports.
func (n *extNet) dutDrops(tb testing.TB) uint64 {
	tb.Helper()
	var sum uint64
	err := nsenter.Do(n.dut, func() error {
		for _, name := range append([]string{n.bridge}, n.dutPorts...) {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			st := l.Attrs().Statistics
			sum += st.RxDropped + st.TxDropped + st.RxErrors + st.TxErrors + st.RxMissedErrors
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sum
}

// pathDrops sums what the path counted as dropped outside the bench's
// own counters: the bridge and its ports, and the tester's interfaces
// (a veth counts its peer's full receive queue as its own tx_dropped).
func (n *extNet) pathDrops(tb testing.TB) uint64 {
	tb.Helper()
	return n.dutDrops(tb) + linkDrops(tb, n.tester, n.gen, n.sink)
}

// linkDrops sums the drop and error counters of links in netns, less the
// frames of no protocol a link received (the learning frames the gen
// interface gets back are counted in its rx_dropped).
func linkDrops(tb testing.TB, netns string, links ...string) uint64 {
	tb.Helper()
	var sum uint64
	err := nsenter.Do(netns, func() error {
		for _, name := range links {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			st := l.Attrs().Statistics
			sum += st.TxDropped + st.RxErrors + st.TxErrors + st.RxMissedErrors
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sum
}

// xdpAttached reports whether an XDP program is on any of links.
func xdpAttached(tb testing.TB, netns string, links ...string) bool {
	tb.Helper()
	on := false
	err := nsenter.Do(netns, func() error {
		for _, name := range links {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if x := l.Attrs().Xdp; x != nil && x.Attached {
				on = true
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return on
}

// TestExternalBridge load-tests a Linux bridge in a namespace of its own
// as an external device, between two interfaces of another namespace: no
// testbed, no ecnswitch. One unpaced trial and one paced one, both short,
// with each generator and sink: live frames (the bridge's port takes
// them, GRO on) into the XDP sink, and AF_XDP to AF_XDP. Every frame is
// accounted for: the distinct frames the sink received, plus those
// dropped where a counter says so (the sink's side, the bench counts;
// the bridge, its ports and the veths, this test reads) are the frames
// sent. The report has one row, the external device's; the latencies are
// on one clock; the learning frames taught the bridge where the sink is;
// and no program is left on the interfaces.
func TestExternalBridge(t *testing.T) {
	for _, c := range []struct {
		name, gen, sink string
		gro             bool // on the bridge's port facing the generator: it takes live frames
	}{
		{"live frames to the XDP sink", bench.GeneratorAuto, loadgen.SinkAuto, true},
		{"AF_XDP to AF_XDP", bench.GeneratorAFXDP, loadgen.SinkAFXDP, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newExtNet(t)
			if c.gro {
				if out, err := exec.Command("ip", "netns", "exec", n.dut, "ethtool", "-K", n.dutPorts[0], "gro", "on").CombinedOutput(); err != nil {
					t.Fatalf("ethtool: %v: %s", err, out)
				}
			}
			rep, err := bench.RunSwitch(context.Background(), bench.SwitchOptions{
				External: &bench.External{GenIface: n.gen, SinkIface: n.sink, Netns: n.tester},
				Sizes:    []int{64}, Trial: 200 * time.Millisecond, Drain: time.Second,
				Sweep: []float64{0.2}, Iterations: -1, Flows: 4, Generator: c.gen, Sink: c.sink,
			})
			if err != nil {
				t.Fatal(err)
			}
			wantGen := map[bool]string{true: bench.GeneratorXDP, false: bench.GeneratorAFXDP}[c.gro]
			if rep.Generator != wantGen || (c.sink != loadgen.SinkAuto && rep.Sink != c.sink) || (c.sink == loadgen.SinkAuto && rep.Sink != loadgen.SinkXDP) {
				t.Errorf("generator %s (%s), sink %s (%s): want %s and the sink asked for", rep.Generator, rep.GeneratorNote, rep.Sink, rep.SinkNote, wantGen)
			}
			var sent, counted uint64
			for _, tr := range rep.Trials {
				sent += tr.Sent
				counted += tr.Received + tr.SinkDropped
				// The XDP sink samples 1/64 of the frames: of 1000, none
				// sampled once in 7 million trials.
				sampled := tr.Received < 1000 || (tr.Latency.Count > 0 && tr.Latency.P50 > 0)
				if tr.Device != bench.DeviceExternal || !sampled ||
					tr.Latency.TxClock != loadgen.ClockMonotonic || tr.Latency.RxClock != loadgen.ClockMonotonic || tr.Latency.Negative > 0 {
					t.Errorf("%s trial: %+v: want the external device's, with positive latencies on CLOCK_MONOTONIC", tr.Kind, tr)
				}
				if tr.Kind != "max" && tr.Lost != 0 {
					t.Errorf("%s trial at %.0f pps lost %d of %d frames", tr.Kind, tr.TargetPPS, tr.Lost, tr.Sent)
				}
			}
			drops := n.pathDrops(t)
			if sent == 0 || counted+drops != sent {
				t.Errorf("sent %d; received and dropped at the sink %d, dropped on the path %d: %d frames unaccounted for",
					sent, counted, drops, int64(sent)-int64(counted+drops))
			}
			if len(rep.Results) != 1 || rep.Results[0].Device != bench.DeviceExternal || rep.External == nil ||
				rep.External.Label() != "external device ("+n.gen+" → "+n.sink+")" || !rep.Stamps.OK {
				t.Errorf("results %+v, external %+v, stamps %+v", rep.Results, rep.External, rep.Stamps)
			}
			if md := rep.Markdown(""); !strings.Contains(md, "| 64 B | external device ("+n.gen+" → "+n.sink+") |") {
				t.Errorf("no row for the external device in\n%s", md)
			}
			if !n.learned(t, rep.External.SinkIface.MAC) {
				t.Errorf("the bridge did not learn the sink's MAC %v on %s", rep.External.SinkIface.MAC, n.dutPorts[1])
			}
			if xdpAttached(t, n.tester, n.gen, n.sink) {
				t.Error("an XDP program is still attached")
			}
		})
	}
}

// learned reports whether the bridge has mac in its forwarding database
// on the port facing the sink.
func (n *extNet) learned(tb testing.TB, mac net.HardwareAddr) bool {
	tb.Helper()
	found := false
	err := nsenter.Do(n.dut, func() error {
		l, err := netlink.LinkByName(n.dutPorts[1])
		if err != nil {
			return err
		}
		neighs, err := netlink.NeighList(l.Attrs().Index, unix.AF_BRIDGE)
		for _, nb := range neighs {
			if bytes.Equal(nb.HardwareAddr, mac) {
				found = true
			}
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return found
}

// TestExternalCancel: a run cancelled in its first trial returns, and
// leaves no program on either interface.
func TestExternalCancel(t *testing.T) {
	n := newExtNet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := bench.RunSwitch(ctx, bench.SwitchOptions{
		External: &bench.External{GenIface: n.gen, SinkIface: n.sink, Netns: n.tester},
		Sizes:    []int{64}, Trial: 10 * time.Second,
	})
	if err == nil || ctx.Err() == nil {
		t.Errorf("err %v, context %v: want the run to end with the context", err, ctx.Err())
	}
	if xdpAttached(t, n.tester, n.gen, n.sink) {
		t.Error("an XDP program is still attached")
	}
}
