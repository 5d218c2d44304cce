package experiment

import (
	"context"
	"fmt"
	"strings"

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

// pmsbK is the port threshold: 12 packets (003 §VI-A), kept in packets
// at the testbed's rate (Scaling).
const pmsbK = 12 * 1500

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

func runPMSB(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(demo.DefaultDuration)
	cases := pmsbCases(demo.DefaultRate)
	var runs []*demo.Result
	for _, c := range cases {
		res, err := env.demo(ctx, demo.Options{
			Schemes: c.schemes, Classes: c.classes, Scheduler: c.kind, K: pmsbK,
			Warmup: warmup, Duration: duration, Sample: sampleEvery,
		})
		if err != nil {
			return nil, fmt.Errorf("pmsb-sched: %s: %w", c.tag, err)
		}
		runs = append(runs, res)
	}
	return pmsbReport(env, cases, runs)
}

// pmsbReport renders the runs, one per case.
func pmsbReport(env Env, cases []pmsbCase, runs []*demo.Result) (*Report, error) {
	if len(runs) != len(cases) {
		return nil, fmt.Errorf("pmsb-sched: %d runs, want %d", len(runs), len(cases))
	}
	for i, r := range runs {
		if len(r.Flows) != len(cases[i].classes) {
			return nil, fmt.Errorf("pmsb-sched: %s: %d queues, want %d", cases[i].tag, len(r.Flows), len(cases[i].classes))
		}
		for _, s := range cases[i].schemes {
			if _, ok := scheme(r, s); !ok {
				return nil, fmt.Errorf("pmsb-sched: %s lacks scheme %s", cases[i].tag, s)
			}
		}
	}
	r0 := runs[0]
	sc := Scaling{PaperRate: 10e9, Rate: r0.Rate}
	rep := env.report(pmsbSched(), "pmsb-sched: PMSB under DWRR, SP, WFQ and SP over WFQ, at enqueue and dequeue (003 §VI-A)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket and a %d KB buffer; "+
			"long-lived %s TCP flows with ECN from h1–h4 to h5, one queue per class (by DSCP). Each configuration runs %v after %v of warm-up; "+
			"all its flows start together.", rate(r0.Rate), r0.Bucket, r0.Buffer>>10, r0.CC, r0.Duration, r0.Warmup),
		fmt.Sprintf("PMSB marks a packet when the port holds at least port_threshold = %d B (12 packets, 003 §VI-A) and its queue at least "+
			"weight_i/Σweight × port_threshold (003 Algorithm 1, Eq. 6). Per-queue ECN with the standard threshold marks a queue at %d B. "+
			"A paced flow is capped with SO_MAX_PACING_RATE at its fraction of C: a ceiling, below which its congestion window, reacting to marks, may keep it "+
			"(the paper's paced flows are sources of a fixed rate).", r0.K, r0.K),
	}
	rep.Scaling = sc.String() + fmt.Sprintf(" PMSB's port threshold of 12 packets stays 12 packets (%d B), which at %s is %v instead of the paper's %v; "+
		"the paper's rates (\"a 5 Gbps flow\" of 10) become the same fractions of C.",
		r0.K, rate(r0.Rate), sc.Time(Scaling{Rate: 10e9}.timeOf(r0.K)).Round(100), Scaling{Rate: 10e9}.timeOf(r0.K).Round(100))
	rep.Limits = []string{
		"The paper runs DCTCP in ns-2 at 10 Gbit/s; we run cubic with ECN (DCTCP is not in this kernel) through a real switch at 995 Mbit/s.",
		"The paper starts the flows of SP, SP+WFQ and WFQ one after another and plots the shares over time; we start them together and measure the shares once all run.",
		"The paper's heavy case is 1 : 100 flows; with 4 sending hosts on one CPU we run 1 : 16.",
		fmt.Sprintf("One run per configuration, no repetitions: each verdict rests on a single %v window.", r0.Duration),
	}
	for i, c := range cases {
		r := runs[i]
		if c.want != nil {
			s, _ := scheme(r, demo.PMSB)
			var paper, ours []string
			var got, want []float64
			for _, q := range paperOrder(c) {
				got, want = append(got, s.Queues[q].Goodput/r.MaxGoodput()), append(want, c.want[q])
				paper = append(paper, fmt.Sprintf("%g", 10*c.want[q]))
				ours = append(ours, fmt.Sprintf("%.0f", s.Queues[q].Goodput/1e6))
			}
			rep.Claims = append(rep.Claims, Claim{
				Source: "003 " + c.fig, What: "PMSB, " + c.title + ": goodput per queue " + queueOrder(c),
				Paper: strings.Join(paper, " / ") + " Gbit/s of 10",
				Ours:  strings.Join(ours, " / ") + fmt.Sprintf(" Mbit/s of %.0f", r.MaxGoodput()/1e6),
				Busy:  []float64{s.Busy}, Rule: shares(got, want, 0.1),
			})
		}
	}
	// 1:4: PMSB's RTT against the per-queue standard threshold (003 Fig. 9).
	{
		r := runs[0]
		pq, _ := scheme(r, demo.PerQueue)
		pm, _ := scheme(r, demo.PMSB)
		m0, p0 := meanP99(pq.RTTs[1])
		m1, p1 := meanP99(pm.RTTs[1])
		for _, x := range []struct {
			what, paper string
			a, b        float64
		}{
			{"mean", "63.2% lower", float64(m0), float64(m1)},
			{"p99", "62.6% lower", float64(p0), float64(p1)},
		} {
			red := 1 - x.b/x.a
			rep.Claims = append(rep.Claims, Claim{
				Source: "003 Fig. 9", What: "DWRR 1 : 4, queue 2's " + x.what + " RTT, PMSB vs per-queue standard",
				Paper: x.paper, Ours: fmt.Sprintf("%.0f vs %.0f µs (%s)", x.b/1e3, x.a/1e3, lowerBy(red, 0)),
				Busy: []float64{pq.Busy, pm.Busy}, Rule: lower("PMSB", x.a, x.b, 0.2, 0.9),
			})
		}
	}
	// Enqueue vs dequeue: the peak queue of slow start (003 Fig. 11).
	{
		r := runs[len(runs)-1]
		enq, _ := scheme(r, demo.PMSB)
		deq, _ := scheme(r, demo.PMSBDequeue)
		red := 0.0
		if enq.Peak > 0 {
			red = 1 - float64(deq.Peak)/float64(enq.Peak)
		}
		rep.Claims = append(rep.Claims, Claim{
			Source: "003 Fig. 11", What: "4 flows in one queue: peak port occupancy, PMSB at dequeue vs at enqueue",
			Paper: "about 20% lower (82 packets at enqueue)",
			Ours:  fmt.Sprintf("%.0f vs %.0f packets of 1514 B (%s)", float64(deq.Peak)/1514, float64(enq.Peak)/1514, lowerBy(red, 0)),
			Busy:  []float64{enq.Busy, deq.Busy}, Rule: lower("dequeue", float64(enq.Peak), float64(deq.Peak), 0.05, 0.5),
		})
	}

	t := Table{
		Title:  "Every configuration",
		Header: []string{"configuration", "scheme", "goodput per queue (Mbit/s)", "total", "RTT mean / p99", "peak port occupancy", "CE marks", "drops", "port busy"},
		Note:   "Queues in the paper's numbering (queue 1 first). Total as a share of C·1448/1538; RTT pooled over every flow's sampled smoothed RTT.",
	}
	for i, c := range cases {
		r := runs[i]
		for _, name := range c.schemes {
			s, _ := scheme(r, name)
			var gs []string
			var marks, drops uint64
			for _, q := range paperOrder(c) {
				gs = append(gs, fmt.Sprintf("%.0f", s.Queues[q].Goodput/1e6))
			}
			for q := range s.Queues {
				marks += s.Queues[q].Marks
				drops += s.Queues[q].Drops
			}
			mean, p99 := meanP99(pooled(s))
			t.Rows = append(t.Rows, []string{c.title, s.Title, strings.Join(gs, " / "),
				fmt.Sprintf("%.0f (%.1f%%)", s.Goodput()/1e6, 100*s.Goodput()/r.MaxGoodput()),
				micros(mean) + " / " + micros(p99), fmt.Sprintf("%d B", s.Peak), fmt.Sprint(marks), fmt.Sprint(drops), Busy(s.Busy)})
		}
	}
	rep.Tables = []Table{t}
	rep.Plots = []Plot{{
		File:    "goodput.png",
		Caption: "Goodput of each queue over the measured window under PMSB, one panel per configuration (queues in the paper's numbering).",
		Draw: func(path string) error {
			var ps []*plot.Plot
			for i, c := range cases {
				if c.want == nil {
					continue
				}
				s, _ := scheme(runs[i], demo.PMSB)
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
				p.Y.Max = max(p.Y.Max, float64(runs[i].Rate)/1e6)
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
