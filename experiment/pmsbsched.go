package experiment

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// pmsbSched is PMSB's static-flow experiments (003 §VI-A): PMSB keeps the
// shares of DWRR, SP over WFQ, SP and WFQ, and marking at dequeue lowers
// the peak queue of slow start.
func pmsbSched() Experiment {
	return Experiment{
		Name:    "pmsb-sched",
		Paper:   "the PMSB paper's static-flow experiments (003 §VI-A, Fig. 8–15)",
		Summary: "PMSB under DWRR 1:4 and 1:16, SP+WFQ, SP and WFQ; PMSB at enqueue vs dequeue, peak queue",
		Run:     runPMSB,
	}
}

// PMSB's port threshold comes from 003 Eq. 5, port_threshold = C × RTT ×
// λ, with the testbed's RTT measured: the round trip the flows see apart
// from the bottleneck's queue (TCP's smoothed RTT less the switch's
// queueing delay, in a calibration run at the paper's 12 packets). λ is
// DCTCP's, 0.17 (000 §2.1 citing DCTCP's analysis), the λ with which 003
// §VI-B sets its 12 packets "according to Theorem IV.1" at 10 Gbit/s and
// an 85.2 µs RTT (C·RTT = 71 packets); Theorem IV.1's bound is C·RTT/7.
const (
	pmsbPaperK      = 12 * 1500 // bytes: the paper's port threshold, the calibration's
	pmsbLambda      = 0.17
	pmsbPacket      = 1500 // bytes: thresholds are whole packets of it
	pmsbCalibration = 2 * time.Second
)

// pmsbRTO is the hosts' least RTO. 003 (ns-3) states none; the DCTCP
// testbeds it follows set 10 ms (001 §5.1), and so do we.
const pmsbRTO = 10 * time.Millisecond

// pmsbHosts cites what the paper's hosts ran.
const pmsbHosts = "003 §VI: \"We use DCTCP to perform congestion control\" (ns-3, 10 Gbit/s); no RTO_min is stated, " +
	"so the hosts take the MQ-ECN testbed's 10 ms (001 §5.1)."

// pmsbThreshold returns the port threshold of 003 Eq. 5 for a round trip
// of rtt at rate bit/s: C·RTT·λ in whole packets, the nearest, but never
// below Theorem IV.1's bound C·RTT/7 (rounded up), nor below one packet.
func pmsbThreshold(rate int64, rtt time.Duration) int64 {
	bdp := float64(rate) * rtt.Seconds() / 8 / pmsbPacket // packets
	n := max(int64(math.Round(bdp*pmsbLambda)), int64(math.Ceil(bdp/7)), 1)
	return n * pmsbPacket
}

