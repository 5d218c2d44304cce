package experiment

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/closedloop"
	"github.com/ecnswitch/ecnswitch/demo"
)

// dxClosedLoopExperiment is DX against DCTCP in the closed loop of package
// closedloop: window-based senders in virtual time drive the switch's real
// pipeline (parse, forwarding, the shared buffer, DWRR, the shaper) on
// memory ports, with exact stamps. It needs no testbed and no root, takes
// seconds, and the same code gives the same numbers; the dx experiment is
// the same comparison with real traffic.
func dxClosedLoopExperiment() Experiment {
	return Experiment{
		Name:    "dx-closedloop",
		Paper:   "DX against DCTCP at 1 Gbit/s, in virtual time (004 §VI, Fig. 12, Fig. 13, Table III)",
		Summary: "2 and 10 DX or DCTCP flows in the closed loop (virtual time, no testbed): the bottleneck's queue, DX's error per packet",
		Virtual: true,
		Run:     runDXClosedLoop,
	}
}

// The closed loop's run: 50 ms of virtual warm-up, then 500 ms measured.
const (
	dxModelWarmup   = 50 * time.Millisecond
	dxModelDuration = 500 * time.Millisecond
	// dxModelFrame is the model's data frame in bytes: queues are shown
	// in them.
	dxModelFrame = 1514
)

// dxModelPair is one count of flows' DX and DCTCP results.
type dxModelPair struct {
	n         int
	dx, dctcp closedloop.Result
}

func runDXClosedLoop(ctx context.Context, env Env) (*Report, error) {
	duration := dxModelDuration
	if env.Duration > 0 {
		duration = env.Duration
	}
	var pairs []dxModelPair
	for _, n := range dxFlows {
		p := dxModelPair{n: n}
		for _, c := range []struct {
			cc closedloop.CC
			s  closedloop.Scheme
			r  *closedloop.Result
		}{{closedloop.DX, closedloop.Unmarked, &p.dx}, {closedloop.DCTCP, closedloop.PerPort, &p.dctcp}} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := closedloop.Run(closedloop.Scenario{Scheme: c.s, CC: c.cc, Flows: []int{n}, Warmup: dxModelWarmup, Duration: duration})
			if err != nil {
				return nil, fmt.Errorf("dx-closedloop: %v, %d flows: %w", c.cc, n, err)
			}
			*c.r = r
			env.progress("%-6s %2d flows: busy %.3f, mean queue %.2f packets", c.cc, n, r.Throughput, r.PortMean/dxModelFrame)
		}
		pairs = append(pairs, p)
	}
	return dxModelReport(env, duration, pairs), nil
}

// progress prints a progress line to env.Out, if any.
func (e Env) progress(format string, a ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", a...)
	}
}

// virtualLoads are the loads of runs in virtual time: the ports' busy
// fractions, and no machine to limit them.
func virtualLoads(busy ...float64) []demo.Load {
	ls := make([]demo.Load, len(busy))
	for i, b := range busy {
		ls[i] = demo.Load{Busy: b, WorkerCPU: -1}
	}
	return ls
}

// delayUS converts bytes at the bottleneck to µs of queueing at rate.
func delayUS(bytes float64, rate int64) float64 { return bytes * 8 / float64(rate) * 1e6 }

// dxModelReport renders the pairs, 2 flows first.
func dxModelReport(env Env, duration time.Duration, pairs []dxModelPair) *Report {
	sc := pairs[0].dx.Scenario
	rep := &Report{
		Name:    "dx-closedloop",
		Title:   "DX against DCTCP through ecnswitch, in the closed loop",
		Paper:   dxClosedLoopExperiment().Paper,
		Command: env.Command,
		Date:    env.now(),
		Setup: []string{
			fmt.Sprintf("Virtual time: the same code gives the same numbers; %v of warm-up, then %v measured per run. "+
				"The same comparison with real traffic through ecnswitch on a testbed is the dx experiment, "+
				"[docs/experiments/dx](../dx/report.md).", dxModelWarmup, duration),
			fmt.Sprintf("N long-lived flows share one %d Mbit/s bottleneck port of ecnswitch's real pipeline (parse, forwarding, "+
				"the shared buffer, DWRR, the shaper) with a %v base RTT, in package closedloop's closed loop. "+
				"**DCTCP** (g = 1/16) runs against RED cut-off marking at K = C·RTT = %d bytes (%.1f packets; 004 §VI sets "+
				"K = 20 packets at 1 Gbit/s). **DX** (004 §IV-B, `transport.DX`, headroom 0: the model's stamps are exact) "+
				"runs against an unmarked port: each ACK's queueing delay comes from the one-way delay t2 − t1 and the RTT "+
				"through `timestamp.Delay` (004 §III), against a receiver clock 3 s behind the senders' and drifting "+
				"40 ns/ms, which the OWD_base tracking has to see through.",
				sc.Rate/1_000_000, sc.RTT, sc.K(), float64(sc.K())/dxModelFrame),
			fmt.Sprintf("The queue is the bottleneck port's occupancy sampled every %v, in %d-byte frames; its delay is "+
				"bytes·8/C. \"Busy\" is the port's utilisation, delivered bytes over C·duration.",
				closedloop.DefaultSample, dxModelFrame),
		},
		Scaling: "None: the model runs at the paper's 1 Gbit/s.",
	}
	rep.Claims = dxModelClaims(pairs)
	rep.Tables = dxModelTables(pairs)
	rep.Plots = dxModelPlots(pairs)
	rep.Limits = []string{
		"The model's stamps are exact, so DX needs no headroom and its queue is shorter than on the paper's software " +
			"stamps (σ ≈ 2 µs); the dx experiment measures with the kernel's stamps.",
		"The return path is modelled in the senders, not sent through the switch, and nothing is retransmitted: " +
			"the closed loop measures the queue the window laws build, not a transport's recovery.",
		"DCTCP's flows are synchronised in the model, so its queue sits at K.",
	}
	return rep
}

