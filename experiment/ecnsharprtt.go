package experiment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// ecnsharpRTT is the ECN♯ paper's RTT-variation experiments (000 §2.3,
// §5.2, §5.5): long-lived flows of 3× different base RTTs through one
// queue under DCTCP-RED with K from the p90 and from the mean RTT, CoDel
// and ECN♯; and ECN♯ under DWRR 2:1:1.
func ecnsharpRTT() Experiment {
	return Experiment{
		Name:    "ecnsharp-rtt",
		Paper:   "the ECN♯ paper's RTT-variation experiments (000 §2.3, §5.2, §5.4 Fig. 16, §5.5 Fig. 19)",
		Summary: "flows of 3× RTT variation: RED at K from p90 vs mean RTT, CoDel, ECN♯ (queue over time); ECN♯ under DWRR 2:1:1",
		Run:     runECNSharp,
	}
}

// The paper's 10 Gbit/s testbed constants (000 §5.2), scaled by
// ecnsharpScaling: RTTs of 70–210 µs, K of 250 KB (p90 RTT, "Tail") and
// 80 KB (mean RTT, "AVG"), CoDel's target 85 µs and interval 200 µs, ECN♯'s
// ins_target 200 µs, pst_target 85 µs, pst_interval 200 µs.
const (
	sharpRTTLow, sharpRTTHigh = 70 * time.Microsecond, 210 * time.Microsecond
	sharpKTail, sharpKAvg     = 250_000, 80_000 // bytes, kept
	sharpTarget               = 85 * time.Microsecond
	sharpInterval             = 200 * time.Microsecond
	sharpBuffer               = 1 << 20 // bytes per port: the Tofino's buffer holds 250 KB and the bursts above it
	sharpFlowsPerHost         = 2
	// sharpTCN is TCN's sojourn threshold beside ECN♯ under DWRR 2:1:1
	// (000 §5.4: "150 µs to avoid throughput loss").
	sharpTCN = 150 * time.Microsecond
)

// tcnK returns the port K that demo turns into TCN's threshold d at rate
// (K/C): the bytes d takes at rate.
func tcnK(rate int64, d time.Duration) int64 { return int64(d) * rate / 8e9 }

func ecnsharpScaling(rate int64) Scaling { return Scaling{PaperRate: 10e9, Rate: rate} }

// sharpHostDelays returns the delay added towards each sending host so
// that their flows' base RTTs spread evenly over the scaled 70–210 µs.
func sharpHostDelays(sc Scaling) []time.Duration {
	const senders = demo.Hosts - 1
	lo, hi := sc.Time(sharpRTTLow), sc.Time(sharpRTTHigh)
	d := make([]time.Duration, senders)
	for i := range d {
		d[i] = lo + (hi-lo)*time.Duration(i)/time.Duration(senders-1)
	}
	return d
}

// sharpRuns are the experiment's runs: what each is, and its options.
type sharpRun struct {
	tag  string
	opts demo.Options
}

// sharpMarkers are ECN♯'s and CoDel's settings (000 §5.2), scaled by sc.
func sharpMarkers(sc Scaling) (marking.ECNSharpConfig, marking.CoDelConfig) {
	ecn := marking.ECNSharpConfig{
		InsTarget: int64(sc.Time(sharpInterval)), PstTarget: int64(sc.Time(sharpTarget)), PstInterval: int64(sc.Time(sharpInterval)),
	}
	return ecn, marking.CoDelConfig{Target: int64(sc.Time(sharpTarget)), Interval: int64(sc.Time(sharpInterval))}
}

