package experiment

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
)

// TestFCTArrivals: Poisson arrivals at λ = load·C/(8·mean) offer the load
// over a long window, spread over the 4 senders and the 4 queues, and the
// same seed draws the same flows.
func TestFCTArrivals(t *testing.T) {
	cdf, err := Workload(fctWorkload)
	if err != nil {
		t.Fatal(err)
	}
	const window = 2000 * time.Second
	fs := fctArrivals(cdf, 0.5, demo.DefaultRate, window, 1)
	lambda := cdf.FlowRate(0.5, demo.DefaultRate)
	if n, want := float64(len(fs)), lambda*window.Seconds(); math.Abs(n-want) > 4*math.Sqrt(want) {
		t.Errorf("%.0f flows, want %.0f ± 4σ", n, want)
	}
	var bytes float64
	var hosts, queues [4]int
	for i, f := range fs {
		if i > 0 && f.at < fs[i-1].at || f.at >= window {
			t.Fatalf("flow %d at %v after %v", i, f.at, fs[i-1].at)
		}
		bytes += float64(f.size)
		hosts[f.host]++
		queues[f.queue]++
	}
	if load := bytes * 8 / (float64(demo.DefaultRate) * window.Seconds()); math.Abs(load-0.5) > 0.05 {
		t.Errorf("offered load %.3f, want 0.5 ± 0.05", load)
	}
	for i := range 4 {
		if d := math.Abs(float64(hosts[i])/float64(len(fs)) - 0.25); d > 0.02 || math.Abs(float64(queues[i])/float64(len(fs))-0.25) > 0.02 {
			t.Errorf("host %d: %d flows, queue %d: %d, of %d", i, hosts[i], i, queues[i], len(fs))
		}
	}
	again := fctArrivals(cdf, 0.5, demo.DefaultRate, window, 1)
	if !slices.Equal(fs, again) {
		t.Error("the same seed drew different flows")
	}
	if other := fctArrivals(cdf, 0.8, demo.DefaultRate, window, 1); len(other) <= len(fs) {
		t.Errorf("80%% load: %d flows, 50%%: %d", len(other), len(fs))
	}
}

// fctRuns are runs of every scheme and load whose flows (one small, one
// large per run) took the given times.
func fctRuns(small, large map[string]time.Duration) []fctRun {
	var runs []fctRun
	for _, name := range fctSchemes {
		for _, load := range fctLoads {
			r := fctRun{scheme: name, load: load, carried: 1}
			for i := range 50 {
				r.flows = append(r.flows, fctFlow{size: 10_000, fct: small[name] + time.Duration(i)*time.Microsecond, done: true})
			}
			r.flows = append(r.flows, fctFlow{size: 20_000_000, fct: large[name], done: true}, fctFlow{size: 5_000_000, done: false})
			r.unfinished = 1
			runs = append(runs, r)
		}
	}
	return runs
}

func TestFCTReport(t *testing.T) {
	o := demo.Options{Rate: demo.DefaultRate, Bucket: 2500, Buffer: 96 << 10, K: 32 << 10}
	verdicts := func(runs []fctRun) []bool {
		rep, err := fctReport(Env{Command: "test"}, o, fctWorkload, 10*time.Second, runs)
		if err != nil {
			t.Fatal(err)
		}
		var v []bool
		for _, c := range rep.Claims {
			v = append(v, c.Holds())
		}
		return v
	}
	ms := time.Millisecond
	paper := fctRuns(map[string]time.Duration{demo.PerQueue: 2 * ms, demo.MQECN: ms, demo.ECNSharp: ms},
		map[string]time.Duration{demo.PerQueue: 200 * ms, demo.MQECN: 205 * ms, demo.ECNSharp: 210 * ms})
	if got := verdicts(paper); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("the paper's picture: %v", got)
	}
	worse := fctRuns(map[string]time.Duration{demo.PerQueue: ms, demo.MQECN: 2 * ms, demo.ECNSharp: ms},
		map[string]time.Duration{demo.PerQueue: 200 * ms, demo.MQECN: 400 * ms, demo.ECNSharp: 210 * ms})
	if got := verdicts(worse); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("MQ-ECN twice as slow: %v", got)
	}
	// MQ-ECN slower reads as "higher", never as a negative "lower" (the
	// committed report once printed "-49% lower" for 49% higher).
	rep, err := fctReport(Env{Command: "test"}, o, fctWorkload, 10*time.Second, worse)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Claims[:2] {
		if !strings.Contains(c.Ours, "% higher)") || strings.Contains(c.Ours, "-") {
			t.Errorf("%s: MQ-ECN slower reads %q", c.Source, c.Ours)
		}
	}
	rep, err = fctReport(Env{Command: "ecnswitch experiment fct"}, o, fctWorkload, 10*time.Second, paper)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| 80% | MQ-ECN | 52 (1) |", "| 0.51 | 0.51 | 1.02 |", "![fct.png](fct.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if s, u := carried(paper[0].flows); math.Abs(s-(50*10_000+20e6)/(50*10_000+25e6)) > 1e-9 || u != 1 {
		t.Errorf("carried = %g, %d", s, u)
	}
	// The data-mining report names its workload and says the paper's
	// numbers beside it are web search's.
	dm, err := fctReport(Env{Command: "test"}, o, fctDataMining, 10*time.Second, paper)
	if err != nil {
		t.Fatal(err)
	}
	if dm.Name != "fct-data-mining" || !strings.Contains(dm.Title, "data-mining workload") || !strings.Contains(dm.Setup[0], "workloads/data-mining.cdf") ||
		!strings.HasSuffix(dm.Claims[0].Paper, "(web search)") || !strings.Contains(strings.Join(dm.Limits, " "), "web-search workload only") {
		t.Errorf("data-mining report: %q, %q, %q", dm.Title, dm.Claims[0].Paper, dm.Limits)
	}
	if strings.Contains(rep.Claims[0].Paper, "(web search)") {
		t.Errorf("web-search report: %q", rep.Claims[0].Paper)
	}
	if _, err := fctReport(Env{}, o, fctWorkload, time.Second, paper[:2]); err == nil {
		t.Error("2 runs: no error")
	}
}
