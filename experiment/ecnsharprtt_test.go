package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
)

// TestSharpRuns: the runs are ones the demo accepts, with the paper's
// constants scaled to 995 Mbit/s: base RTTs 70–210 µs ×10.05, ECN♯'s and
// CoDel's targets likewise, K in bytes as the paper's.
func TestSharpRuns(t *testing.T) {
	runs := sharpRuns(demo.DefaultRate, time.Second, 10*time.Second)
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		if err := r.opts.Validate(); err != nil {
			t.Errorf("%s: %v", r.tag, err)
		}
	}
	d := runs[0].opts.HostDelay
	near := func(got, want time.Duration) bool { return got > want-time.Microsecond && got < want+time.Microsecond }
	if len(d) != 4 || !near(d[0], 703518*time.Nanosecond) || !near(d[3], 2110553*time.Nanosecond) || !(d[1] > d[0] && d[2] > d[1] && d[3] > d[2]) {
		t.Errorf("host delays %v: want 70–210 µs × 10/0.995, rising", d)
	}
	e := runs[0].opts.ECNSharp
	if !near(time.Duration(e.InsTarget), 2010050*time.Nanosecond) || !near(time.Duration(e.PstTarget), 854271*time.Nanosecond) || e.PstInterval != e.InsTarget {
		t.Errorf("ECN♯ %+v: want ins_target = pst_interval = 200 µs and pst_target = 85 µs, × 10/0.995", e)
	}
	if c := runs[0].opts.CoDel; c.Target != e.PstTarget || c.Interval != e.InsTarget {
		t.Errorf("CoDel %+v: want target 85 µs and interval 200 µs scaled", c)
	}
	if runs[0].opts.K != 250_000 || runs[1].opts.K != 80_000 || runs[2].opts.HostDelay != nil {
		t.Errorf("K %d, %d; DWRR host delays %v", runs[0].opts.K, runs[1].opts.K, runs[2].opts.HostDelay)
	}
	// TCN's threshold under DWRR: 150 µs scaled, 1.508 ms at 995 Mbit/s,
	// which demo takes as K/C and must give back K exactly.
	k := runs[2].opts.K
	rtt := (k*8e9 + demo.DefaultRate - 1) / demo.DefaultRate
	if got := marking.Standard(rtt, 1).Bytes(demo.DefaultRate, 0); got != k || rtt < 1_507_000 || rtt > 1_509_000 {
		t.Errorf("DWRR K %d B: threshold %d ns gives back %d B; want 150 µs × 10/0.995 and K", k, rtt, got)
	}
}

// sharpResults are the three runs with the given mean queues (packets)
// for Tail and ECN♯, AVG's goodput loss and the DWRR shares.
func sharpResults(tailQ, sharpQ, avgLoss float64, shares []float64, busy float64) [][]*demo.Result {
	mk := func(flows []int, schemes map[string]float64, queue map[string]float64, qshares []float64) *demo.Result {
		r := &demo.Result{Rate: demo.DefaultRate, K: sharpKTail, Buffer: sharpBuffer, Bucket: 2500, Flows: flows, CC: "cubic", Warmup: time.Second, Duration: 10 * time.Second}
		for _, name := range []string{demo.PerQueue, demo.ECNSharp, demo.CoDel, demo.TCN} {
			g, ok := schemes[name]
			if !ok {
				continue
			}
			s := demo.SchemeResult{Scheme: name, Title: demo.Title(name), Busy: busy, Load: testLoad(busy)}
			for _, sh := range qshares {
				s.Queues = append(s.Queues, demo.QueueResult{Goodput: g * sh * r.MaxGoodput(), Share: sh, MeanDelay: time.Duration(queue[name] * 12_000)})
				s.RTTs = append(s.RTTs, rtts(time.Millisecond, 2*time.Millisecond, 10))
			}
			for i := range 20 {
				s.Series = append(s.Series, demo.Sample{At: time.Duration(i) * 50 * time.Millisecond, Goodput: make([]float64, len(qshares)), PortBytes: int64(queue[name] * 1514)})
			}
			r.Schemes = append(r.Schemes, s)
		}
		return r
	}
	return [][]*demo.Result{
		rounds(mk([]int{8}, map[string]float64{demo.PerQueue: 0.98, demo.ECNSharp: 0.97, demo.CoDel: 0.9}, map[string]float64{demo.PerQueue: tailQ, demo.ECNSharp: sharpQ, demo.CoDel: 5}, []float64{1})),
		rounds(mk([]int{8}, map[string]float64{demo.PerQueue: 0.98 * (1 - avgLoss)}, map[string]float64{demo.PerQueue: 40}, []float64{1})),
		rounds(mk([]int{1, 1, 1}, map[string]float64{demo.ECNSharp: 0.97, demo.TCN: 0.97}, map[string]float64{demo.ECNSharp: sharpQ, demo.TCN: tailQ}, shares)),
	}
}

func TestSharpClaims(t *testing.T) {
	verdicts := func(runs [][]*demo.Result) []bool {
		rep, err := sharpReport(Env{Command: "test"}, runs)
		if err != nil {
			t.Fatal(err)
		}
		var v []bool
		for _, c := range rep.Claims {
			v = append(v, c.Holds())
		}
		return v
	}
	if got := verdicts(sharpResults(160, 10, 0.08, []float64{0.5, 0.25, 0.25}, 0.97)); !slices.Equal(got, []bool{true, true, true, true, true}) {
		t.Errorf("the paper's picture: %v", got)
	}
	if got := verdicts(sharpResults(160, 120, 0, []float64{0.34, 0.33, 0.33}, 0.97)); !slices.Equal(got, []bool{false, false, true, false, true}) {
		t.Errorf("no queue cut, no AVG loss, equal DWRR shares: %v", got)
	}
	rep, err := sharpReport(Env{Command: "ecnswitch experiment ecnsharp-rtt"}, sharpResults(160, 10, 0.08, []float64{0.5, 0.25, 0.25}, 0.97))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "queue.png", "dwrr.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := sharpReport(Env{}, nil); err == nil {
		t.Error("no runs: no error")
	}
}
