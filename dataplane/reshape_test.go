package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// cutter is a Reshaper that cuts a refused frame to its first n bytes and
// sends it to queue q, counting the refusals it was offered by reason.
type cutter struct {
	n, q int
	why  map[dataplane.DropReason]int
}

func (c *cutter) Reshape(d *packet.Desc, why dataplane.DropReason) (int, bool) {
	c.why[why]++
	d.Len = min(d.Len, c.n)
	return c.q, true
}

// TestReshapeRefused: a port with a Reshaper carries what its admission
// refuses, as the Reshaper made it: queue 0, capped at 3000 bytes, takes
// three 1000-byte frames of a burst, and every other frame of the burst
// leaves cut to 100 bytes through queue 1, which the buffer charges and
// releases at the cut length, and queue 0 counts them trimmed. A packet an
// enqueue marker drops is offered too, with its reason. Every packet is
// accounted for once.
func TestReshapeRefused(t *testing.T) {
	const rate, n, size, short = 100_000_000, 20, 1000, 100
	for _, c := range []struct {
		name    string
		marker  bool // a marker that drops every Not-ECT packet above 1 byte, instead of the cap
		why     dataplane.DropReason
		whole   int // frames that leave whole
		reasons map[string]uint64
	}{
		{"static cap", false, dataplane.DropStaticCap, 3, map[string]uint64{"static_cap": n - 3}},
		{"enqueue marker", true, dataplane.DropEnqueueMarker, 1, map[string]uint64{"marker": n - 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := dataplanetest.Config(2, 2, rate, 1<<20)
			cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
			cfg.Forwarding.NoLearning = true
			if c.marker {
				cfg.Ports[1].Enqueue = []dataplane.MarkerSpec{{Name: "k1", New: func(q int) (marking.Marker, error) {
					return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(1)), marking.Enqueue, q)
				}}}
			} else {
				cfg.Ports[1].Queues[0] = buffer.QueueConfig{Cap: 3 * size}
			}
			cut := &cutter{n: short, q: 1, why: map[dataplane.DropReason]int{}}
			cfg.Ports[1].Reshape = cut
			r := dataplanetest.New(t, cfg, memport.Link{})
			var frames [][]byte
			for i := range n {
				frames = append(frames, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, SrcPort: uint16(i)}))
			}
			r.Send(0, frames...)
			var got [][]byte
			for range 1000 {
				r.Step(100_000, 10_000)
				got = append(got, r.Recv(1)...)
				if len(got) == n {
					break
				}
			}
			whole := 0
			for _, f := range got {
				switch len(f) {
				case size:
					whole++
				case short:
				default:
					t.Errorf("a frame of %d bytes left, want %d or %d", len(f), size, short)
				}
			}
			if len(got) != n || whole != c.whole {
				t.Errorf("%d frames left, %d whole; want %d, %d whole", len(got), whole, n, c.whole)
			}
			if cut.why[c.why] != n-c.whole || len(cut.why) != 1 {
				t.Errorf("Reshape offered %v, want %d for %v", cut.why, n-c.whole, c.why)
			}
			st := r.Switch.Stats().Ports[1]
			// Counted on the queue that refused them, as SAI counts trims.
			if st.Queues[0].Trimmed != uint64(n-c.whole) || st.Queues[1].Trimmed != 0 || st.Trimmed != uint64(n-c.whole) || st.TrimDropped != 0 {
				t.Errorf("trimmed per queue %d, %d, port %d (%d dropped); want %d, 0, %d (0)",
					st.Queues[0].Trimmed, st.Queues[1].Trimmed, st.Trimmed, st.TrimDropped, n-c.whole, n-c.whole)
			}
			if st.Queues[1].Enqueued != uint64(n-c.whole) {
				t.Errorf("queue 1 took %d, want the %d reshaped", st.Queues[1].Enqueued, n-c.whole)
			}
			for reason, want := range c.reasons {
				if st.Queues[0].Drops[reason] != want {
					t.Errorf("queue 0 refused %v, want %d %s", st.Queues[0].Drops, want, reason)
				}
			}
			if st.TxPackets != n || len(st.Drops) != 0 {
				t.Errorf("port sent %d, dropped %v; want %d sent, none dropped", st.TxPackets, st.Drops, n)
			}
			if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
				t.Errorf("%+v: want balanced, nothing held", a)
			}
			if b := r.Switch.Buffer().PortBytes(1); b != 0 {
				t.Errorf("the buffer holds %d bytes of an idle port", b)
			}
		})
	}
}
