package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
)

// TestPMSBCases: every configuration is one the demo accepts, its
// expected shares add up to the link, and the paper's queue numbering maps
// onto ours (SP serves our highest class first, the paper's queue 1).
func TestPMSBCases(t *testing.T) {
	for _, c := range pmsbCases(demo.DefaultRate) {
		o := demo.Options{Schemes: c.schemes, Classes: c.classes, Scheduler: c.kind, K: pmsbK}
		if err := o.Validate(); err != nil {
			t.Errorf("%s: %v", c.tag, err)
		}
		if len(c.queue) != len(c.classes) || (c.want != nil && len(c.want) != len(c.classes)) {
			t.Errorf("%s: %d classes, %d queue names, %d shares", c.tag, len(c.classes), len(c.queue), len(c.want))
		}
		var sum float64
		for _, w := range c.want {
			sum += w
		}
		if c.want != nil && (sum < 0.999 || sum > 1.001) {
			t.Errorf("%s: shares add up to %g", c.tag, sum)
		}
	}
	sp := pmsbCases(demo.DefaultRate)[3]
	if sp.tag != "sp" || !slices.Equal(paperOrder(sp), []int{2, 1, 0}) || sp.classes[2].Rate != demo.DefaultRate/2 {
		t.Errorf("SP: paper order %v, class 2 rate %d", paperOrder(sp), sp.classes[2].Rate)
	}
}

// pmsbResults are runs of every case whose PMSB queues carry want of the
// link and whose dequeue peak is deq of the enqueue one.
func pmsbResults(cases []pmsbCase, off float64, deq float64, busy float64) []*demo.Result {
	var runs []*demo.Result
	for _, c := range cases {
		r := &demo.Result{Rate: demo.DefaultRate, K: pmsbK, Buffer: 96 << 10, Bucket: 2500, CC: "cubic", Warmup: time.Second, Duration: 10 * time.Second}
		for _, cl := range c.classes {
			r.Flows = append(r.Flows, cl.Flows)
		}
		for _, name := range c.schemes {
			s := demo.SchemeResult{Scheme: name, Title: demo.Title(name), Busy: busy, Peak: 120_000}
			if name == demo.PMSBDequeue {
				s.Peak = int64(deq * 120_000)
			}
			for q := range c.classes {
				share := 1 / float64(len(c.classes))
				if c.want != nil {
					share = c.want[q]
				}
				if q == 0 {
					share += off
				} else if q == 1 {
					share -= off
				}
				rtt := 300 * time.Microsecond
				if name == demo.PerQueue {
					rtt = 700 * time.Microsecond
				}
				s.Queues = append(s.Queues, demo.QueueResult{Goodput: share * r.MaxGoodput()})
				s.RTTs = append(s.RTTs, rtts(rtt, rtt+100*time.Microsecond, 20))
			}
			r.Schemes = append(r.Schemes, s)
		}
		runs = append(runs, r)
	}
	return runs
}

func TestPMSBClaims(t *testing.T) {
	cases := pmsbCases(demo.DefaultRate)
	verdicts := func(runs []*demo.Result) []string {
		rep, err := pmsbReport(Env{Command: "test"}, cases, runs)
		if err != nil {
			t.Fatal(err)
		}
		var v []string
		for _, c := range rep.Claims {
			v = append(v, c.Verdict())
		}
		return v
	}
	// 5 share claims, 2 RTT claims, 1 peak claim.
	all := func(v string) []string { return slices.Repeat([]string{v}, 8) }
	if got := verdicts(pmsbResults(cases, 0, 0.8, 0.97)); !slices.Equal(got, all("holds")) {
		t.Errorf("the paper's picture: %v", got)
	}
	// Queue 1 starved by 20% of C, and no gain at dequeue: the share
	// claims and the peak claim fail; the RTT claims still hold.
	want := []string{"does not hold", "does not hold", "does not hold", "does not hold", "does not hold", "holds", "holds", "does not hold"}
	if got := verdicts(pmsbResults(cases, -0.2, 1, 0.97)); !slices.Equal(got, want) {
		t.Errorf("starved queue 1: %v, want %v", got, want)
	}
	for _, v := range verdicts(pmsbResults(cases, 0, 0.8, 0.5)) {
		if !strings.HasSuffix(v, "(not comparable)") {
			t.Errorf("at 50%% busy: %q", v)
		}
	}
	rep, err := pmsbReport(Env{Command: "ecnswitch experiment pmsb-sched"}, cases, pmsbResults(cases, 0, 0.8, 0.97))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| 5 / 3 / 2 Gbit/s of 10 |", "14.4µs", "144.7µs", "![goodput.png](goodput.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := pmsbReport(Env{}, cases, nil); err == nil {
		t.Error("no runs: no error")
	}
}