func sharpRuns(rate int64, warmup, duration time.Duration) []sharpRun {
	sc := ecnsharpScaling(rate)
	ecn, codel := sharpMarkers(sc)
	one := []demo.Class{{Flows: sharpFlowsPerHost * (demo.Hosts - 1), Senders: []int{0, 1, 2, 3}}}
	base := demo.Options{
		Classes: one, Buffer: sharpBuffer, HostDelay: sharpHostDelays(sc), ECNSharp: ecn, CoDel: codel,
		Warmup: warmup, Duration: duration, Sample: sampleEvery, RTOMin: sharpRTO,
	}
	tail, avg, dwrr := base, base, base
	tail.K, tail.Schemes = sharpKTail, []string{demo.PerQueue, demo.ECNSharp, demo.CoDel}
	avg.K, avg.Schemes = sharpKAvg, []string{demo.PerQueue}
	// K only sets TCN's threshold here: ECN♯ has its own targets.
	dwrr.K, dwrr.Schemes, dwrr.HostDelay, dwrr.Scheduler = tcnK(rate, sc.Time(sharpTCN)), []string{demo.ECNSharp, demo.TCN}, nil, scheduler.DWRR
	dwrr.Classes = []demo.Class{{Flows: 1, Senders: []int{0}, Weight: 2}, {Flows: 1, Senders: []int{1}, Weight: 1}, {Flows: 1, Senders: []int{2}, Weight: 1}}
	return []sharpRun{{"tail", tail}, {"avg", avg}, {"dwrr", dwrr}}
}

// sharpRTO is the hosts' least RTO. 000 states none; its DCTCP takes the
// DCTCP paper's settings (§5.1), and we use the DCTCP testbed's 10 ms of
// 001 §5.1.
const sharpRTO = 10 * time.Millisecond

// sharpHosts cites what the ECN♯ paper's hosts ran.
const sharpHosts = "000 §5.1: \"We use DCTCP at the end host by default. In testbed experiments, we use the DCTCP in Linux kernel 4.9.0 … " +
	"All endhosts in our evaluation are running DCTCP\"; no RTO_min is stated, so the hosts take the DCTCP testbed's 10 ms of 001 §5.1."

func runECNSharp(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(demo.DefaultDuration)
	var runs [][]*demo.Result
	for _, r := range sharpRuns(demo.DefaultRate, warmup, duration) {
		rs, err := env.demoRuns(ctx, r.opts)
		if err != nil {
			return nil, fmt.Errorf("ecnsharp-rtt: %s: %w", r.tag, err)
		}
		runs = append(runs, rs)
	}
	return sharpReport(env, runs)
}

// sharpScheme is one scheme of the RTT-variation runs, measured: each
// statistic the median of the runs'.
type sharpScheme struct {
	title           string
	s               demo.SchemeResult   // the first run, for the plots
	runs            []demo.SchemeResult // every run
	queue, queueP99 Runs                // port occupancy over the samples, packets of 1514 B: mean, p99
	rtt, rtt9       Runs                // pooled smoothed RTT, ns: mean, p99
	goodput         Runs                // bit/s
}

func newSharpScheme(title string, ss []demo.SchemeResult) sharpScheme {
	occ := func(s demo.SchemeResult) []float64 {
		var o []float64
		for _, smp := range s.Series {
			o = append(o, float64(smp.PortBytes)/1514)
		}
		return o
	}
	return sharpScheme{
		title: title, s: ss[0], runs: ss,
		queue:    over(ss, func(s demo.SchemeResult) float64 { return mean(occ(s)) }),
		queueP99: over(ss, func(s demo.SchemeResult) float64 { return quantile(occ(s), 0.99) }),
		rtt:      over(ss, func(s demo.SchemeResult) float64 { m, _ := meanP99(pooled(s)); return float64(m) }),
		rtt9:     over(ss, func(s demo.SchemeResult) float64 { _, p := meanP99(pooled(s)); return float64(p) }),
		goodput:  over(ss, func(s demo.SchemeResult) float64 { return s.Goodput() }),
	}
}