// dxModelClaims sets the paper's two-flow numbers beside the model's.
func dxModelClaims(pairs []dxModelPair) []Claim {
	two := pairs[0]
	rate := two.dx.Scenario.Rate
	busy := virtualLoads(two.dx.Throughput, two.dctcp.Throughput)
	dm, cm := delayUS(two.dx.PortMean, rate), delayUS(two.dctcp.PortMean, rate)
	dmed, cmed := two.dx.PortMedian/dxModelFrame, two.dctcp.PortMedian/dxModelFrame
	dmax, cmax := two.dx.PortMax/dxModelFrame, two.dctcp.PortMax/dxModelFrame
	cs := []Claim{
		{
			Source: "004 Fig. 13, Table III", What: "mean queueing delay, DX vs DCTCP, 2 flows",
			Paper: fmt.Sprintf("%.1f vs %.1f µs (%.2f×)", paperDXMean, paperDCTCPMean, paperDCTCPMean/paperDXMean),
			Ours:  fmt.Sprintf("%.1f vs %.1f µs (%.2f×)", dm, cm, cm/max(dm, 1e-3)),
			Loads: busy, Rule: atLeastOf("DCTCP's mean", cm, dm, 2, "DX's"),
		},
		{
			Source: "004 Table III", What: "median queue, DX vs DCTCP, 2 flows",
			Paper: fmt.Sprintf("%d vs %d pkt", paperDXMedian, paperDCTCPMedian),
			Ours:  fmt.Sprintf("%.0f vs %.0f pkt", dmed, cmed),
			Loads: busy, Rule: atLeastOf("DCTCP's median", cmed, dmed, 2, "DX's"),
		},
		{
			Source: "004 Table III", What: "max queue, DX vs DCTCP, 2 flows",
			Paper: fmt.Sprintf("%d vs %d pkt", paperDXMax, paperDCTCPMax),
			Ours:  fmt.Sprintf("%.0f vs %.0f pkt", dmax, cmax),
			Loads: busy, Rule: below("DX's max", dmax, cmax, "DCTCP's"),
		},
	}
	for _, p := range pairs {
		cs = append(cs, Claim{
			Source: "004 §VI", What: fmt.Sprintf("utilisation, DX vs DCTCP, %d flows (both saturate the link)", p.n),
			Paper: "both ≈ 100%", Ours: fmt.Sprintf("%.1f%% vs %.1f%% busy", 100*p.dx.Throughput, 100*p.dctcp.Throughput),
			Loads: virtualLoads(p.dx.Throughput, p.dctcp.Throughput),
			Rule:  atLeastOf("DX's busy", p.dx.Throughput, p.dctcp.Throughput, 0.95, "DCTCP's"),
		})
	}
	if e := two.dx.DXErrors; len(e) > 0 {
		sd := stddev(e)
		cs = append(cs, Claim{
			Source: "004 Fig. 12", What: "σ of DX's queueing delay per packet against the switch's sojourn, 2 flows",
			Paper: "1.98 µs (software stamps), 0.53 µs (hardware)", Ours: fmt.Sprintf("%.0f ns (exact stamps)", sd),
			Loads: virtualLoads(two.dx.Throughput), Rule: atMost("σ", sd, 530, " ns").because("the paper's 0.53 µs with hardware stamps"),
		})
	}
	return cs
}

