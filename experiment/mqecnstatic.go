package experiment

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
)

// mqecnStatic is 001's static-flow experiment (§2.2.3, §5.1.1; Fig. 3 and
// Fig. 6) with every scheme of the papers on the same port: package demo's
// run, at 1 flow : 4 flows and 1 : 8.
func mqecnStatic() Experiment {
	return Experiment{
		Name:    "mqecn-static",
		Paper:   "the MQ-ECN paper's static-flow experiment (001 §2.2.3 and §5.1.1, Fig. 3 and Fig. 6)",
		Summary: "2 equal-quantum DWRR queues, 1 flow against 4 and 8: per-port, per-queue standard and minimum, MQ-ECN, PMSB, TCN, ECN♯",
		Run:     runStatic,
	}
}

// staticFlows are the flow counts of the two services the experiment runs.
var staticFlows = [][2]int{{1, 4}, {1, 8}}

// staticSchemes are the schemes the experiment compares, in order.
var staticSchemes = []string{demo.PerPort, demo.PerQueue, demo.MQECN, demo.QueueMinimum, demo.PMSB, demo.TCN, demo.ECNSharp}

// staticRTO is the hosts' least RTO: the MQ-ECN testbed's (001 §5.1).
const staticRTO = 10 * time.Millisecond

// staticHosts cites what the MQ-ECN paper's hosts ran.
const staticHosts = "001 §2.2.1 footnote 4: \"we choose DCTCP as the transport protocol for all experiments\"; " +
	"§5.1: \"DCTCP is enabled. We set TCP RTOmin to 10ms\"."

func runStatic(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(demo.DefaultDuration)
	var runs [][]*demo.Result
	for _, f := range staticFlows {
		rs, err := env.demoRuns(ctx, demo.Options{
			Schemes: staticSchemes, Flows: f, Warmup: warmup, Duration: duration, Sample: sampleEvery, RTOMin: staticRTO,
		})
		if err != nil {
			return nil, fmt.Errorf("mqecn-static: %d : %d flows: %w", f[0], f[1], err)
		}
		runs = append(runs, rs)
	}
	return staticReport(env, runs)
}

