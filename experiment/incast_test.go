package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
)

// synthIncast is a sweep where CoDel drops from lossAt senders on and ECN♯
// never does, with query times qct (ECN♯ and Tail alike).
func synthIncast(lossAt int, qct time.Duration) []*incastRun {
	var runs []*incastRun
	for _, s := range incastSchemes() {
		for _, n := range incastSenders {
			r := &incastRun{scheme: s.title, senders: n, busy: 0.98}
			for range incastQueries {
				q := qct
				if s.scheme == demo.CoDel && n >= lossAt {
					q = 210 * time.Millisecond
					r.drops += 3
				}
				r.qct = append(r.qct, q)
				r.fct = append(r.fct, q/2, q)
			}
			runs = append(runs, r)
		}
	}
	return runs
}

func TestIncastClaims(t *testing.T) {
	o := demo.Options{Rate: demo.DefaultRate, Buffer: sharpBuffer}
	rep := incastReport(Env{Command: "test"}, o, time.Second, synthIncast(100, 20*time.Millisecond))
	if len(rep.Claims) != 3 {
		t.Fatalf("%d claims, want 3", len(rep.Claims))
	}
	for _, c := range rep.Claims {
		if !c.Holds() {
			t.Errorf("%s: does not hold (ours %s)", c.What, c.Ours)
		}
	}
	if got := rep.Claims[0].Ours; got != "none up to 200 vs from 100" {
		t.Errorf("first loss: %q", got)
	}
	// CoDel never losing fails Fig. 17's claim and Fig. 16's.
	rep = incastReport(Env{Command: "test"}, o, time.Second, synthIncast(1000, 20*time.Millisecond))
	if rep.Claims[0].Holds() || rep.Claims[1].Holds() {
		t.Errorf("claims hold without a loss anywhere: %+v", rep.Claims[:2])
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestIncastTimeouts(t *testing.T) {
	r := &incastRun{qct: []time.Duration{time.Millisecond, incastMinRTO, 300 * time.Millisecond, 199 * time.Millisecond}}
	if got := r.timeouts(); got != 2 {
		t.Errorf("timeouts %d, want 2", got)
	}
}

// A short sweep point through ecnswitch: every query of 8 senders
// completes, each response and query has a completion time, and the
// background flows ran. Times are not asserted.
func TestQueriesThroughSwitch(t *testing.T) {
	sc := ecnsharpScaling(demo.DefaultRate)
	ecn, _ := sharpMarkers(sc)
	b := testBed(t, demo.Options{
		Classes: []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, K: sharpKTail, Buffer: sharpBuffer,
		ECNSharp: ecn, CoDel: incastCoDel(sc), Rate: 100e6,
	})
	r, err := runQueries(context.Background(), b, incastSchemes()[3], 8, 200*time.Millisecond)
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
	if r.busy <= 0 {
		t.Errorf("busy %v: the background flows did not run", r.busy)
	}
}