// dxModelTables are the report's tables: the queue per run, and DX's
// error per packet.
func dxModelTables(pairs []dxModelPair) []Table {
	var rows, arows [][]string
	for _, p := range pairs {
		for _, r := range []closedloop.Result{p.dx, p.dctcp} {
			measured := "—"
			if r.DXQueueMean > 0 || r.Scenario.CC == closedloop.DX {
				measured = fmt.Sprintf("%.1f µs", float64(r.DXQueueMean)/1e3)
			}
			rows = append(rows, []string{
				fmt.Sprint(p.n), r.Scenario.CC.String(), Busy(r.Throughput),
				fmt.Sprintf("%.2f pkt", r.PortMean/dxModelFrame), fmt.Sprintf("%.1f µs", delayUS(r.PortMean, r.Scenario.Rate)),
				fmt.Sprintf("%.0f pkt", r.PortMedian/dxModelFrame), fmt.Sprintf("%.0f pkt", r.PortP99/dxModelFrame),
				fmt.Sprintf("%.0f pkt", r.PortMax/dxModelFrame), measured,
			})
		}
		if e := p.dx.DXErrors; len(e) > 0 {
			arows = append(arows, []string{
				fmt.Sprint(p.n), fmt.Sprint(len(e)), fmt.Sprintf("%d ns", quantile(e, 0.5)),
				fmt.Sprintf("%d ns", quantile(e, 0.99)), fmt.Sprintf("%d ns", slices.Max(e)), fmt.Sprintf("%.0f ns", stddev(e)),
			})
		}
	}
	return []Table{
		{
			Title:  "The bottleneck port, per run",
			Header: []string{"flows", "CC", "busy", "mean queue", "mean delay", "median", "p99", "max", "DX-measured mean delay"},
			Rows:   rows,
			Note: "Queue lengths are rounded to whole frames in the median, p99 and max columns (a sample between frames " +
				"is a frame in service). The DX-measured column is what the flows computed from one-way delays.",
		},
		{
			Title:  "Accuracy: each DX flow's queueing delay for a packet, from its one-way delay, minus the bottleneck's own sojourn for the same packet (a tap on the port, matched by flow and sequence number)",
			Header: []string{"flows", "packets matched", "median", "p99", "max", "σ"},
			Rows:   arows,
			Note: "The error is the clock drift since OWD_base was last re-taken (tens of ns at 40 ns/ms), or one frame's " +
				"wait on the 10 Gbit/s host link the flows share (1.2 µs): queueing the switch never sees, which DX rightly " +
				"counts. The model's stamps are exact, so this is the estimator's own error, not a stamp's.",
		},
	}
}

// dxModelPlots are the report's plots: the queue over the first 20 ms of
// the measurement, and the CDF of its delay.
func dxModelPlots(pairs []dxModelPair) []Plot {
	return []Plot{
		{File: "queue-time.png", Caption: "The bottleneck's queue over the first 20 ms of the measurement.", Draw: func(path string) error {
			n := int(20 * time.Millisecond / closedloop.DefaultSample)
			var ps []*plot.Plot
			for _, pr := range pairs {
				var lines []Line
				for _, r := range []closedloop.Result{pr.dx, pr.dctcp} {
					xy := make(plotter.XYs, 0, n)
					for k, v := range r.PortSamples[:min(n, len(r.PortSamples))] {
						xy = append(xy, plotter.XY{X: float64(k) * float64(closedloop.DefaultSample) / 1e6, Y: float64(v) / dxModelFrame})
					}
					lines = append(lines, Line{Label: r.Scenario.CC.String(), XY: xy})
				}
				p, err := newPlot(fmt.Sprintf("%d flows, 1 Gbit/s", pr.n), "time (ms)", "queue (packets)", lines)
				if err != nil {
					return err
				}
				p.Y.Max *= 1.3 // room for the legend above the lines
				ps = append(ps, p)
			}
			return saveTiles(path, 2, ps, 12*vg.Centimeter, 8*vg.Centimeter)
		}},
		{File: "queue-cdf.png", Caption: "CDF of the bottleneck's queueing delay over the whole measurement.", Draw: func(path string) error {
			var lines []Line
			for _, pr := range pairs {
				for _, r := range []closedloop.Result{pr.dx, pr.dctcp} {
					ds := make([]time.Duration, len(r.PortSamples))
					for i, v := range r.PortSamples {
						ds[i] = time.Duration(float64(v) * 8 * 1e9 / float64(r.Scenario.Rate))
					}
					l := cdf(fmt.Sprintf("%v, %d flows", r.Scenario.CC, pr.n), ds)
					l.Dashed = r.Scenario.CC == closedloop.DCTCP
					lines = append(lines, l)
				}
			}
			p, err := newPlot("queueing delay at the bottleneck", "µs", "CDF", lines)
			if err != nil {
				return err
			}
			p.Legend.Top, p.Legend.Left = false, false // below right, clear of the steps
			return saveTiles(path, 1, []*plot.Plot{p}, 14*vg.Centimeter, 9*vg.Centimeter)
		}},
	}
}