// staticReport renders the runs, the rounds of each staticFlows, as the
// report.
func staticReport(env Env, runs [][]*demo.Result) (*Report, error) {
	if len(runs) != len(staticFlows) {
		return nil, fmt.Errorf("mqecn-static: %d flow counts ran, want %d", len(runs), len(staticFlows))
	}
	for i, rs := range runs {
		if len(rs) == 0 {
			return nil, fmt.Errorf("mqecn-static: no run of %d : %d flows", staticFlows[i][0], staticFlows[i][1])
		}
		for j, r := range rs {
			for _, s := range []string{demo.PerPort, demo.PerQueue, demo.MQECN} {
				if _, ok := scheme(r, s); !ok {
					return nil, fmt.Errorf("mqecn-static: %d : %d flows, run %d lacks scheme %s", staticFlows[i][0], staticFlows[i][1], j+1, s)
				}
			}
		}
	}
	r0 := runs[0][0]
	rep := env.report(mqecnStatic(), "mqecn-static: per-port vs per-queue marking on two DWRR queues (001 Fig. 3, Fig. 6)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts (network namespaces, veth pairs) on an ecnswitch with AF_XDP ports. Every egress port is the MQ-ECN testbed's (001 §5.1): "+
			"shaped to %s (99.5%% of 1 Gbit/s, the prototype's rate limiter, 001 §4.2) with a %d B token bucket, two DWRR queues of equal quantum (1 MTU), "+
			"a %d KB buffer the queues share first come first served, and the standard threshold K = %d KB.",
			rate(r0.Rate), r0.Bucket, r0.Buffer>>10, r0.K>>10),
		fmt.Sprintf("Host h1 sends service 1's flows (DSCP CS1, queue 1), hosts h2–h4 service 2's (CS2, queue 2), all long-lived %s TCP with ECN to h5, whose port is the bottleneck. "+
			"Each scheme runs %v after %v of warm-up, %d times (the schemes in turn, round after round), with 1 flow against 4 and with 1 against 8. "+
			"The switch worker runs on a CPU of its own, the hosts' TCP and receive processing on the other (node.Demo's placement).", r0.CC, r0.Duration, r0.Warmup, len(runs[0])),
		"Schemes, all from K = λ·C·RTT with λ = 1 (so RTT = K/C = 263 µs): per-port ECN (port ≥ K, enqueue); per-queue ECN with the standard threshold (queue ≥ K) " +
			"and with the minimum threshold (queue ≥ K/2, 001 Eq. 2); MQ-ECN (queue ≥ min(quantum/T_round, C)/C·K, β = 0.75, 001 §3.3); PMSB (port ≥ K and queue ≥ K/2, " +
			"enqueue, 003 Algorithm 1); TCN (sojourn > K/C, dequeue); ECN♯ (ins_target = pst_target = pst_interval = K/C, dequeue, 000 §3.4 with one base RTT).",
		"Goodput is the TCP payload the receiver read. RTT is each flow's smoothed RTT as its sender's TCP keeps it (TCP_INFO, what `ss -ti` prints), " +
			fmt.Sprintf("sampled every %v; queueing delay is the switch's enqueue-to-dequeue time of every packet (p99 within the histogram's 25%% bucket).", sampleEvery),
	}
	rep.Scaling = Scaling{PaperRate: r0.Rate, Rate: r0.Rate}.String() + " The MQ-ECN testbed is 1 GbE with a 995 Mbit/s rate limiter, K = 32 KB and β = 0.75 (001 §5.1), as here. " +
		"Its base RTT is ∼250 µs; the testbed's is what the table's base-RTT column shows (the lowest RTT TCP saw), so our RTTs are mostly queueing delay."
	rep.Transport, rep.NonECT = hostsText(r0, staticHosts), nonECTDrop
	rep.Limits = []string{
		"The paper measured service 2's RTT with ping through its queue (Fig. 6(b)); we use the senders' own smoothed RTT, which includes delayed ACKs and is sampled, not per packet.",
	}
	rep.Claims = staticClaims(runs)
	var loads []loadRow
	for i, rs := range runs {
		r := rs[0]
		tag := fmt.Sprintf("%dto%d", r.Flows[0], r.Flows[1])
		rep.Tables = append(rep.Tables, staticTable(rs))
		loads = append(loads, demoLoadRows(fmt.Sprintf("1 : %d", r.Flows[1]), rs)...)
		rep.Plots = append(rep.Plots,
			Plot{File: "goodput-" + tag + ".png", Caption: fmt.Sprintf("Goodput of each service over the measured window, %d flow : %d flows, every %v, one panel per scheme.", r.Flows[0], r.Flows[1], sampleEvery),
				Draw: func(path string) error { return plotGoodput(runs[i][0], path) }},
			Plot{File: "rtt-" + tag + ".png", Caption: fmt.Sprintf("CDF of the flows' smoothed RTT (TCP_INFO) per service and scheme, %d flow : %d flows.", r.Flows[0], r.Flows[1]),
				Draw: func(path string) error { return plotRTT(runs[i][0], path) }},
		)
	}
	rep.Tables = append(rep.Tables, loadTable(loads))
	return rep, nil
}

