package integration

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// TestLiveFramesToHosts: with GRO on the host ends (testbed's default,
// which lets the switch end take redirected frames), the switch transmits
// to the hosts as XDP live frames. Four TCP flows cross it intact; every
// frame the switch sent to h2 reached h2's interface, less any the device
// refused and counted (xdp_xmit_errors); and the bulk of the frames did go
// out as live frames.
func TestLiveFramesToHosts(t *testing.T) {
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) },
		func(o *testbed.Options) { o.NoHostGRO = false })
	h1, h2 := r.hosts[0], r.hosts[1]
	ln, err := h2.ListenTCP(0)
	if err != nil {
		t.Fatal(err)
	}
	rcv := bulk.Serve(ln)
	defer rcv.Close()
	dst := netip.AddrPortFrom(h2.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))
	link0, port0, xsk0 := hostLinkStats(t, h2), r.port(h2), r.ports[1].Stats()
	res, err := bulk.Sender{Dial: dialer(h1, dst, 0), Flows: 4, Duration: 2 * time.Second}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every flow's EOF at h2", 10*time.Second, func() bool {
		fs := rcv.Flows()
		return len(fs) == 4 && fs[0].Done && fs[1].Done && fs[2].Done && fs[3].Done
	})
	if got := rcv.Bytes(); got != res.Bytes {
		t.Errorf("h2 read %d bytes, h1 wrote %d", got, res.Bytes)
	}
	live := r.ports[1].LiveFrames()
	r.stop()
	link1, port1, xsk1 := hostLinkStats(t, h2), r.port(h2), r.ports[1].Stats()
	sent := port1.TxPackets - port0.TxPackets
	refused := xsk1.TxErrors - xsk0.TxErrors
	got := link1.RxPackets - link0.RxPackets
	t.Logf("%d bytes in %v; switch sent h2 %d frames, %d of them live, %d refused; h2's link received %d",
		res.Bytes, res.Elapsed, sent, live, refused, got)
	if got+refused != sent {
		t.Errorf("h2's link received %d frames and the device refused %d; the switch sent %d", got, refused, sent)
	}
	if live < sent/2 {
		t.Errorf("%d of %d frames went out as live frames; want most (the host end has GRO on)", live, sent)
	}
}
