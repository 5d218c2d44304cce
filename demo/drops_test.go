package demo_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// The drop tap tells a marker's drop of the traffic under test from what
// befalls packets no marker judges: an ECT segment overflowing the pool,
// a Not-ECT SYN and a host's MLD report dropped by a marker above K; it
// ignores every event but drops.
func TestDropTap(t *testing.T) {
	var tap demo.DropTap
	drop := func(f []byte, r dataplane.DropReason) {
		d := packettest.Desc(t, f)
		tap.Record(&dataplane.Event{Kind: dataplane.EventDrop, Drop: r, Desc: d, Frame: d.Frame()})
	}
	data := packettest.TCP4(t, packettest.Options{ECN: packet.ECT0, DSCP: 8, Size: 1514})
	syn := packettest.TCP4(t, packettest.Options{DSCP: 8})
	syn[14+20+13] |= 0x02
	ack := packettest.TCP4(t, packettest.Options{DSCP: 8})
	mld := packettest.UDP6(t, packettest.Options{Dst: netip.MustParseAddr("ff02::16")})
	mld[14+6] = 58 // an ICMPv6 next header
	mld2 := packettest.UDP6(t, packettest.Options{Dst: netip.MustParseAddr("ff02::16")})
	mld2[14+6], mld2[14+40] = 0, 58 // an MLD report: hop-by-hop options (router alert), then ICMPv6
	for range 3 {
		drop(data, dataplane.DropPoolFull)
	}
	drop(syn, dataplane.DropEnqueueMarker)
	drop(ack, dataplane.DropDequeueMarker)
	drop(mld, dataplane.DropDequeueMarker)
	drop(mld2, dataplane.DropDequeueMarker)
	d := packettest.Desc(t, data)
	tap.Record(&dataplane.Event{Kind: dataplane.EventEgress, Desc: d, Frame: d.Frame()})

	got := tap.Drops()
	if got.Total() != 7 || got.Overflow(-1) != 3 || got.Overflow(8) != 3 || got.Overflow(0) != 0 || got.NotECT() != 4 {
		t.Errorf("total %d, overflow %d (DSCP 8: %d, DSCP 0: %d), Not-ECT %d; want 7, 3 (3, 0), 4",
			got.Total(), got.Overflow(-1), got.Overflow(8), got.Overflow(0), got.NotECT())
	}
	if got.Marker(demo.KindTCPSYNNotECT) != 1 || got.Marker(demo.KindTCPNotECT) != 1 || got.Marker(demo.KindICMPv6) != 2 {
		t.Errorf("marker drops by kind: SYN %d, TCP %d, ICMPv6 %d; want 1, 1, 2", got.Marker(demo.KindTCPSYNNotECT),
			got.Marker(demo.KindTCPNotECT), got.Marker(demo.KindICMPv6))
	}
	s := got.String()
	for _, want := range []string{"pool_full: 3 TCP ECT", "enqueue_marker: 1 TCP SYN Not-ECT", "dequeue_marker: 1 TCP Not-ECT, 2 ICMPv6 (MLD, ND)"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, want %q in it", s, want)
		}
	}
	if w := got.Sub(got); w.Total() != 0 || w.String() != "none" {
		t.Errorf("d − d = %v", w)
	}
	if w := got.Add(got); w.Total() != 14 {
		t.Errorf("d + d has %d drops, want 14", w.Total())
	}
}
