package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// TestOversizeForEgressDropped: a frame larger than the egress device
// sends (its link carries 1000-byte frames, the ingress link 2048) is
// dropped with reason oversize on the egress port, not counted as sent
// and lost inside the device.
func TestOversizeForEgressDropped(t *testing.T) {
	clock := timestamp.NewVirtual(0)
	sw0, h0, err := memport.Pair("a", "host", clock, memport.Link{})
	if err != nil {
		t.Fatal(err)
	}
	sw1, h1, err := memport.Pair("b", "host", clock, memport.Link{FrameSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	s, err := dataplane.New(dataplanetest.Config(2, 1, 0, 1<<20), []ports.Port{sw0, sw1}, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := &dataplanetest.Rig{TB: t, Clock: clock, Switch: s, Hosts: []*memport.Port{h0, h1}, Ports: []*memport.Port{sw0, sw1}}
	r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 1500}), dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 900}))
	r.Step(100_000, 1000)
	st := s.Stats()
	if got := st.Ports[1].Drops["oversize"]; got != 1 {
		t.Errorf("port b: %d oversize drops, want 1 (drops %v)", got, st.Ports[1].Drops)
	}
	if st.Ports[1].TxPackets != 1 {
		t.Errorf("port b: tx_packets %d, want 1: the 900-byte frame only", st.Ports[1].TxPackets)
	}
	if n := sw1.Stats().TxPackets; n != 1 {
		t.Errorf("device b took %d frames, want 1", n)
	}
	if a := s.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("accounting %+v: want balanced and nothing held", a)
	}
}

// TestEmptyArenaDropsCounted: a worker whose every arena frame is held
// (here in a queue that drains at 1 Mbit/s) keeps receiving and drops
// what it cannot hold with reason arena_empty, rather than leaving it in
// the device to be lost there uncounted.
func TestEmptyArenaDropsCounted(t *testing.T) {
	const sent = 200
	cfg := dataplanetest.Config(2, 1, 1_000_000, 1<<22)
	cfg.Frames, cfg.Batch = dataplane.MinFrames, 16
	r := dataplanetest.New(t, cfg, memport.Link{Capacity: 256})
	var frames [][]byte
	for i := range sent {
		frames = append(frames, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 1000, SrcPort: uint16(i)}))
	}
	if n := r.Send(0, frames...); n != sent {
		t.Fatalf("the link took %d of %d frames", n, sent)
	}
	r.Step(100_000, 1000) // 100 passes; 1000-byte frames leave every 8 ms
	if b := r.Backlog(0); b != 0 {
		t.Errorf("%d frames still wait in the device: the worker stopped receiving", b)
	}
	st := r.Switch.Stats()
	a := r.Switch.Account()
	if st.Ports[0].RxPackets != sent {
		t.Errorf("rx_packets %d, want %d", st.Ports[0].RxPackets, sent)
	}
	if got, want := st.Ports[0].Drops["arena_empty"], sent-a.Held-a.Transmitted; got != want || a.Held == 0 || a.Held > dataplane.MinFrames {
		t.Errorf("arena_empty %d with %d held and %d sent; want %d, and at most %d held", got, a.Held, a.Transmitted, want, dataplane.MinFrames)
	}
	if !a.Balanced() {
		t.Errorf("accounting %+v: want balanced", a)
	}
}