// sharpReport renders the runs of sharpRuns, in order, each its rounds.
func sharpReport(env Env, runs [][]*demo.Result) (*Report, error) {
	if len(runs) != 3 {
		return nil, fmt.Errorf("ecnsharp-rtt: %d configurations ran, want 3", len(runs))
	}
	need := [][]string{{demo.PerQueue, demo.ECNSharp, demo.CoDel}, {demo.PerQueue}, {demo.ECNSharp, demo.TCN}}
	for i, rs := range runs {
		if len(rs) == 0 {
			return nil, fmt.Errorf("ecnsharp-rtt: configuration %d did not run", i+1)
		}
		for _, r := range rs {
			for _, n := range need[i] {
				if _, ok := scheme(r, n); !ok {
					return nil, fmt.Errorf("ecnsharp-rtt: a run of configuration %d lacks scheme %s", i+1, n)
				}
			}
		}
	}
	if len(runs[2][0].Flows) != 3 {
		return nil, fmt.Errorf("ecnsharp-rtt: the DWRR run has %d queues, want 3", len(runs[2][0].Flows))
	}
	r0 := runs[0][0]
	sc := ecnsharpScaling(r0.Rate)
	tail := newSharpScheme(fmt.Sprintf("DCTCP-RED-Tail (K = %d KB)", sharpKTail/1000), schemeRuns(runs[0], demo.PerQueue))
	avg := newSharpScheme(fmt.Sprintf("DCTCP-RED-AVG (K = %d KB)", sharpKAvg/1000), schemeRuns(runs[1], demo.PerQueue))
	sharp := newSharpScheme("ECN♯", schemeRuns(runs[0], demo.ECNSharp))
	codel := newSharpScheme("CoDel", schemeRuns(runs[0], demo.CoDel))
	all := []sharpScheme{tail, avg, codel, sharp}

	var delays []string
	for _, d := range sharpHostDelays(sc) {
		delays = append(delays, fmt.Sprintf("%.2f ms", d.Seconds()*1e3))
	}
	rep := env.report(ecnsharpRTT(), "ecnsharp-rtt: marking under 3× RTT variation, and ECN♯ under DWRR 2:1:1 (000 §2.3, §5)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket and a %d KB buffer. "+
			"RTT variation: %d long-lived %s TCP flows with ECN, %d from each of h1–h4, to h5 through one queue; the switch holds the packets towards "+
			"h1–h4 (their ACKs) for %s, so the four senders' base RTTs spread evenly over 70–210 µs scaled (000 §2.3 and §5.2 add the delay with netem at the senders).",
			rate(r0.Rate), r0.Bucket, r0.Buffer>>10, sharpFlowsPerHost*(demo.Hosts-1), r0.CC, sharpFlowsPerHost, strings.Join(delays, ", ")),
		fmt.Sprintf("Schemes (000 §5.2's settings, scaled): DCTCP-RED-Tail marks at K = %d KB (the p90 RTT, current practice), DCTCP-RED-AVG at K = %d KB (the mean RTT); "+
			"CoDel with target %v and interval %v; ECN♯ with ins_target %v, pst_target %v and pst_interval %v (000 §3.4's rule of thumb). "+
			"Queue occupancy is the bottleneck port's backlog sampled every %v.",
			sharpKTail/1000, sharpKAvg/1000, sc.Time(sharpTarget), sc.Time(sharpInterval), sc.Time(sharpInterval), sc.Time(sharpTarget), sc.Time(sharpInterval), sampleEvery),
		fmt.Sprintf("DWRR 2:1:1 (000 §5.5, Fig. 19): three queues of quanta 2, 1 and 1 MTU, one flow each from h1, h2, h3 (no added delay), all started together, ECN♯ as above. "+
			"Each run lasts %v after %v of warm-up; each configuration runs %d times, its schemes in turn.",
			r0.Duration, r0.Warmup, len(runs[0])),
	}
	rep.Transport, rep.NonECT = hostsText(r0, sharpHosts), nonECTDrop
	rep.Scaling = sc.String() + " So the base RTTs of 70–210 µs become " + fmt.Sprintf("%v–%v", sc.Time(sharpRTTLow).Round(time.Microsecond), sc.Time(sharpRTTHigh).Round(time.Microsecond)) +
		", the time targets grow the same, and the byte thresholds (250 KB, 80 KB) stay: each is the same multiple of the bandwidth-delay product as in the paper."
	rep.Limits = []string{
		"Incast (000 §5.4, Fig. 16–17: query completion with 25 to 200 concurrent senders) is its own experiment, ecnsharp-incast.",
		"The paper drives these schemes with the web-search workload and reports FCT (Fig. 9–11) and, in simulation, the queue under query traffic (Fig. 16); " +
			"we run long-lived flows and compare the standing queue and the goodput, which is what those figures' differences come from.",
	}
	pk := func(x float64) string { return fmt.Sprintf("%.0f", x) }
	mb := func(x float64) string { return fmt.Sprintf("%.0f", x/1e6) }
	tq, sq := tail.queue.Median(), sharp.queue.Median()
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 Fig. 16", What: "mean queue occupancy, ECN♯ vs DCTCP-RED-Tail",
		Paper: "8 vs 182 packets (95.6% lower)", Ours: fmt.Sprintf("%s vs %s packets (%s)", sharp.queue.Format(pk), tail.queue.Format(pk), lowerBy(1-sq/tq, 0)),
		Loads: loadsOf(sharp.runs, tail.runs), Rule: lower("ECN♯", tq, sq, 0.5, 1),
	})
	tg, ag, sg := tail.goodput.Median(), avg.goodput.Median(), sharp.goodput.Median()
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 §2.3 Obs. 1", What: "goodput, DCTCP-RED-AVG vs DCTCP-RED-Tail",
		Paper: "K from the mean RTT loses throughput (8% longer large-flow FCT)",
		Ours:  fmt.Sprintf("%s vs %s Mbit/s (%s)", avg.goodput.Format(mb), tail.goodput.Format(mb), lowerBy(1-ag/tg, 1)),
		Loads: loadsOf(avg.runs, tail.runs), Rule: lower("AVG", tg, ag, 0.02, 0.3),
	})
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 §5.2", What: "goodput, ECN♯ vs DCTCP-RED-Tail",
		Paper: "similar (large flows' FCT within a few %)", Ours: fmt.Sprintf("%s vs %s Mbit/s (%.1f%%)", sharp.goodput.Format(mb), tail.goodput.Format(mb), 100*sg/tg),
		Loads: loadsOf(sharp.runs, tail.runs), Rule: atLeastOf("ECN♯", sg, tg, 0.95, "Tail's"),
	})
	dw, tcn := schemeRuns(runs[2], demo.ECNSharp), schemeRuns(runs[2], demo.TCN)
	most := runs[2][0].MaxGoodput()
	want := []float64{0.5, 0.25, 0.25}
	var got []float64
	var ours []string
	for q := range want {
		g := over(dw, func(s demo.SchemeResult) float64 { return s.Queues[q].Goodput })
		got = append(got, g.Median()/most)
		ours = append(ours, g.Format(mb))
	}
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 Fig. 19a", What: "ECN♯ under DWRR 2:1:1: goodput per queue",
		Paper: "4.82 / 2.40 / 2.40 Gbit/s of 9.6", Ours: strings.Join(ours, " / ") + fmt.Sprintf(" Mbit/s of %.0f", most/1e6),
		Loads: loadsOf(dw), Rule: shares(got, want, 0.1),
	})
	delay := func(s demo.SchemeResult) float64 { return float64(meanDelay(s)) }
	dd, td := over(dw, delay), over(tcn, delay)
	us := func(x float64) string { return micros(time.Duration(x)) }
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 §5.4, Fig. 19", What: fmt.Sprintf("mean queueing delay under DWRR 2:1:1, ECN♯ vs TCN (threshold %v)", sc.Time(sharpTCN).Round(time.Microsecond)),
		Paper: "ECN♯ lower: short flows' mean FCT 2341 vs 2913 µs (19.6% lower)",
		Ours:  fmt.Sprintf("%s vs %s (%s)", dd.Format(us), td.Format(us), lowerBy(1-dd.Median()/max(td.Median(), 1), 0)),
		Loads: loadsOf(dw, tcn), Rule: below("ECN♯", dd.Median(), td.Median(), "TCN"),
	})

	t := Table{
		Title:  "RTT variation: one queue, 8 flows, base RTTs " + fmt.Sprintf("%v–%v", sc.Time(sharpRTTLow).Round(time.Microsecond), sc.Time(sharpRTTHigh).Round(time.Microsecond)),
		Header: []string{"scheme", "goodput", "queue mean / p99 (packets)", "queueing delay mean / p99", "RTT mean / p99", "CE marks", "drops", "port busy"},
		Note: fmt.Sprintf("Medians of %d runs. Goodput in Mbit/s, as a share of C·1448/1538. Queue in packets of 1514 B, from the samples; "+
			"queueing delay is the switch's enqueue-to-dequeue time.", len(runs[0])),
	}
	for _, x := range all {
		m := func(f func(demo.SchemeResult) float64) float64 { return over(x.runs, f).Median() }
		g := x.goodput.Median()
		t.Rows = append(t.Rows, []string{x.title,
			fmt.Sprintf("%.0f (%.1f%%)", g/1e6, 100*g/r0.MaxGoodput()),
			fmt.Sprintf("%.0f / %.0f", x.queue.Median(), x.queueP99.Median()),
			micros(time.Duration(m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].MeanDelay) }))) + " / " +
				micros(time.Duration(m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].P99Delay) }))),
			micros(time.Duration(x.rtt.Median())) + " / " + micros(time.Duration(x.rtt9.Median())),
			fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].Marks) })),
			fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].Drops) })),
			busyRuns(x.runs)})
	}
	t2 := Table{
		Title:  "DWRR 2:1:1, ECN♯ and TCN",
		Header: []string{"scheme", "queue (weight)", "goodput (Mbit/s)", "share", "queueing delay mean / p99", "CE marks", "port busy"},
		Note:   fmt.Sprintf("Medians of %d runs.", len(runs[2])),
	}
	for _, ss := range [][]demo.SchemeResult{dw, tcn} {
		for q, w := range []int{2, 1, 1} {
			m := func(f func(demo.QueueResult) float64) float64 {
				return over(ss, func(s demo.SchemeResult) float64 { return f(s.Queues[q]) }).Median()
			}
			t2.Rows = append(t2.Rows, []string{ss[0].Title, fmt.Sprintf("%d (%d)", q+1, w),
				fmt.Sprintf("%.0f", m(func(x demo.QueueResult) float64 { return x.Goodput / 1e6 })),
				fmt.Sprintf("%.1f%%", 100*m(func(x demo.QueueResult) float64 { return x.Share })),
				micros(time.Duration(m(func(x demo.QueueResult) float64 { return float64(x.MeanDelay) }))) + " / " +
					micros(time.Duration(m(func(x demo.QueueResult) float64 { return float64(x.P99Delay) }))),
				fmt.Sprintf("%.0f", m(func(x demo.QueueResult) float64 { return float64(x.Marks) })), busyRuns(ss)})
		}
	}
	var loads []loadRow
	for i, tag := range []string{"Tail, ECN♯, CoDel", "AVG", "DWRR 2:1:1"} {
		loads = append(loads, demoLoadRows(tag, runs[i])...)
	}
	rep.Tables = []Table{t, t2, loadTable(loads)}
	rep.Plots = []Plot{{
		File:    "queue.png",
		Caption: fmt.Sprintf("The bottleneck port's queue over the measured window, sampled every %v (000 Fig. 16 plots the same for its simulation).", sampleEvery),
		Draw: func(path string) error {
			var lines []Line
			for _, x := range all {
				l := Line{Label: x.title}
				for _, smp := range x.s.Series {
					l.XY = append(l.XY, plotter.XY{X: smp.At.Seconds(), Y: float64(smp.PortBytes) / 1514})
				}
				lines = append(lines, l)
			}
			p, err := newPlot("queue occupancy", "time (s)", "packets", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 7*vg.Inch, 4*vg.Inch)
		},
	}, {
		File:    "dwrr.png",
		Caption: "Goodput of the three DWRR queues (weights 2:1:1) under ECN♯ (000 Fig. 19a).",
		Draw: func(path string) error {
			var lines []Line
			for q, w := range []int{2, 1, 1} {
				l := Line{Label: fmt.Sprintf("queue %d (weight %d)", q+1, w)}
				for _, smp := range dw[0].Series {
					l.XY = append(l.XY, plotter.XY{X: smp.At.Seconds(), Y: smp.Goodput[q] / 1e6})
				}
				lines = append(lines, l)
			}
			p, err := newPlot("DWRR 2:1:1, ECN♯", "time (s)", "goodput (Mbit/s)", lines)
			if err != nil {
				return err
			}
			p.Y.Max = max(p.Y.Max, float64(runs[2][0].Rate)/1e6)
			return saveTiles(path, 1, []*plot.Plot{p}, 6*vg.Inch, 4*vg.Inch)
		},
	}}
	return rep, nil
}
