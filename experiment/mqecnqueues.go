package experiment

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// mqecnQueues is 001's per-queue-ECN experiment (§2.2.1, Fig. 1): 8
// long-lived flows spread evenly over 1, 2, 4 and 8 equal-quantum DWRR
// queues, each queue marked at the standard threshold, against MQ-ECN.
func mqecnQueues() Experiment {
	return Experiment{
		Name:    "mqecn-queues",
		Paper:   "the MQ-ECN paper's per-queue standard-threshold experiment (001 §2.2.1, Fig. 1)",
		Summary: "8 long flows over 1, 2, 4, 8 DWRR queues: per-queue standard K vs MQ-ECN, RTT distribution",
		Run:     runQueues,
	}
}

// The experiment's setting (001 §2.2.1): 8 flows from several senders to
// one receiver, per-queue K of 16 packets. The paper's Pica8 P-3295 shares
// megabytes among its ports; a 1 MB port buffer holds 8 queues of K with
// room for their bursts, so the queues grow to what marking allows and
// not to a drop.
var queueCounts = []int{1, 2, 4, 8}

const (
	queuesFlows  = 8
	queuesK      = 16 * 1500 // bytes: "16 packets" (001 §2.2.1)
	queuesBuffer = 1 << 20   // bytes per port
)

// queueClasses spreads queuesFlows flows evenly over n queues, each
// queue's flows from its own share of the four sending hosts (or, for more
// queues than hosts, two queues a host).
func queueClasses(n int) []demo.Class {
	const senders = demo.Hosts - 1
	cs := make([]demo.Class, n)
	for q := range cs {
		cs[q].Flows = queuesFlows / n
		if n <= senders {
			for h := q * senders / n; h < (q+1)*senders/n; h++ {
				cs[q].Senders = append(cs[q].Senders, h)
			}
		} else {
			cs[q].Senders = []int{q % senders}
		}
	}
	return cs
}

// queuesHosts cites what the paper's hosts ran.
const queuesHosts = "001 §2.2.1: \"DCTCP is enabled on all the servers\" (footnote 4: DCTCP throughout the paper). " +
	"§2.2.1 states no RTO_min; the paper's testbed sets 10 ms (§5.1), and so do we."

func runQueues(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(demo.DefaultDuration)
	var runs [][]*demo.Result
	for _, n := range queueCounts {
		rs, err := env.demoRuns(ctx, demo.Options{
			Schemes: []string{demo.PerQueue, demo.MQECN}, Classes: queueClasses(n), Scheduler: scheduler.DWRR,
			K: queuesK, Buffer: queuesBuffer, Warmup: warmup, Duration: duration, Sample: sampleEvery, RTOMin: staticRTO,
		})
		if err != nil {
			return nil, fmt.Errorf("mqecn-queues: %d queues: %w", n, err)
		}
		runs = append(runs, rs)
	}
	return queuesReport(env, runs)
}

// queuesRun is what one scheme did with one number of queues, over the
// runs: each of its statistics the median of the runs'.
type queuesRun struct {
	queues    int
	s         demo.SchemeResult   // the first run, for the plots
	runs      []demo.SchemeResult // every run
	mean, p99 Runs                // of every flow's sampled smoothed RTT, ns
	delay     Runs                // the queues' mean queueing delay, weighted by goodput, ns
}

func newQueuesRun(n int, ss []demo.SchemeResult) queuesRun {
	run := queuesRun{queues: n, s: ss[0], runs: ss}
	run.mean = over(ss, func(s demo.SchemeResult) float64 { m, _ := meanP99(pooled(s)); return float64(m) })
	run.p99 = over(ss, func(s demo.SchemeResult) float64 { _, p := meanP99(pooled(s)); return float64(p) })
	run.delay = over(ss, func(s demo.SchemeResult) float64 { return float64(meanDelay(s)) })
	return run
}

