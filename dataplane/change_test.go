package dataplane_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// spy is a chain member that passes every packet and records the queue
// each one found, in the order they came.
type spy struct{ found *[]int64 }

func (s spy) Mark(v *marking.View) marking.Verdict {
	*s.found = append(*s.found, v.QueueBytes)
	return marking.Pass
}
func (spy) Needs() marking.Need { return 0 }

// egress records, in order, whether each departing packet was CE and the
// number it carries.
type egress struct {
	ce  []bool
	seq []uint16
}

func (e *egress) Record(ev *dataplane.Event) {
	if ev.Kind == dataplane.EventEgress {
		e.ce = append(e.ce, packet.ECN(ev.Frame[15]&3) == packet.CE)
		e.seq = append(e.seq, binary.BigEndian.Uint16(ev.Frame[34:36]))
	}
}

// TestSetMarkersUnderTraffic changes a port's K while its queue grows:
// every packet before the change is marked exactly when the queue it
// found was at least the old K, every packet from the next one on exactly
// when it was at least the new K, no packet is lost or counted twice,
// and the marker's counters carry across the change.
func TestSetMarkersUnderTraffic(t *testing.T) {
	const (
		rate   = 100_000_000 // 80 µs a 1000-byte frame
		size   = 1000
		every  = 53_000     // ns between arrivals: 1.5 times the line
		change = 8_000_000  // ns: the queue holds about 50 KB then
		end    = 16_000_000 // about 100 KB
		k1     = 30_000
		k2     = 60_000
	)
	var found []int64
	chain := func(k int64) []dataplane.MarkerSpec {
		return []dataplane.MarkerSpec{
			{Name: "red", New: func(q int) (marking.Marker, error) {
				return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, q)
			}},
			{Name: "spy", New: func(int) (marking.Marker, error) { return spy{&found}, nil }},
		}
	}
	cfg := dataplanetest.Config(2, 1, rate, 4<<20)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	cfg.Forwarding.NoLearning = true
	cfg.Ports[1].Enqueue = chain(k1)
	r := dataplanetest.New(t, cfg, memport.Link{})
	out := &egress{}
	r.Switch.AddTap(1, out)
	var sent, before int
	for now := int64(0); now < end; now += every {
		r.Clock.Set(now)
		if now >= change && before == 0 {
			before = sent
			if err := r.Switch.SetMarkers(context.Background(), 1, marking.Enqueue, chain(k2)); err != nil {
				t.Fatal(err)
			}
		}
		r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, SrcPort: uint16(sent)}))
		sent++
		r.Switch.Poll()
		r.Recv(1)
	}
	r.Drain(10_000)
	if len(found) != sent || len(out.ce) != sent {
		t.Fatalf("sent %d, the markers saw %d, %d left: want all of them once", sent, len(found), len(out.ce))
	}
	var marks, flips int
	for i := range sent {
		if out.seq[i] != uint16(i) {
			t.Fatalf("packet %d left as number %d", out.seq[i], i)
		}
		k := int64(k1)
		if i >= before {
			k = k2
		}
		if want := found[i] >= k; out.ce[i] != want {
			t.Errorf("packet %d (sent before the change: %v) found %d bytes: CE %v, want %v (K = %d)", i, i < before, found[i], out.ce[i], want, k)
		}
		if out.ce[i] {
			marks++
		}
		if i >= before && found[i] >= k1 && found[i] < k2 {
			flips++ // marked under the old K, not under the new one
		}
	}
	if flips == 0 || marks == 0 {
		t.Fatalf("%d packets between the two Ks after the change, %d marks: the test shows nothing", flips, marks)
	}
	st := r.Switch.Stats().Ports[1]
	if st.Queues[0].MarkedEnq != uint64(marks) || st.TxPackets != uint64(sent) || len(st.Drops) != 0 {
		t.Errorf("port counted %d marks, sent %d, dropped %v; want %d, %d, none", st.Queues[0].MarkedEnq, st.TxPackets, st.Drops, marks, sent)
	}
	if len(st.Markers) != 2 || st.Markers[0].Name != "red" || st.Markers[0].Marks != uint64(marks) {
		t.Errorf("marker counts %+v; want red's %d marks across the change", st.Markers, marks)
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("%+v: want balanced, nothing held", a)
	}
}

// TestChangesOfARunningSwitch: while the switch runs, its worker applies
// each change between two passes and the caller gets its result: a
// queue's new weight, a port's new rate, a queue's new α and chain, and
// the errors of bad values, named as a Config's are.
func TestChangesOfARunningSwitch(t *testing.T) {
	cfg := dataplanetest.Config(2, 2, 100_000_000, 1<<20)
	r := dataplanetest.New(t, cfg, memport.Link{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Switch.Run(ctx) }()
	var stopped error
	stop := func() {
		if cancel != nil {
			cancel()
			cancel, stopped = nil, <-done
		}
	}
	t.Cleanup(stop)
	sw := r.Switch
	if err := sw.SetQueue(ctx, 1, 1, scheduler.QueueConfig{Weight: 4}); err != nil {
		t.Fatal(err)
	}
	if err := sw.SetShaper(ctx, 1, 1_000_000_000, 5000); err != nil {
		t.Fatal(err)
	}
	if err := sw.SetAlpha(ctx, 1, 0, 0.5); err != nil {
		t.Fatal(err)
	}
	spec := []dataplane.MarkerSpec{{Name: "k", New: func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(1000)), marking.Dequeue, q)
	}}}
	if err := sw.SetMarkers(ctx, 1, marking.Dequeue, spec); err != nil {
		t.Fatal(err)
	}
	if m := sw.Stats().Ports[1].Markers; len(m) != 1 || m[0].Name != "k" {
		t.Errorf("markers after the change %+v", m)
	}
	for name, err := range map[string]error{
		"weight":       sw.SetQueue(ctx, 1, 1, scheduler.QueueConfig{Weight: scheduler.MaxWeight + 1}),
		"rate":         sw.SetShaper(ctx, 1, -1, 0),
		"alpha":        sw.SetAlpha(ctx, 1, 0, 0),
		"port":         sw.SetShaper(ctx, 2, 1, 0),
		"marker stage": sw.SetMarkers(ctx, 1, marking.Enqueue, spec), // a dequeue marker at enqueue
	} {
		if err == nil {
			t.Errorf("a bad %s was taken", name)
		}
	}
	if err := sw.SetAlpha(ctx, 1, 0, 0); !errors.Is(err, buffer.ErrConfig) {
		t.Errorf("alpha 0: %v, want a buffer config error", err)
	}
	stop()
	if stopped != nil {
		t.Fatal(stopped)
	}
	// Stopped: a change applies at once.
	if err := sw.SetQueue(context.Background(), 1, 0, scheduler.QueueConfig{Weight: 2}); err != nil {
		t.Fatal(err)
	}
}
