package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// recorder is a dataplane.Tap that keeps copies of every event.
type recorder struct{ evs []dataplane.Event }

func (r *recorder) Record(ev *dataplane.Event) {
	e := *ev
	e.Frame = append([]byte(nil), ev.Frame...)
	e.Desc = nil
	r.evs = append(r.evs, e)
}

// TestTapSeesMarksAndDrops congests one port and checks that its tap sees
// exactly the egress packets the switch counted as marked, each with CE set
// and the marker's name and threshold, and exactly the counted drops.
func TestTapSeesMarksAndDrops(t *testing.T) {
	const rate, k = 100_000_000, 15_000
	cfg := dataplanetest.Config(3, 1, rate, 60_000)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "dctcp", New: func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, q)
	}}}
	r := dataplanetest.New(t, cfg, memport.Link{Rate: rate})
	var in, out, also recorder
	if err := r.Switch.AddTap(0, &in); err != nil {
		t.Fatal(err)
	}
	if err := r.Switch.AddTap(2, &out); err != nil {
		t.Fatal(err)
	}
	if err := r.Switch.AddTap(2, &also); err != nil {
		t.Fatal(err)
	}
	if r.Switch.AddTap(3, &out) == nil {
		t.Fatal("AddTap on port 3 of 3 succeeded")
	}
	if r.Switch.AddTap(2, &out) == nil {
		t.Fatal("AddTap of a tap the port has succeeded")
	}
	if r.Switch.RemoveTap(1, &out) == nil {
		t.Fatal("RemoveTap of a tap the port does not have succeeded")
	}
	ect := dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1000, ECN: packet.ECT0})
	notECT := dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1000})
	ect1 := dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1000, ECN: packet.ECT1})
	for i := 0; i < 400; i++ {
		r.Send(0, ect)
		if i%2 == 0 {
			r.Send(1, notECT)
		} else {
			r.Send(1, ect1)
		}
	}
	r.Drain(1000)

	st := r.Switch.Stats().Ports[2]
	var marked, dropped, egress int
	for _, e := range out.evs {
		switch e.Kind {
		case dataplane.EventEgress:
			egress++
			d := packettest.Desc(t, e.Frame)
			if (d.ECN == packet.CE) != (e.Marker == "dctcp") {
				t.Fatalf("egress event with ECN %v and marker %q", d.ECN, e.Marker)
			}
			if e.Marker != "" {
				marked++
				if e.Threshold != k || e.Value < k {
					t.Fatalf("marked with value %d against threshold %d; want ≥ %d vs %d", e.Value, e.Threshold, k, k)
				}
			}
			if e.Sojourn < 0 || e.Queue != 0 || e.Port != 2 {
				t.Fatalf("egress event %+v: want queue 0, port 2, a sojourn", e)
			}
		case dataplane.EventDrop:
			dropped++
			if e.Drop == dataplane.DropEnqueueMarker && e.Marker != "dctcp" {
				t.Fatalf("marker drop without the marker's name: %+v", e)
			}
		}
	}
	var drops uint64
	for _, n := range st.Drops {
		drops += n
	}
	if uint64(marked) != st.Queues[0].MarkedEnq || marked == 0 {
		t.Errorf("tap saw %d marked packets, switch counted %d", marked, st.Queues[0].MarkedEnq)
	}
	if uint64(dropped) != drops || st.Drops["enqueue_marker"] == 0 {
		t.Errorf("tap saw %d drops, switch counted %v", dropped, st.Drops)
	}
	if uint64(egress) != st.TxPackets {
		t.Errorf("tap saw %d egress packets, switch sent %d", egress, st.TxPackets)
	}
	if len(in.evs) != 400 || in.evs[0].Kind != dataplane.EventIngress || in.evs[0].Queue != -1 {
		t.Errorf("ingress tap: %d events, first %+v; want 400 ingress events", len(in.evs), in.evs[0])
	}
	// A second tap on the port saw the same events.
	if len(also.evs) != len(out.evs) {
		t.Errorf("two taps on one port saw %d and %d events", len(out.evs), len(also.evs))
	}
	// Removing a tap stops its events, not the other's.
	if err := r.Switch.RemoveTap(2, &out); err != nil {
		t.Fatal(err)
	}
	n, m := len(out.evs), len(also.evs)
	r.Send(0, ect)
	r.Drain(1000)
	if len(out.evs) != n {
		t.Errorf("tap got %d events after it was removed", len(out.evs)-n)
	}
	if len(also.evs) != m+1 {
		t.Errorf("the tap left on the port got %d events for one packet, want 1", len(also.evs)-m)
	}
}

// TestMarksCountedOncePerPacket puts a cut-off marker on both stages and
// sends some packets that arrive CE already: the switch counts a mark only
// where it turned ECT into CE, once per packet, and taps name the stage.
func TestMarksCountedOncePerPacket(t *testing.T) {
	const rate = 100_000_000
	cfg := dataplanetest.Config(3, 1, rate, 1<<20)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	cut := func(stage marking.Stage) dataplane.MarkerSpec {
		return dataplane.MarkerSpec{Name: "k-" + stage.String(), New: func(q int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(5_000)), stage, q)
		}}
	}
	cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{cut(marking.Enqueue)}
	cfg.Ports[2].Dequeue = []dataplane.MarkerSpec{cut(marking.Dequeue)}
	r := dataplanetest.New(t, cfg, memport.Link{Rate: rate})
	var out recorder
	r.Switch.AddTap(2, &out)
	ect := dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1000, ECN: packet.ECT0})
	ce := dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1000, ECN: packet.CE})
	for i := 0; i < 200; i++ {
		r.Send(0, ect)
		r.Send(1, ce)
	}
	r.Drain(1000)
	q := r.Switch.Stats().Ports[2].Queues[0]
	var fromECT, enq, deq int
	for _, e := range out.evs {
		if e.Kind != dataplane.EventEgress || e.Marker == "" {
			continue
		}
		fromECT++
		switch {
		case e.Marker == "k-enqueue" && e.Stage == marking.Enqueue:
			enq++
		case e.Marker == "k-dequeue" && e.Stage == marking.Dequeue:
			deq++
		default:
			t.Fatalf("marker %q reported at stage %v", e.Marker, e.Stage)
		}
	}
	if q.MarkedEnq+q.MarkedDeq != uint64(fromECT) || fromECT == 0 || fromECT > 200 {
		t.Fatalf("marks: enqueue %d + dequeue %d, tap saw %d switch-made marks; want equal, in (0, 200] (only ECT packets)", q.MarkedEnq, q.MarkedDeq, fromECT)
	}
	if uint64(enq) != q.MarkedEnq || uint64(deq) != q.MarkedDeq {
		t.Fatalf("tap stages %d/%d disagree with counters %d/%d", enq, deq, q.MarkedEnq, q.MarkedDeq)
	}
}
