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
		o := demo.Options{Schemes: c.schemes, Classes: c.classes, Scheduler: c.kind, K: pmsbPaperK}
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
func pmsbResults(cases []pmsbCase, off float64, deq float64, busy float64) [][]*demo.Result {
	var runs [][]*demo.Result
	for _, c := range cases {
		r := &demo.Result{Rate: demo.DefaultRate, K: 6000, Buffer: 96 << 10, Bucket: 2500, CC: "dctcp", Warmup: time.Second, Duration: 10 * time.Second}
		for _, cl := range c.classes {
			r.Flows = append(r.Flows, cl.Flows)
		}
		for _, name := range c.schemes {
			s := demo.SchemeResult{Scheme: name, Title: demo.Title(name), Busy: busy, Load: testLoad(busy), Peak: 120_000}
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
		runs = append(runs, rounds(r))
	}
	return runs
}

// pmsbCal is a calibration that measured a 300 µs round trip: Eq. 5 gives
// C·RTT·0.17 = 6.3 KB, 4 packets.
var pmsbCal = pmsbCalibrated{rtt: 300 * time.Microsecond, minRTT: 80 * time.Microsecond, k: 6000, busy: 0.97}

// Eq. 5 with λ = 0.17 gives 003 §VI-B's 12 packets at 10 Gbit/s and 85.2
// µs, whole packets, never below Theorem IV.1's C·RTT/7 nor one packet.
func TestPMSBThreshold(t *testing.T) {
	if got := pmsbThreshold(10e9, 85200*time.Nanosecond); got != 12*pmsbPacket {
		t.Errorf("10 Gbit/s, 85.2 µs: %d B, want the paper's 12 packets (C·RTT·0.17 = 12.07)", got)
	}
	if got := pmsbThreshold(demo.DefaultRate, 300*time.Microsecond); got != 4*pmsbPacket {
		t.Errorf("995 Mbit/s, 300 µs: %d B, want 4 packets (6.3 KB; the bound C·RTT/7 is 3.5)", got)
	}
	// C·RTT = 10 packets: λ gives 1.7, rounded 2; the bound 10/7 = 1.43,
	// rounded up 2 as well. At 20 packets: 3.4 → 3, the bound 2.9 → 3.
	if got := pmsbThreshold(demo.DefaultRate, 241*time.Microsecond); got != 3*pmsbPacket {
		t.Errorf("995 Mbit/s, 241 µs (20 packets): %d B, want 3 packets", got)
	}
	if got := pmsbThreshold(demo.DefaultRate, time.Microsecond); got != pmsbPacket {
		t.Errorf("a 1 µs RTT: %d B, want one packet", got)
	}
	s := demo.SchemeResult{Queues: []demo.QueueResult{{SRTT: 400 * time.Microsecond, MeanDelay: 150 * time.Microsecond}, {SRTT: 500 * time.Microsecond, MeanDelay: 150 * time.Microsecond}}}
	if got := baseRTT(s); got != 300*time.Microsecond {
		t.Errorf("base RTT %v, want the mean of 250 and 350 µs", got)
	}
}

func TestPMSBClaims(t *testing.T) {
	cases := pmsbCases(demo.DefaultRate)
	verdicts := func(runs [][]*demo.Result) []string {
		rep, err := pmsbReport(Env{Command: "test"}, cases, pmsbCal, runs)
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
	rep, err := pmsbReport(Env{Command: "ecnswitch experiment pmsb-sched"}, cases, pmsbCal, pmsbResults(cases, 0, 0.8, 0.97))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| 5 / 3 / 2 Gbit/s of 10 |", "as 300µs", "So port_threshold = 6000 B (4 packets of 1500 B)", "![goodput.png](goodput.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := pmsbReport(Env{}, cases, pmsbCal, nil); err == nil {
		t.Error("no runs: no error")
	}
}