// baseRTT returns the round trip a run's flows saw apart from the
// bottleneck's queue: each queue's mean smoothed RTT (TCP_INFO) less its
// mean queueing delay at the switch, averaged over the queues.
func baseRTT(s demo.SchemeResult) time.Duration {
	var sum time.Duration
	n := 0
	for _, q := range s.Queues {
		if q.SRTT > 0 {
			sum += max(q.SRTT-q.MeanDelay, 0)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// pmsbCase is one configuration of the experiment.
type pmsbCase struct {
	tag, title string
	kind       scheduler.Kind
	classes    []demo.Class
	schemes    []string
	// queue names the paper's queue of each class (SP serves the highest
	// class first, so the paper's queue 1 is our last class there).
	queue []int
	// want is each class's expected share of the goodput C·1448/1538 can
	// carry (003 §VI-A's Gbit/s of 10), nil where the paper gives none.
	want  []float64
	fig   string // the paper's figure
	paper string // what it shows
}

// pmsbCases are the experiment's configurations, in order. Paced flows
// ("a 5 Gbps TCP flow") are capped at that fraction of C.
func pmsbCases(c int64) []pmsbCase {
	frac := func(f float64) int64 { return int64(f * float64(c)) }
	h := func(hs ...int) []int { return hs }
	return []pmsbCase{
		{tag: "dwrr-1to4", title: "DWRR, 1 flow : 4 flows", kind: scheduler.DWRR,
			classes: []demo.Class{{Flows: 1, Senders: h(0)}, {Flows: 4, Senders: h(1, 2, 3)}},
			schemes: []string{demo.PerQueue, demo.PMSB}, queue: []int{1, 2}, want: []float64{0.5, 0.5},
			fig: "Fig. 8", paper: "both queues around 5 Gbit/s of 10"},
		{tag: "dwrr-1to16", title: "DWRR, 1 flow : 16 flows", kind: scheduler.DWRR,
			classes: []demo.Class{{Flows: 1, Senders: h(0)}, {Flows: 16, Senders: h(1, 2, 3)}},
			schemes: []string{demo.PMSB}, queue: []int{1, 2}, want: []float64{0.5, 0.5},
			fig: "Fig. 10", paper: "weighted fair sharing kept at 1 : 100"},
		{tag: "sp-wfq", title: "SP over WFQ: a 0.5·C flow in the strict queue, 1 and 4 flows in two equal WFQ queues", kind: scheduler.WFQ,
			classes: []demo.Class{{Flows: 1, Senders: h(0), Strict: true, Rate: frac(0.5)}, {Flows: 1, Senders: h(1)}, {Flows: 4, Senders: h(2)}},
			schemes: []string{demo.PMSB}, queue: []int{1, 2, 3}, want: []float64{0.5, 0.25, 0.25},
			fig: "Fig. 13", paper: "5 / 2.5 / 2.5 Gbit/s"},
		{tag: "sp", title: "SP: flows of 0.5·C, 0.3·C and unlimited from highest to lowest priority", kind: scheduler.SP,
			classes: []demo.Class{{Flows: 1, Senders: h(2)}, {Flows: 1, Senders: h(1), Rate: frac(0.3)}, {Flows: 1, Senders: h(0), Rate: frac(0.5)}},
			schemes: []string{demo.PMSB}, queue: []int{3, 2, 1}, want: []float64{0.2, 0.3, 0.5},
			fig: "Fig. 14", paper: "5 / 3 / 2 Gbit/s"},
		{tag: "wfq", title: "WFQ, two equal queues, 1 flow : 4 flows", kind: scheduler.WFQ,
			classes: []demo.Class{{Flows: 1, Senders: h(0)}, {Flows: 4, Senders: h(1)}},
			schemes: []string{demo.PMSB}, queue: []int{1, 2}, want: []float64{0.5, 0.5},
			fig: "Fig. 15", paper: "5 / 5 Gbit/s"},
		{tag: "stage", title: "4 flows from 4 senders in one queue, started together: PMSB at enqueue vs at dequeue", kind: scheduler.DWRR,
			classes: []demo.Class{{Flows: 4, Senders: h(0, 1, 2, 3)}},
			schemes: []string{demo.PMSB, demo.PMSBDequeue}, queue: []int{1},
			fig: "Fig. 11", paper: "peak 82 packets at enqueue, about 20% lower at dequeue"},
	}
}

// pmsbCalibrated is the calibration's outcome: the RTT measured and the
// port threshold Eq. 5 gives with it.
type pmsbCalibrated struct {
	rtt, minRTT time.Duration
	k           int64
	busy        float64
}

func runPMSB(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(demo.DefaultDuration)
	cases := pmsbCases(demo.DefaultRate)
	first := cases[0]
	cal, err := env.demo(ctx, demo.Options{
		Schemes: []string{demo.PerQueue}, Classes: first.classes, Scheduler: first.kind, K: pmsbPaperK,
		Warmup: warmup, Duration: pmsbCalibration, RTOMin: pmsbRTO,
	})
	if err != nil {
		return nil, fmt.Errorf("pmsb-sched: calibration: %w", err)
	}
	s := cal.Schemes[0]
	c := pmsbCalibrated{rtt: baseRTT(s), minRTT: min(s.Queues[0].MinRTT, s.Queues[1].MinRTT), busy: s.Busy}
	c.k = pmsbThreshold(cal.Rate, c.rtt)
	env.say("pmsb-sched: measured RTT %v (TCP's min %v): port threshold C·RTT·%.2f = %d B", c.rtt, c.minRTT, pmsbLambda, c.k)
	var runs [][]*demo.Result
	for _, x := range cases {
		rs, err := env.demoRuns(ctx, demo.Options{
			Schemes: x.schemes, Classes: x.classes, Scheduler: x.kind, K: c.k,
			Warmup: warmup, Duration: duration, Sample: sampleEvery, RTOMin: pmsbRTO,
		})
		if err != nil {
			return nil, fmt.Errorf("pmsb-sched: %s: %w", x.tag, err)
		}
		runs = append(runs, rs)
	}
	return pmsbReport(env, cases, c, runs)
}

// pmsbReport renders the runs, the rounds of each case.
func pmsbReport(env Env, cases []pmsbCase, cal pmsbCalibrated, runs [][]*demo.Result) (*Report, error) {
	if len(runs) != len(cases) {
		return nil, fmt.Errorf("pmsb-sched: %d cases ran, want %d", len(runs), len(cases))
	}
	for i, rs := range runs {
		if len(rs) == 0 {
			return nil, fmt.Errorf("pmsb-sched: %s: no run", cases[i].tag)
		}
		for _, r := range rs {
			if len(r.Flows) != len(cases[i].classes) {
				return nil, fmt.Errorf("pmsb-sched: %s: %d queues, want %d", cases[i].tag, len(r.Flows), len(cases[i].classes))
			}
			for _, s := range cases[i].schemes {
				if _, ok := scheme(r, s); !ok {
					return nil, fmt.Errorf("pmsb-sched: %s lacks scheme %s", cases[i].tag, s)
				}
			}
		}
	}
	r0 := runs[0][0]
	sc := Scaling{PaperRate: 10e9, Rate: r0.Rate}
	rep := env.report(pmsbSched(), "pmsb-sched: PMSB under DWRR, SP, WFQ and SP over WFQ, at enqueue and dequeue (003 §VI-A)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket and a %d KB buffer; "+
			"long-lived %s TCP flows with ECN from h1–h4 to h5, one queue per class (by DSCP). Each configuration runs %v after %v of warm-up, "+
			"%d times (its schemes in turn); all its flows start together.", rate(r0.Rate), r0.Bucket, r0.Buffer>>10, r0.CC, r0.Duration, r0.Warmup, len(runs[0])),
		fmt.Sprintf("The port threshold comes from 003 Eq. 5, port_threshold = C × RTT × λ, with this testbed's RTT measured first: a calibration run "+
			"(DWRR 1 flow : 4, per-queue ECN at the paper's 12 packets, %v) measured the round trip the flows see apart from the bottleneck's queue, "+
			"TCP's smoothed RTT less the switch's queueing delay, as %v (TCP's least RTT %v; the port %.1f%% busy). λ = %.2f, DCTCP's (000 §2.1), is the λ "+
			"with which 003 §VI-B's 12 packets follow from its 85.2 µs RTT at 10 Gbit/s \"according to Theorem IV.1\", whose bound is C·RTT/7 (%.1f packets here). "+
			"So port_threshold = %d B (%d packets of %d B).",
			pmsbCalibration, cal.rtt.Round(time.Microsecond), cal.minRTT, 100*cal.busy, pmsbLambda,
			float64(r0.Rate)*cal.rtt.Seconds()/8/7/pmsbPacket, r0.K, r0.K/pmsbPacket, pmsbPacket),
		fmt.Sprintf("PMSB marks a packet when the port holds at least port_threshold and its queue at least "+
			"weight_i/Σweight × port_threshold (003 Algorithm 1, Eq. 6). Per-queue ECN with the standard threshold marks a queue at %d B. "+
			"A paced flow is capped with SO_MAX_PACING_RATE at its fraction of C: a ceiling, below which its congestion window, reacting to marks, may keep it "+
			"(the paper's paced flows are sources of a fixed rate).", r0.K),
	}
	rep.Transport, rep.NonECT = hostsText(r0, pmsbHosts), nonECTDrop
	rep.Scaling = sc.String() + " The threshold is not scaled from the paper's but measured here (Eq. 5); the paper's rates (\"a 5 Gbps flow\" of 10) become the same fractions of C."
	rep.Limits = []string{
		"The paper runs DCTCP in ns-3 at 10 Gbit/s; we run DCTCP through a real switch at 995 Mbit/s.",
		"The paper starts the flows of SP, SP+WFQ and WFQ one after another and plots the shares over time; we start them together and measure the shares once all run.",
		"The paper's heavy case is 1 : 100 flows; with 4 sending hosts on one CPU we run 1 : 16.",
	}
	for i, c := range cases {
		if c.want == nil {
			continue
		}
		rs := runs[i]
		ss := schemeRuns(rs, demo.PMSB)
		most := rs[0].MaxGoodput()
		var paper, ours []string
		var got, want []float64
		for _, q := range paperOrder(c) {
			g := over(ss, func(s demo.SchemeResult) float64 { return s.Queues[q].Goodput })
			got, want = append(got, g.Median()/most), append(want, c.want[q])
			paper = append(paper, fmt.Sprintf("%g", 10*c.want[q]))
			ours = append(ours, g.Format(func(x float64) string { return fmt.Sprintf("%.0f", x/1e6) }))
		}
		rep.Claims = append(rep.Claims, Claim{
			Source: "003 " + c.fig, What: "PMSB, " + c.title + ": goodput per queue " + queueOrder(c),
			Paper: strings.Join(paper, " / ") + " Gbit/s of 10",
			Ours:  strings.Join(ours, " / ") + fmt.Sprintf(" Mbit/s of %.0f", most/1e6),
			Loads: loadsOf(ss), Rule: shares(got, want, 0.1),
		})
	}
	// 1:4: PMSB's RTT against the per-queue standard threshold (003 Fig. 9).
	{
		pq, pm := schemeRuns(runs[0], demo.PerQueue), schemeRuns(runs[0], demo.PMSB)
		mean := func(s demo.SchemeResult) float64 { m, _ := meanP99(s.RTTs[1]); return float64(m) }
		p99 := func(s demo.SchemeResult) float64 { _, p := meanP99(s.RTTs[1]); return float64(p) }
		for _, x := range []struct {
			what, paper string
			f           func(demo.SchemeResult) float64
		}{
			{"mean", "63.2% lower", mean},
			{"p99", "62.6% lower", p99},
		} {
			a, b := over(pq, x.f), over(pm, x.f)
			us := func(v float64) string { return fmt.Sprintf("%.0f", v/1e3) }
			rep.Claims = append(rep.Claims, Claim{
				Source: "003 Fig. 9", What: "DWRR 1 : 4, queue 2's " + x.what + " RTT, PMSB vs per-queue standard",
				Paper: x.paper, Ours: fmt.Sprintf("%s vs %s µs (%s)", b.Format(us), a.Format(us), lowerBy(1-b.Median()/a.Median(), 0)),
				Loads: loadsOf(pq, pm), Rule: lower("PMSB", a.Median(), b.Median(), 0.2, 0.9),
			})
		}
	}
	// Enqueue vs dequeue: the peak queue of slow start (003 Fig. 11).
	{
		rs := runs[len(runs)-1]
		enq, deq := schemeRuns(rs, demo.PMSB), schemeRuns(rs, demo.PMSBDequeue)
		peak := func(s demo.SchemeResult) float64 { return float64(s.Peak) / 1514 }
		a, b := over(enq, peak), over(deq, peak)
		pk := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		rep.Claims = append(rep.Claims, Claim{
			Source: "003 Fig. 11", What: "4 flows in one queue: peak port occupancy, PMSB at dequeue vs at enqueue",
			Paper: "about 20% lower (82 packets at enqueue)",
			Ours:  fmt.Sprintf("%s vs %s packets of 1514 B (%s)", b.Format(pk), a.Format(pk), lowerBy(1-b.Median()/a.Median(), 0)),
			Loads: loadsOf(enq, deq), Rule: lower("dequeue", a.Median(), b.Median(), 0.05, 0.5),
		})
	}

	t := Table{
		Title:  "Every configuration",
		Header: []string{"configuration", "scheme", "goodput per queue (Mbit/s)", "total", "RTT mean / p99", "peak port occupancy", "CE marks", "drops", "port busy"},
		Note: fmt.Sprintf("Medians of %d runs. Queues in the paper's numbering (queue 1 first). Total as a share of C·1448/1538; "+
			"RTT pooled over every flow's sampled smoothed RTT.", len(runs[0])),
	}
	var loads []loadRow
	for i, c := range cases {
		rs := runs[i]
		for _, name := range c.schemes {
			ss := schemeRuns(rs, name)
			m := func(f func(demo.SchemeResult) float64) float64 { return over(ss, f).Median() }
			var gs []string
			for _, q := range paperOrder(c) {
				gs = append(gs, fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return s.Queues[q].Goodput / 1e6 })))
			}
			total := m(func(s demo.SchemeResult) float64 { return s.Goodput() })
			mean := m(func(s demo.SchemeResult) float64 { x, _ := meanP99(pooled(s)); return float64(x) })
			p99 := m(func(s demo.SchemeResult) float64 { _, x := meanP99(pooled(s)); return float64(x) })
			t.Rows = append(t.Rows, []string{c.title, ss[0].Title, strings.Join(gs, " / "),
				fmt.Sprintf("%.0f (%.1f%%)", total/1e6, 100*total/rs[0].MaxGoodput()),
				micros(time.Duration(mean)) + " / " + micros(time.Duration(p99)),
				fmt.Sprintf("%.0f B", m(func(s demo.SchemeResult) float64 { return float64(s.Peak) })),
				fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 {
					return float64(queueSum(s, func(q demo.QueueResult) uint64 { return q.Marks }))
				})),
				fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 {
					return float64(queueSum(s, func(q demo.QueueResult) uint64 { return q.Drops }))
				})),
				busyRuns(ss)})
		}
		loads = append(loads, demoLoadRows(c.tag, rs)...)
	}
	rep.Tables = []Table{t, loadTable(loads)}
	rep.Plots = []Plot{{
		File:    "goodput.png",
		Caption: "Goodput of each queue over the measured window under PMSB, one panel per configuration (queues in the paper's numbering).",
		Draw: func(path string) error {
			var ps []*plot.Plot
			for i, c := range cases {
				if c.want == nil {
					continue
				}
				s, _ := scheme(runs[i][0], demo.PMSB)
				var lines []Line
				for _, q := range paperOrder(c) {
					l := Line{Label: fmt.Sprintf("queue %d (%s)", c.queue[q], flows(c.classes[q].Flows))}
					for _, x := range s.Series {
						l.XY = append(l.XY, plotter.XY{X: x.At.Seconds(), Y: x.Goodput[q] / 1e6})
					}
					lines = append(lines, l)
				}
				p, err := newPlot(c.tag, "time (s)", "goodput (Mbit/s)", lines)
				if err != nil {
					return err
				}
				p.Y.Max = max(p.Y.Max, float64(runs[i][0].Rate)/1e6)
				ps = append(ps, p)
			}
			return saveTiles(path, 3, ps, 4*vg.Inch, 3*vg.Inch)
		},
	}}
	return rep, nil
}

// paperOrder returns the classes of c in the paper's queue order.
func paperOrder(c pmsbCase) []int {
	order := make([]int, len(c.classes))
	for q, pq := range c.queue {
		order[pq-1] = q
	}
	return order
}

// queueOrder names the queues of c as the paper numbers them, e.g.
// "1 / 2 / 3".
func queueOrder(c pmsbCase) string {
	var s []string
	for i := range c.queue {
		s = append(s, fmt.Sprint(i+1))
	}
	return strings.Join(s, " / ")
}
