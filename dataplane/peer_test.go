package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// coupled is a dequeue marker of queue 1 that reads queue 0 beside it, as
// a DualQ's L queue reads its C queue; it records what it saw.
type coupled struct{ seen []marking.View }

func (c *coupled) Mark(v *marking.View) marking.Verdict {
	c.seen = append(c.seen, *v)
	return marking.Pass
}
func (c *coupled) Needs() marking.Need { return marking.NeedPeer }
func (c *coupled) Peer(q int) int {
	if q == 1 {
		return 0
	}
	return -1
}

// TestPeerView: a marker that names a peer queue (marking.Peerer) sees,
// for each packet of its own queue, the peer's backlog and the sojourn of
// its head packet at that instant; packets of a queue without a peer see
// none. Queue 0 holds a 10-packet burst that arrived at t = 0 behind
// queue 1 (strict priority serves the higher index first), so a packet of
// queue 1 dequeued at t finds the burst with the head's sojourn t.
func TestPeerView(t *testing.T) {
	const rate, size = 100_000_000, 1000
	cfg := dataplanetest.Config(3, 2, rate, 1<<20)
	cfg.Ports[2].Scheduler.Kind = scheduler.SP // queue 1 first, queue 0 waits
	cfg.Classifier.DSCP = map[uint8]int{10: 1, 0: 0}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	cfg.Forwarding.NoLearning = true
	m := &coupled{}
	cfg.Ports[2].Dequeue = []dataplane.MarkerSpec{{Name: "coupled", New: func(int) (marking.Marker, error) { return m, nil }}}
	r := dataplanetest.New(t, cfg, memport.Link{})
	var c, l [][]byte
	for i := range 10 {
		c = append(c, dataplanetest.Frame(t, 1, 2, packettest.Options{Size: size, SrcPort: uint16(i)}))
	}
	for i := range 6 { // the token bucket lets the first three leave at once
		l = append(l, dataplanetest.Frame(t, 0, 2, packettest.Options{Size: size, DSCP: 10, SrcPort: uint16(100 + i)}))
	}
	r.Send(1, c...)
	r.Send(0, l...)
	r.Switch.Poll() // at t = 0: both bursts arrive; strict queue 0 goes first
	r.Drain(1000)
	if len(m.seen) != 16 {
		t.Fatalf("the marker saw %d packets, want 16", len(m.seen))
	}
	waited := false // a packet of queue 1 saw the peer's head wait
	for i, v := range m.seen {
		waited = waited || v.Queue == 1 && v.PeerSojourn > 0
		switch {
		case v.Queue == 1:
			// The first C packet may have left before the L burst was
			// classified: the C queue holds 10 or 9 then.
			if v.PeerQueue != 0 || v.PeerPackets < 9 || v.PeerBytes != v.PeerPackets*size || v.PeerSojourn != v.Now {
				t.Errorf("packet %d of queue 1 at %d saw peer %d: %d packets, %d bytes, head sojourn %d; want queue 0's burst, sojourn %d",
					i, v.Now, v.PeerQueue, v.PeerPackets, v.PeerBytes, v.PeerSojourn, v.Now)
			}
		case v.PeerQueue != -1 || v.PeerBytes != 0 || v.PeerSojourn != 0:
			t.Errorf("packet %d of queue %d saw peer %d (%d bytes, sojourn %d); want none", i, v.Queue, v.PeerQueue, v.PeerBytes, v.PeerSojourn)
		}
	}
	if m.seen[0].Queue != 1 || m.seen[len(m.seen)-1].Queue != 0 || !waited {
		t.Errorf("queue %d served first, queue %d last, a peer head seen waiting: %v; want 1, 0, true",
			m.seen[0].Queue, m.seen[len(m.seen)-1].Queue, waited)
	}
}
