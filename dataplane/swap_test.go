package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// TestSwappingPorts: ports that exchange buffers with the switch instead
// of copying frames (as AF_XDP ports sharing the switch's UMEM do; here
// memport's Link.Swap) carry every frame intact, through queues that mark
// and drop, round after round, so that buffers handed back and forth are
// never held twice: each frame leaves with its own payload, once, or is
// counted as dropped.
func TestSwappingPorts(t *testing.T) {
	const rate, size, n = 100_000_000, 800, 300
	cfg := dataplanetest.Config(3, 1, rate, 100_000)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	cfg.Forwarding.NoLearning = true
	cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "k", New: func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(20_000)), marking.Enqueue, q)
	}}}
	r := dataplanetest.New(t, cfg, memport.Link{Swap: true})
	sent := map[uint32][]byte{} // by number: the payload
	next := uint32(0)
	frame := func(from int) []byte {
		f := dataplanetest.Frame(t, from, 2, packettest.Options{Size: size, ECN: packet.ECT0})
		binary.BigEndian.PutUint32(f[42:], next)
		for i := 46; i < len(f); i++ {
			f[i] = byte(next) ^ byte(i)
		}
		sent[next] = append([]byte(nil), f[42:]...)
		next++
		return f
	}
	got := map[uint32]bool{}
	for round := range 3 {
		var a, b [][]byte
		for range n {
			a, b = append(a, frame(0)), append(b, frame(1))
		}
		r.Send(0, a...)
		r.Send(1, b...)
		for range 2000 {
			r.Step(10_000, 1_000)
			for _, f := range r.Recv(2) {
				num := binary.BigEndian.Uint32(f[42:])
				want, ok := sent[num]
				// The IP header's ECN bits and checksum change with a mark;
				// the payload never does.
				if !ok || got[num] || !bytes.Equal(f[42:], want) {
					t.Fatalf("round %d: frame %d left damaged or twice (seen before: %v)", round, num, got[num])
				}
				got[num] = true
			}
			if r.Switch.Account().Held == 0 && r.Backlog(0) == 0 && r.Backlog(1) == 0 {
				break
			}
		}
	}
	st := r.Switch.Stats().Ports[2]
	var drops uint64
	for _, d := range st.Drops {
		drops += d
	}
	if uint64(len(got))+drops != uint64(next) || drops == 0 || st.Queues[0].MarkedEnq == 0 {
		t.Errorf("sent %d: %d arrived, %d dropped, %d marked; want every frame accounted for, with drops and marks", next, len(got), drops, st.Queues[0].MarkedEnq)
	}
	for i, p := range r.Ports {
		if p.Swapped() == 0 {
			t.Errorf("switch port %d exchanged no buffer: the test ran on copies", i)
		}
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("%+v: want balanced, nothing held", a)
	}
}