// queuesReport renders the runs, the rounds of each queueCounts, as the
// report.
func queuesReport(env Env, runs [][]*demo.Result) (*Report, error) {
	if len(runs) != len(queueCounts) {
		return nil, fmt.Errorf("mqecn-queues: %d queue counts ran, want %d", len(runs), len(queueCounts))
	}
	by := map[string][]queuesRun{}
	for i, rs := range runs {
		if len(rs) == 0 {
			return nil, fmt.Errorf("mqecn-queues: no run of %d queues", queueCounts[i])
		}
		for _, r := range rs {
			if len(r.Flows) != queueCounts[i] {
				return nil, fmt.Errorf("mqecn-queues: a run has %d queues, want %d", len(r.Flows), queueCounts[i])
			}
		}
		for _, name := range []string{demo.PerQueue, demo.MQECN} {
			ss := schemeRuns(rs, name)
			if len(ss) != len(rs) {
				return nil, fmt.Errorf("mqecn-queues: %d queues: %d of %d runs lack scheme %s", queueCounts[i], len(rs)-len(ss), len(rs), name)
			}
			by[name] = append(by[name], newQueuesRun(queueCounts[i], ss))
		}
	}
	r0 := runs[0][0]
	rep := env.report(mqecnQueues(), "mqecn-queues: per-queue standard threshold vs MQ-ECN as queues multiply (001 Fig. 1)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket, DWRR with equal quanta (1 MTU), "+
			"a %d KB buffer per port. %d long-lived %s TCP flows with ECN from h1–h4 to h5, spread evenly over 1, 2, 4 and 8 queues by DSCP "+
			"(with up to 4 queues each queue's flows come from its own hosts; with 8, two queues share a host). Each scheme runs %v after %v of warm-up, "+
			"%d times (the two schemes in turn).",
			rate(r0.Rate), r0.Bucket, r0.Buffer>>10, queuesFlows, r0.CC, r0.Duration, r0.Warmup, len(runs[0])),
		fmt.Sprintf("Per-queue ECN with the standard threshold marks a packet when its queue holds K = %d B (16 packets, as the paper sets it); "+
			"MQ-ECN scales each queue's K by min(quantum/(C·T_round), 1) (001 §3.3, β = 0.75). RTT is every flow's smoothed RTT from TCP_INFO "+
			"(what `ss -ti` prints) sampled every %v, pooled over the flows; the paper pinged through an active queue.", r0.K, sampleEvery),
	}
	rep.Scaling = Scaling{PaperRate: 1e9, Rate: r0.Rate}.String() + " The paper's testbed is 1 GbE (a Pica8 P-3295 switch) with K = 16 packets per queue; " +
		"we keep K = 16 packets at 995 Mbit/s (0.5% more time per byte, not scaled)."
	rep.Transport, rep.NonECT = hostsText(r0, queuesHosts), nonECTDrop
	pq, mq := by[demo.PerQueue], by[demo.MQECN]
	last := len(queueCounts) - 1
	// growth is the ratio of a statistic's median at 8 queues to its
	// median at 1.
	growth := func(rs []queuesRun, f func(queuesRun) Runs) float64 {
		if f(rs[0]).Median() == 0 {
			return 0
		}
		return f(rs[last]).Median() / f(rs[0]).Median()
	}
	loads := func(rs ...queuesRun) []demo.Load {
		var ls []demo.Load
		for _, r := range rs {
			ls = append(ls, loadsOf(r.runs)...)
		}
		return ls
	}
	us := func(r Runs) string { return r.Format(func(x float64) string { return micros(time.Duration(x)) }) }
	mean := func(r queuesRun) Runs { return r.mean }
	p99 := func(r queuesRun) Runs { return r.p99 }
	gm, gp := growth(pq, mean), growth(pq, p99)
	mm, mp := growth(mq, mean), growth(mq, p99)
	rep.Claims = []Claim{
		{Source: "001 Fig. 1", What: "per-queue standard: mean RTT, 8 queues over 1 queue",
			Paper: "1582 / 279 µs = 5.7×", Ours: fmt.Sprintf("%s / %s = %.1f×", us(pq[last].mean), us(pq[0].mean), gm),
			Loads: loads(pq[0], pq[last]), Rule: withinFactor("growth", gm, 5.7, 2)},
		{Source: "001 Fig. 1", What: "per-queue standard: p99 RTT, 8 queues over 1 queue",
			Paper: "1850 / 375 µs = 4.9×", Ours: fmt.Sprintf("%s / %s = %.1f×", us(pq[last].p99), us(pq[0].p99), gp),
			Loads: loads(pq[0], pq[last]), Rule: withinFactor("growth", gp, 4.9, 2)},
		{Source: "001 §3.3, §5.1.1", What: "MQ-ECN: mean RTT, 8 queues over 1 queue",
			Paper: "flat: K_i = quantum_i/(C·T_round)·K keeps the port near K", Ours: fmt.Sprintf("%s / %s = %.1f×", us(mq[last].mean), us(mq[0].mean), mm),
			Loads: loads(mq[0], mq[last]), Rule: atMost("growth", mm, 1.5, "×").given(mm > 0)},
		{Source: "001 §3.3, §5.1.1", What: "MQ-ECN: p99 RTT, 8 queues over 1 queue",
			Paper: "flat", Ours: fmt.Sprintf("%s / %s = %.1f×", us(mq[last].p99), us(mq[0].p99), mp),
			Loads: loads(mq[0], mq[last]), Rule: atMost("growth", mp, 1.5, "×").given(mp > 0)},
	}
	g := over(mq[last].runs, func(s demo.SchemeResult) float64 { return s.Goodput() })
	rep.Claims = append(rep.Claims, Claim{Source: "001 §3.3", What: "MQ-ECN, 8 queues: total goodput",
		Paper: "high throughput kept (K_i never below its fair share's need)",
		Ours:  fmt.Sprintf("%s Mbit/s, %.1f%% of C·1448/1538", g.Format(func(x float64) string { return fmt.Sprintf("%.0f", x/1e6) }), 100*g.Median()/r0.MaxGoodput()),
		Loads: loads(mq[last]), Rule: atLeastOf("", g.Median(), r0.MaxGoodput(), 0.9, "C·1448/1538")})

	t := Table{
		Title:  "RTT and queueing by number of queues",
		Header: []string{"queues", "scheme", "RTT mean / p99", "queueing mean", "total goodput", "queue shares (min–max)", "CE marks", "drops", "port busy"},
		Note: fmt.Sprintf("Medians of %d runs. Goodput in Mbit/s, as a share of C·1448/1538. Queueing is the switch's enqueue-to-dequeue time, "+
			"the queues' means weighted by their goodput. Queue shares are the first run's.", len(runs[0])),
	}
	var rows []loadRow
	for i := range queueCounts {
		for _, r := range []queuesRun{pq[i], mq[i]} {
			lo, hi := 1.0, 0.0
			for _, q := range r.s.Queues {
				lo, hi = min(lo, q.Share), max(hi, q.Share)
			}
			m := func(f func(demo.SchemeResult) float64) float64 { return over(r.runs, f).Median() }
			good := m(func(s demo.SchemeResult) float64 { return s.Goodput() })
			t.Rows = append(t.Rows, []string{
				fmt.Sprint(r.queues), r.s.Title,
				micros(time.Duration(r.mean.Median())) + " / " + micros(time.Duration(r.p99.Median())), micros(time.Duration(r.delay.Median())),
				fmt.Sprintf("%.0f (%.1f%%)", good/1e6, 100*good/r0.MaxGoodput()),
				fmt.Sprintf("%.1f–%.1f%%", 100*lo, 100*hi),
				fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 {
					return float64(queueSum(s, func(q demo.QueueResult) uint64 { return q.Marks }))
				})),
				fmt.Sprintf("%.0f", m(func(s demo.SchemeResult) float64 {
					return float64(queueSum(s, func(q demo.QueueResult) uint64 { return q.Drops }))
				})),
				busyRuns(r.runs),
			})
		}
		rows = append(rows, demoLoadRows(fmt.Sprintf("%d queues", queueCounts[i]), runs[i])...)
	}
	rep.Tables = []Table{t, loadTable(rows)}
	rep.Plots = []Plot{{
		File:    "rtt.png",
		Caption: "CDF of the flows' smoothed RTT (TCP_INFO), one line per number of queues; left the per-queue standard threshold, right MQ-ECN (001 Fig. 1 shows the left).",
		Draw: func(path string) error {
			var ps []*plot.Plot
			for _, name := range []string{demo.PerQueue, demo.MQECN} {
				var lines []Line
				for _, r := range by[name] {
					lines = append(lines, cdf(fmt.Sprintf("%d queues", r.queues), pooled(r.s)))
				}
				p, err := newPlot(demo.Title(name), "smoothed RTT (µs)", "CDF", lines)
				if err != nil {
					return err
				}
				p.Legend.Top, p.Legend.Left = false, false
				ps = append(ps, p)
			}
			return saveTiles(path, 2, ps, 5*vg.Inch, 4*vg.Inch)
		},
	}, {
		File:    "rtt-mean.png",
		Caption: "Mean and p99 of the flows' smoothed RTT against the number of queues, both schemes (medians of the runs).",
		Draw: func(path string) error {
			var lines []Line
			for _, name := range []string{demo.PerQueue, demo.MQECN} {
				var m, p plotter.XYs
				for _, r := range by[name] {
					m = append(m, plotter.XY{X: float64(r.queues), Y: r.mean.Median() / 1e3})
					p = append(p, plotter.XY{X: float64(r.queues), Y: r.p99.Median() / 1e3})
				}
				lines = append(lines, Line{Label: demo.Title(name) + ", mean", XY: m}, Line{Label: demo.Title(name) + ", p99", XY: p, Dashed: true})
			}
			p, err := newPlot("RTT against queues", "queues", "smoothed RTT (µs)", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 6*vg.Inch, 4*vg.Inch)
		},
	}}
	return rep, nil
}