// staticClaims sets the paper's numbers beside ours: each the median of
// the runs.
func staticClaims(runs [][]*demo.Result) []Claim {
	r4, r8 := runs[0], runs[1]
	port4, port8 := schemeRuns(r4, demo.PerPort), schemeRuns(r8, demo.PerPort)
	pq4, mq4, mq8 := schemeRuns(r4, demo.PerQueue), schemeRuns(r4, demo.MQECN), schemeRuns(r8, demo.MQECN)
	goodput := func(ss []demo.SchemeResult, q int) Runs {
		return over(ss, func(s demo.SchemeResult) float64 { return s.Queues[q].Goodput / 1e6 })
	}
	ratios := func(ss []demo.SchemeResult) Runs { return over(ss, ratio) }
	split := func(ss []demo.SchemeResult) string {
		return fmt.Sprintf("%.0f : %.0f Mbit/s, ratio %s", goodput(ss, 1).Median(), goodput(ss, 0).Median(), fmtRuns(ratios(ss), "%.2f"))
	}
	fair := func(source, what string, ss []demo.SchemeResult, paper string) Claim {
		return Claim{
			Source: source, What: what, Paper: paper, Ours: split(ss),
			Loads: loadsOf(ss), Rule: inRange("ratio", ratios(ss).Median(), 0.8, 1.25),
		}
	}
	share := func(ss []demo.SchemeResult) Runs {
		return over(ss, func(s demo.SchemeResult) float64 { return s.Queues[1].Share })
	}
	share8, share4 := share(port8), share(port4)
	pct := func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
	var cs []Claim
	cs = append(cs, Claim{
		Source: "001 Fig. 3(a)", What: "per-port ECN, 1 : 4 flows: service 2 : service 1 goodput",
		Paper: "539 : 403 Mbit/s = 1.34", Ours: split(port4),
		Loads: loadsOf(port4), Rule: inRange("ratio", ratios(port4).Median(), 1.1, 2.7).because("above 1, within 2× of 1.34"),
	}, Claim{
		Source: "001 Fig. 3(b)", What: "per-port ECN, 1 : 8 flows: the 8-flow service's goodput",
		Paper: "688 Mbit/s, up from 539 at 1 : 4",
		Ours: fmt.Sprintf("%.0f Mbit/s (%s of the total), up from %.0f (%s)",
			goodput(port8, 1).Median(), share8.Format(pct), goodput(port4, 1).Median(), share4.Format(pct)),
		Loads: loadsOf(port4, port8),
		Rule:  above("share", share8.Median(), share4.Median(), "1 : 4's").and(atLeast("", share8.Median(), 0.6, "%")),
	},
		fair("001 §5.1.1", "per-queue standard, 1 : 4 flows: service 2 : service 1 goodput", pq4, "≈ 1 (\"quite similar to Fig. 6(a)\")"),
		fair("001 Fig. 6(a)", "MQ-ECN, 1 : 4 flows: service 2 : service 1 goodput", mq4, "≈ 1 (both services roughly the same goodput)"),
	)
	total := over(mq4, func(s demo.SchemeResult) float64 { return s.Goodput() })
	most := r4[0].MaxGoodput()
	cs = append(cs, Claim{
		Source: "001 §5.1.1", What: "MQ-ECN, 1 : 4 flows: total goodput",
		Paper: "∼936 Mbit/s (\"fully utilize the link\")",
		Ours: fmt.Sprintf("%s Mbit/s, %.1f%% of C·1448/1538", total.Format(func(x float64) string { return fmt.Sprintf("%.0f", x/1e6) }),
			100*total.Median()/most),
		Loads: loadsOf(mq4), Rule: atLeastOf("", total.Median(), most, 0.9, "C·1448/1538"),
	})
	// The paper's RTTs sit on a ∼250 µs base, which dilutes the halved
	// queue to −32%; on the testbed's ∼50 µs base the same halving shows
	// nearly whole, so the upper bound is the queueing delay's, not the RTT's.
	reduction := func(source, what, paper string, lo, hi float64, f func(demo.SchemeResult) float64) Claim {
		a, b := over(pq4, f), over(mq4, f)
		am, bm := a.Median(), b.Median()
		us := func(x float64) string { return fmt.Sprintf("%.0f", x/1e3) }
		return Claim{
			Source: source, What: what, Paper: paper,
			Ours:  fmt.Sprintf("%s vs %s µs (%s)", b.Format(us), a.Format(us), lowerBy(1-bm/am, 0)),
			Loads: loadsOf(pq4, mq4), Rule: lower("MQ-ECN", am, bm, lo, hi).because(rtLimit),
		}
	}
	meanRTT := func(s demo.SchemeResult) float64 { m, _ := meanP99(s.RTTs[1]); return float64(m) }
	p99RTT := func(s demo.SchemeResult) float64 { _, p := meanP99(s.RTTs[1]); return float64(p) }
	delay := func(s demo.SchemeResult) float64 { return float64(s.Queues[1].MeanDelay) }
	cs = append(cs,
		reduction("001 Fig. 6(b)", "service 2's mean RTT, MQ-ECN vs per-queue standard, 1 : 4", "441 vs 651 µs (−32%)", 0.1, 0.8, meanRTT),
		reduction("001 Fig. 6(b)", "service 2's p99 RTT, MQ-ECN vs per-queue standard, 1 : 4", "536 vs 782 µs (−31.5%)", 0.1, 0.8, p99RTT),
		reduction("001 §5.1.1", "service 2's mean queueing delay, MQ-ECN vs per-queue standard, 1 : 4", "∼50% less (RTT − the ∼250 µs base)", 0.25, 0.75, delay),
		fair("001 §5.1.1", "MQ-ECN, 1 : 8 flows: service 2 : service 1 goodput", mq8, "≈ 1 (\"strictly preserves weighted fair sharing\")"),
	)
	return cs
}

// rtLimit explains the upper bounds of the RTT reductions.
const rtLimit = "the paper's ∼250 µs base RTT dilutes its reduction; ours is ∼50 µs"

