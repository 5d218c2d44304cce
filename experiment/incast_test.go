package experiment

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
)

// synthIncast is a sweep of three runs where CoDel's query packets
// overflow from lossAt senders on and ECN♯'s never do, with query times
// qct (ECN♯ and Tail alike).
func synthIncast(lossAt int, qct time.Duration) []*incastRun {
	var runs []*incastRun
	for round := range 3 {
		for _, s := range incastSchemes() {
			for _, n := range incastSenders {
				r := &incastRun{scheme: s.title, senders: n, round: round, load: testLoad(0.98)}
				for range incastQueries {
					q := qct
					if s.scheme == demo.CoDel && n >= lossAt {
						q = 21 * time.Millisecond
						r.drops.ByDSCP[dataplane.DropPoolFull][incastQueryDSCP] += 3
						r.drops.ByKind[dataplane.DropPoolFull][demo.KindTCPECT] += 3
					}
					// Background drops and a marker's drop of an MLD report
					// never count as the queries' loss.
					r.drops.ByDSCP[dataplane.DropPoolFull][0]++
					r.drops.ByKind[dataplane.DropPoolFull][demo.KindTCPECT]++
					r.drops.ByDSCP[dataplane.DropDequeueMarker][0]++
					r.drops.ByKind[dataplane.DropDequeueMarker][demo.KindICMPv6]++
					r.qct = append(r.qct, q)
					r.fct = append(r.fct, q/2, q)
					r.cwnd0 = append(r.cwnd0, 10)
				}
				runs = append(runs, r)
			}
		}
	}
	return runs
}

func TestIncastClaims(t *testing.T) {
	o := demo.Options{Rate: demo.DefaultRate, Buffer: 2 << 20, CongestionControl: "dctcp"}
	cal := &incastRun{peak: 1 << 20}
	rep := incastReport(Env{Command: "test"}, o, time.Second, cal, synthIncast(100, 20*time.Millisecond))
	if len(rep.Claims) != 4 {
		t.Fatalf("%d claims, want 4", len(rep.Claims))
	}
	for _, c := range rep.Claims {
		if !c.Holds() {
			t.Errorf("%s: does not hold (ours %s)", c.What, c.Ours)
		}
	}
	if got := rep.Claims[0].Ours; got != "none up to 200 (each of 3 runs) vs from 100 (each of 3 runs)" {
		t.Errorf("first loss: %q", got)
	}
	// CoDel never losing fails Fig. 17's claim and Fig. 16's.
	rep = incastReport(Env{Command: "test"}, o, time.Second, cal, synthIncast(1000, 20*time.Millisecond))
	if rep.Claims[0].Holds() || rep.Claims[1].Holds() {
		t.Errorf("claims hold without a loss anywhere: %+v", rep.Claims[:2])
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// The calibrated buffer is 1.25× the peak, rounded up to 64 KB.
	if got := calibratedBuffer(1 << 20); got != 1280<<10 {
		t.Errorf("buffer for a 1 MB peak: %d B, want 1.25 MB", got)
	}
	if got := calibratedBuffer(100_000); got != 128<<10 {
		t.Errorf("buffer for a 100 KB peak: %d B, want 128 KB", got)
	}
}

// A short sweep point through ecnswitch: every query of 8 senders
// completes, each response and query has a completion time, and the
// background flows ran. Times are not asserted.
func TestQueriesThroughSwitch(t *testing.T) {
	sc := ecnsharpScaling(demo.DefaultRate)
	ecn, _ := sharpMarkers(sc)
	// K at the demo's 32 KB, not Tail's 250: at 100 Mbit/s a 250 KB
	// standing queue would make each query 20 ms longer.
	b := testBed(t, demo.Options{
		Classes: []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, K: demo.DefaultK, Buffer: sharpBuffer,
		ECNSharp: ecn, CoDel: incastCoDel(sc), Rate: 100e6, RTOMin: sharpRTO,
	})
	r, err := runQueries(context.Background(), b, incastSchemes()[0], 8, 200*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.failed != "" || len(r.qct) != incastQueries || len(r.fct) != 8*incastQueries {
		t.Fatalf("%d queries, %d responses (%s); want %d, %d", len(r.qct), len(r.fct), r.failed, incastQueries, 8*incastQueries)
	}
	for i, q := range r.qct {
		if q <= 0 {
			t.Errorf("query %d: completion %v", i, q)
		}
	}
	if r.load.Busy <= 0 || r.load.Senders == nil || r.load.Senders.Flows != demo.Bottleneck {
		t.Errorf("busy %v, senders %+v: the background flows did not run", r.load.Busy, r.load.Senders)
	}
	// Every response started from the initial window: new connections.
	if len(r.cwnd0) != 8*incastQueries || slices.Max(r.cwnd0) > 10 {
		t.Errorf("%d responses' windows at their start, largest %d; want %d, at most the initial 10", len(r.cwnd0), slices.Max(append(r.cwnd0, 0)), 8*incastQueries)
	}
}
