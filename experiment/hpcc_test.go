package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// A short run of each congestion control through the INT port on the
// demo's testbed: both flows deliver, the port adds a record to their
// data and the tap reads them back, HPCC's window moved on the records,
// and DCTCP saw the port's marks. Rates and queues are not asserted.
func TestHPCCFlowsThroughSwitch(t *testing.T) {
	o := demo.Options{Classes: []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, Rate: hpccRate, K: hpccK, Coalesce: hpccCoalesce, WorkerRX: true}
	b := testBed(t, o)
	for _, cc := range hpccKinds {
		r, err := runHPCCFlows(context.Background(), b, cc, hpccTimes{200 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s: %v", cc, err)
		}
		if len(r.senders) != 2 || r.records == 0 || len(r.q) == 0 || r.join < 0 {
			t.Fatalf("%s: %d senders, %d records added, %d tapped in the window, join bin %d", cc, len(r.senders), r.records, len(r.q), r.join)
		}
		if testing.Verbose() {
			t.Logf("%s: busy %.3f, drops %d, marks %d, median queue %d B", cc, r.busy, r.drops, r.marks, quantile(r.q, 0.5))
		}
		for i, s := range r.senders {
			if s.Acked == 0 || s.Malformed != 0 {
				t.Errorf("%s flow %d: %+v", cc, i+1, s)
			}
		}
		if cc == transport.KindHPCC && (len(r.window) != 2 || r.u[0] == 0) {
			t.Errorf("hpcc: windows %v, U %v: HPCC read no record", r.window, r.u)
		}
		if cc == transport.KindDCTCP && r.senders[0].Marks == 0 && r.senders[1].Marks == 0 && r.marks > 0 {
			t.Errorf("dctcp: the port marked %d packets, no echo reached the senders", r.marks)
		}
	}
}

// TestIntData reads the flow and this hop's queue off a frame as the
// bottleneck sends it: INT headers, one record, transport/udp's data.
func TestIntData(t *testing.T) {
	h, _ := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, 1)
	h.Length += 6
	h.RemainingHops = 0
	pl := make([]byte, intmd.HeaderLen+24+udp.HeaderLen)
	h.Put(pl)
	pl[intmd.HeaderLen+1], pl[intmd.HeaderLen+2], pl[intmd.HeaderLen+3] = 0, 0x30, 0x39 // 12345 bytes queued
	(&udp.Header{Type: udp.TypeData, Flow: 2, Seq: 9}).Put(pl[intmd.HeaderLen+24:])
	f := packettest.UDP4(t, packettest.Options{DstPort: hpccPort, Payload: pl})
	if flow, q, ok := intData(f); !ok || flow != 2 || q != 12345 {
		t.Errorf("intData = %d, %d, %v; want 2, 12345, true", flow, q, ok)
	}
	(&udp.Header{Type: udp.TypeAck, Flow: 2}).Put(pl[intmd.HeaderLen+24:])
	if _, _, ok := intData(packettest.UDP4(t, packettest.Options{Payload: pl})); ok {
		t.Error("intData took an ACK for data")
	}
	if _, _, ok := intData(f[:50]); ok {
		t.Error("intData took a truncated frame")
	}
}

// Convergence counts from the join to the first of hpccHold bins in a
// row at Jain's index ≥ 0.9; never when the flows stay apart.
func TestConvergence(t *testing.T) {
	b := [2][]int64{
		{10, 10, 10, 9, 8, 5, 5, 5, 5, 5, 5, 9, 5, 5, 5, 5, 5},
		{0, 0, 0, 1, 1, 5, 5, 5, 5, 1, 5, 1, 5, 5, 5, 5, 5},
	}
	// Join at bin 3; bins 5–8 fair, 9 not, 10 fair, 11 not, 12–16 fair.
	if got := convergence(b, 3); got != 9*hpccBin {
		t.Errorf("convergence = %v, want %v (bin 12, 9 bins after the join)", got, 9*hpccBin)
	}
	if got := convergence([2][]int64{{10, 10}, {0, 1}}, 1); got != -1 {
		t.Errorf("never converging: %v, want -1", got)
	}
	if j := jain(1, 1); j != 1 {
		t.Errorf("jain(1, 1) = %g", j)
	}
	if j := jain(1, 0); j != 0.5 {
		t.Errorf("jain(1, 0) = %g", j)
	}
}

// The claims follow the runs: an HPCC queue near zero at 95% busy,
// converging as fast as DCTCP, holds every claim; one that never
// converges fails the convergence claim; the report renders.
func TestHPCCClaims(t *testing.T) {
	mk := func(cc transport.Kind, q int64, busy float64, conv time.Duration) []*hpccRun {
		var rs []*hpccRun
		for i := range hpccRuns {
			r := &hpccRun{cc: cc, run: i + 1, busy: busy, converged: conv, jain: 0.99, join: 0, goodput: [2]float64{1e8, 1e8}}
			for k := range 100 {
				r.q = append(r.q, q+int64(k))
				r.sojourn = append(r.sojourn, q*30)
				r.qAt = append(r.qAt, int64(k)*1000)
			}
			r.bins = [2][]int64{{1, 2, 3}, {0, 2, 3}}
			r.window, r.u = []float64{3, 3}, []float64{0.95, 0.95}
			r.senders = []udp.SenderStats{{Sent: 1}, {Sent: 1}}
			rs = append(rs, r)
		}
		return rs
	}
	runs := append(mk(transport.KindHPCC, 500, 0.95, 40*time.Millisecond), mk(transport.KindDCTCP, 30_000, 0.99, 60*time.Millisecond)...)
	rep, err := hpccReport(Env{Command: "test"}, demo.Options{Rate: hpccRate, Buffer: demo.DefaultBuffer}, time.Second, time.Second, runs, machine{load0: 1, load1: 2, pressure: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Claims {
		if !c.Holds() {
			t.Errorf("%s: does not hold (ours %s, rule %s)", c.What, c.Ours, c.Rule)
		}
	}
	for _, r := range runs[:hpccRuns] {
		r.converged = -1
	}
	for _, c := range hpccClaims(runs) {
		if strings.HasPrefix(c.What, "convergence") && c.Holds() {
			t.Errorf("HPCC never converging holds %q (%s)", c.What, c.Ours)
		}
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