// staticTable is one flow count's schemes, a row each, every number the
// median of the runs.
func staticTable(rs []*demo.Result) Table {
	r := rs[0]
	t := Table{
		Title: fmt.Sprintf("1 flow : %d flows", r.Flows[1]),
		Header: []string{"scheme", "service 1", "service 2", "2 : 1", "total", "base RTT", "RTT 1 mean / p99", "RTT 2 mean / p99",
			"queueing 2 mean / p99", "CE marks 1 / 2", "drops", "port busy"},
		Note: fmt.Sprintf("Medians of %d runs. Goodput in Mbit/s; total as a share of C·1448/1538, the most TCP payload the port can carry. "+
			"Drops are the bottleneck's in the window; the table of where each run's time went gives them by reason.", len(rs)),
	}
	for _, s := range r.Schemes {
		ss := schemeRuns(rs, s.Scheme)
		m := func(f func(demo.SchemeResult) float64) float64 { return over(ss, f).Median() }
		us := func(f func(demo.SchemeResult) time.Duration) string {
			return micros(time.Duration(m(func(s demo.SchemeResult) float64 { return float64(f(s)) })))
		}
		rtt := func(q int, p99 bool) func(demo.SchemeResult) time.Duration {
			return func(s demo.SchemeResult) time.Duration {
				mean, p := meanP99(s.RTTs[q])
				if p99 {
					return p
				}
				return mean
			}
		}
		total := m(func(s demo.SchemeResult) float64 { return s.Goodput() })
		t.Rows = append(t.Rows, []string{
			s.Title,
			fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return s.Queues[0].Goodput / 1e6 })),
			fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return s.Queues[1].Goodput / 1e6 })),
			fmt.Sprintf("%.2f", m(ratio)),
			fmt.Sprintf("%.0f (%.1f%%)", total/1e6, 100*total/r.MaxGoodput()),
			us(func(s demo.SchemeResult) time.Duration { return min(s.Queues[0].MinRTT, s.Queues[1].MinRTT) }),
			us(rtt(0, false)) + " / " + us(rtt(0, true)),
			us(rtt(1, false)) + " / " + us(rtt(1, true)),
			us(func(s demo.SchemeResult) time.Duration { return s.Queues[1].MeanDelay }) + " / " + us(func(s demo.SchemeResult) time.Duration { return s.Queues[1].P99Delay }),
			fmt.Sprintf("%.0f / %.0f", m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].Marks) }), m(func(s demo.SchemeResult) float64 { return float64(s.Queues[1].Marks) })),
			fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 { return float64(s.Queues[0].Drops + s.Queues[1].Drops) })),
			busyRuns(ss),
		})
	}
	return t
}

func plotGoodput(r *demo.Result, path string) error {
	var ps []*plot.Plot
	for _, s := range r.Schemes {
		var lines [2]Line
		for q := range lines {
			lines[q].Label = fmt.Sprintf("service %d (%s)", q+1, flows(r.Flows[q]))
			for _, x := range s.Series {
				lines[q].XY = append(lines[q].XY, plotter.XY{X: x.At.Seconds(), Y: x.Goodput[q] / 1e6})
			}
		}
		p, err := newPlot(s.Title, "time (s)", "goodput (Mbit/s)", lines[:])
		if err != nil {
			return err
		}
		p.Y.Max = max(p.Y.Max, float64(r.Rate)/1e6)
		ps = append(ps, p)
	}
	return saveTiles(path, 4, ps, 4*vg.Inch, 3*vg.Inch)
}

func plotRTT(r *demo.Result, path string) error {
	var ps []*plot.Plot
	for q := range 2 {
		var lines []Line
		for _, s := range r.Schemes {
			l := cdf(s.Title, s.RTTs[q])
			l.Dashed = len(lines) >= 4 // plotutil has fewer colors than schemes
			lines = append(lines, l)
		}
		p, err := newPlot(fmt.Sprintf("service %d (%s)", q+1, flows(r.Flows[q])), "smoothed RTT (µs)", "CDF", lines)
		if err != nil {
			return err
		}
		p.Legend.Top, p.Legend.Left = false, false
		ps = append(ps, p)
	}
	return saveTiles(path, 2, ps, 5*vg.Inch, 4*vg.Inch)
}

// ratio returns service 2's goodput over service 1's, +Inf if service 1
// had none.
func ratio(s demo.SchemeResult) float64 {
	if s.Queues[0].Goodput == 0 {
		return math.Inf(1)
	}
	return s.Queues[1].Goodput / s.Queues[0].Goodput
}
