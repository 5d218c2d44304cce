package experiment

import (
	"context"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/demo"
)

// Two incasts of 8 senders through ecnswitch on the demo's testbed, NDP
// over a trimming port with NDP's 8-packet queue (which a sender's first
// window, leaving in one burst, overflows) and the window transport over
// drop-tail: every
// message completes after the incast's start, NDP's packets are all
// accounted for (sent = received whole + received trimmed + dropped), the
// trims the switch counted reached the receiver, and the tap saw the
// data. Times are not asserted.
func TestTrimIncastThroughSwitch(t *testing.T) {
	b := testBed(t, demo.Options{Classes: []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, Coalesce: trimCoalesce, WorkerRX: true})
	for _, v := range []trimVariant{trimVariants()[1], trimVariants()[3]} {
		runs, err := runTrimVariant(context.Background(), Env{}, b, v, []int{8}, 2)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if len(runs) != 1 || len(runs[0].rounds) != 2 {
			t.Fatalf("%s: %d runs", v.name, len(runs))
		}
		for i, rd := range runs[0].rounds {
			if rd.failed != 0 || len(rd.mct) != 8 || slicesMin(rd.mct) <= 0 || len(rd.sojourn) == 0 {
				t.Errorf("%s round %d: %d incomplete, MCTs %v, %d sojourns", v.name, i, rd.failed, rd.mct, len(rd.sojourn))
			}
			if !v.ndp {
				continue
			}
			if rd.sent != rd.whole+rd.headers+rd.drops || rd.headers != rd.trimmed || rd.trimmed == 0 {
				t.Errorf("%s round %d: sent %d, received %d whole and %d trimmed, %d dropped; the switch trimmed %d",
					v.name, i, rd.sent, rd.whole, rd.headers, rd.drops, rd.trimmed)
			}
		}
	}
}

func slicesMin(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// The claims follow the runs: NDP at 1.2× the ideal with no timeout, its
// p99 a fifth of drop-tail's and DCTCP's, holds every claim; at 2× the
// ideal the completion claims fail, and a timeout with trimming fails
// the timeout claim.
func TestTrimClaims(t *testing.T) {
	const rate = 1e9
	runs := func(ndpRatio float64, ndpTimeouts uint64) []*trimRun {
		var runs []*trimRun
		for _, v := range trimVariants() {
			for _, n := range trimSenders {
				ideal := trimIdeal(n, rate)
				r := &trimRun{v: v, n: n, rate: rate}
				for range 3 {
					rd := &trimRound{n: n, busy: 0.97}
					last := int64(ndpRatio * float64(ideal))
					if !v.ndp || !v.trim {
						last, rd.timeouts = 5*ideal, 3
					} else {
						rd.timeouts = ndpTimeouts
					}
					for i := range n {
						rd.mct = append(rd.mct, last*int64(i+1)/int64(n))
					}
					r.rounds = append(r.rounds, rd)
				}
				runs = append(runs, r)
			}
		}
		return runs
	}
	for _, c := range []struct {
		name     string
		ratio    float64
		timeouts uint64
		fail     []string // the claims that must not hold, by a word of their What
	}{
		{"near the ideal", 1.2, 0, nil},
		{"twice the ideal", 2, 0, []string{"incast completion", "8-packet"}},
		{"a timeout", 1.2, 1, []string{"timeouts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := trimReport(Env{Command: "test"}, demo.Options{Rate: rate, Buffer: demo.DefaultBuffer, K: demo.DefaultK}, runs(c.ratio, c.timeouts), machine{load0: 1, load1: 2, pressure: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			if want := len(trimSenders) + 4; len(rep.Claims) != want {
				t.Fatalf("%d claims, want %d", len(rep.Claims), want)
			}
			for _, cl := range rep.Claims {
				fails := false
				for _, w := range c.fail {
					fails = fails || strings.Contains(cl.What, w)
				}
				if cl.Holds() == fails {
					t.Errorf("%s: holds %v (ours %s, rule %s)", cl.What, cl.Holds(), cl.Ours, cl.Rule)
				}
			}
			if err := rep.Write(t.TempDir()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
