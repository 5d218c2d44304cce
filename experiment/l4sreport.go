package experiment

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
)

// l4sCoupling is k, RFC 9332's and tc-dualpi2's default coupling factor.
const l4sCoupling = marking.PI2DefaultCoupling

// l4sModelRatio is the per-flow rate of a scalable flow over a Reno
// flow's through a DualQ that couples with k = 2, by the rate equations
// RFC 9332 §2.1 builds on — W_L = 2/p_L = 2/(k·p′) for the scalable
// flow, W_C = 1.22/√p_C = 1.22/p′ for Reno — at RTTs of the base RTT
// plus each queue's delay: 15 ms of Classic queue (PI2's target) and
// about 0.5 ms of L queue. k = 2 makes the windows nearly equal; the
// rates then differ by the RTTs, which the coupling does not correct.
func l4sModelRatio() float64 {
	rttC := l4sRTTModel + time.Duration(marking.PI2DefaultTarget)
	rttL := l4sRTTModel + 500*time.Microsecond
	return (2 / l4sCoupling) / 1.22 * rttC.Seconds() / rttL.Seconds()
}

// l4sAt returns the runs of scheme with mix, in the order they ran.
func l4sAt(runs []*l4sRun, scheme string, mix [2]int) []*l4sRun {
	var rs []*l4sRun
	for _, r := range runs {
		if r.scheme == scheme && r.mix == mix {
			rs = append(rs, r)
		}
	}
	return rs
}

// busyOf returns the runs' port-busy fractions.
func busyOf(rs []*l4sRun) []float64 {
	b := make([]float64, len(rs))
	for i, r := range rs {
		b[i] = r.busy
	}
	return b
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func msText(x float64) string    { return fmt.Sprintf("%.2f ms", x) }
func ratioText(x float64) string { return fmt.Sprintf("%.2f", x) }
func pctText(x float64) string   { return fmt.Sprintf("%.3g%%", 100*x) }
func mbitText(x float64) string  { return fmt.Sprintf("%.0f", x/1e6) }

// l4sReport renders the runs: every scheme with every mix, one or more
// runs each.
func l4sReport(env Env, o demo.Options, warmup, duration time.Duration, runs []*l4sRun) (*Report, error) {
	for _, s := range l4sSchemes {
		for _, mix := range l4sMixes {
			if len(l4sAt(runs, s, mix)) == 0 {
				return nil, fmt.Errorf("l4s-coexist: no run of %s with %s flows", l4sTitle(s), mixName(mix))
			}
		}
	}
	n := len(l4sAt(runs, l4sDualQ, l4sMixes[0]))
	rep := env.report(l4sCoexist(), "l4s-coexist: scalable and Classic flows through a DualQ Coupled AQM (RFC 9332)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket and a %d MB buffer. "+
			"h1 and h2 send the scalable flows, h3 and h4 the Classic ones, all to h5, whose port is the bottleneck. The ports towards h1–h4 hold every packet %v "+
			"(the receiver's ACKs): each flow's base RTT is %v plus the testbed's tens of µs, an Internet-like RTT for which tc-dualpi2's defaults are made.",
			rate(o.Rate), o.Bucket, l4sBuffer>>20, l4sAckDelay, l4sAckDelay),
		fmt.Sprintf("Scalable flows: kernel TCP with testbed/dctcp's DCTCP (α per window, cwnd·(1 − α/2) once per window, BPF struct_ops), whose packets a tc egress program "+
			"on every host (testbed/ect1) rewrites from ECT(0) to ECT(1) for port %d, so that they are L4S packets (RFC 9331 §4.1). Classic flows: cubic with ECN (tcp_ecn = 1, ECT(0)) to port %d. "+
			"Every flow is paced by TCP's own pacing (SO_MAX_PACING_RATE at C: 1.2·cwnd/RTT, twice that in slow start), as TCP Prague paces. "+
			"Every flow connects before any sends; long-lived flows run %v of warm-up, then %v measured; %s run %d times.",
			l4sPortL, l4sPortC, warmup, duration, "every scheme and mix", n),
		fmt.Sprintf("Bottleneck schemes. **%s**: a DualQ port (RFC 9332 §2.4, Appendix A.1) at tc-dualpi2's defaults: L queue for ECT(1) and CE, C queue for ECT(0) and Not-ECT, "+
			"PI2 on the C queue's delay (target 15 ms, tupdate 16 ms, α 0.16 Hz, β 3.2 Hz), p_C = (p′)², the L queue marked with max(step at 1 ms, k·p′), k = 2, "+
			"10%% WRR protection for C, drop on overload. **%s**: one queue with PI2 at the same defaults, coupled within it (ecn_mask l4s_ect, RFC 9332 §2.1): "+
			"ECT(1) packets marked with k·p′, the others with (p′)². **%s**: one queue, every packet marked at enqueue while the queue holds %d KB or more, "+
			"DCTCP's K = C·RTT/7 at the %v base RTT (Alizadeh et al. §3.4).",
			l4sTitle(l4sDualQ), l4sTitle(l4sPI2), l4sTitle(l4sRED), l4sK(o.Rate)>>10, l4sAckDelay),
		"Goodput is the TCP payload each flow's receiver read in the window. Queueing delay is the switch's enqueue-to-dequeue time of every data packet of each class at the bottleneck " +
			"(a tap, which tells the classes apart by destination port, also in one queue); marks are the packets it sent CE, drops those it dropped, per class. " +
			"RTT is the senders' smoothed RTT (TCP_INFO), sampled every 250 ms. Each number is the median over the runs; a ratio prints its range and count.",
	}
	rep.Scaling = fmt.Sprintf("tc-dualpi2's defaults are stated for 1 Gbit/s (step at 1 ms: the L queue's p99 \"of the order of 1 ms at 1 Gbit/s\"); the testbed's %s is that rate, so every constant is used as it is. "+
		"The RTTs are the Internet's, not a datacenter's: the switch holds the ACKs %v.", rate(o.Rate), l4sAckDelay)
	rep.Claims = l4sClaims(runs)
	for _, s := range l4sSchemes {
		rep.Tables = append(rep.Tables, l4sTable(runs, s))
	}
	for _, mix := range l4sMixes {
		rep.Plots = append(rep.Plots, Plot{
			File:    fmt.Sprintf("delay-%dto%d.png", mix[clsL], mix[clsC]),
			Caption: fmt.Sprintf("Queueing delay of each class's packets at the bottleneck, %s scalable : Classic flows, mean per %v, first run; one panel per scheme.", mixName(mix), l4sBin),
			Draw:    func(path string) error { return l4sPlotDelay(runs, mix, path) },
		})
	}
	rep.Limits = []string{
		"The scalable flows are DCTCP with ECT(1) set on the wire, TCP Prague's base but not Prague: no RTT independence, Linux's pacing at 1.2·cwnd/RTT rather than Prague's cwnd/RTT, no fallback on a Classic ECN bottleneck, " +
			"and RFC 3168 feedback (DCTCP's receiver echoes every change of CE) rather than AccECN. Linux 6.18 cannot send ECT(1) data from TCP (testbed/ect1's package doc says what it allowed).",
		fmt.Sprintf("The base RTT is emulated on the ACK path only (the switch holds the ACKs %v); the data path has the testbed's tens of µs. Both classes have the same base RTT.", l4sAckDelay),
		"At a 25 ms Classic RTT and 1 Gbit/s a cubic flow's sawtooth lasts seconds, not much shorter than the measured window: single runs move, and the verdicts rest on medians.",
		"One CPU runs every host's TCP (node.Demo's placement); the worker has the other. On a loaded machine the port idles when the hosts fall behind: see the busy column.",
	}
	var missed, gaps uint64
	var gapTime, measured, longest time.Duration
	for _, r := range runs {
		missed += r.missed
		gaps += r.gaps
		gapTime += r.gapTime
		measured += r.elapsed
		longest = max(longest, r.longest)
	}
	if gaps > 0 {
		rep.Limits = append(rep.Limits, fmt.Sprintf("Over all runs the switch saw %d silences of %v or more in its arrivals while the flows ran, %.1f%% of the measured time, the longest %s: "+
			"the worker or the hosts were off their CPUs, and what the hosts sent meanwhile reached the queue as one burst. Such bursts, not the AQMs, make queueing delays "+
			"of the order of the silences in both classes, and marks with them.", gaps, l4sGap, 100*gapTime.Seconds()/measured.Seconds(), msText(ms(longest))))
	}
	if missed > 0 {
		rep.Limits = append(rep.Limits, fmt.Sprintf("The delay tap had no room for %d packets over all runs; the delays describe the others.", missed))
	}
	return rep, nil
}

// l4sClaims are the claims and their rules, fixed before the run.
func l4sClaims(runs []*l4sRun) []Claim {
	model := l4sModelRatio()
	var cs []Claim
	for _, mix := range l4sMixes {
		rs := l4sAt(runs, l4sDualQ, mix)
		ratio := over(rs, (*l4sRun).ratio)
		cs = append(cs, Claim{
			Source: "RFC 9332 §2.1",
			What:   fmt.Sprintf("DualQ, %s flows: per-flow rate, scalable : Classic", mixName(mix)),
			Paper:  fmt.Sprintf("≈ 1 with k = 2 at equal RTTs; %.2f by the rate equations with the C queue's 15 ms in the Classic RTT", model),
			Ours:   ratio.Format(ratioText),
			Loads:  busyOnly(busyOf(rs)...),
			Rule:   inRange("ratio", ratio.Median(), 0.5, 4).because("roughly equal, or the RTT skew the coupling leaves"),
		})
	}
	full := [2]int{4, 4}
	dq := l4sAt(runs, l4sDualQ, full)
	lp99 := over(dq, func(r *l4sRun) float64 { return ms(r.p99[clsL]) })
	lmed := over(dq, func(r *l4sRun) float64 { return ms(r.med[clsL]) })
	cmed := over(dq, func(r *l4sRun) float64 { return ms(r.med[clsC]) })
	target := ms(time.Duration(marking.PI2DefaultTarget))
	cs = append(cs,
		Claim{
			Source: "RFC 9332 Appendix A.1 (step 1 ms)", What: "DualQ, 4 : 4 flows: the L queue's p99 delay",
			Paper: "of the order of 1 ms at 1 Gbit/s", Ours: lp99.Format(msText), Loads: busyOnly(busyOf(dq)...),
			Rule: atMost("p99", lp99.Median(), 2, " ms").given(lp99.Median() > 0),
		},
		Claim{
			Source: "RFC 9332 Appendix A.1 (target 15 ms)", What: "DualQ, 4 : 4 flows: the C queue's median delay",
			Paper: "PI2 holds it at target, 15 ms", Ours: cmed.Format(msText), Loads: busyOnly(busyOf(dq)...),
			Rule: inRange("median", cmed.Median(), target/2, 1.5*target).because("within ±50% of target"),
		},
		Claim{
			Source: "RFC 9332 §2.2", What: "DualQ, 4 : 4 flows: the L queue's median delay against the C queue's",
			Paper: "L4S packets skip the Classic queue", Ours: fmt.Sprintf("%s against %s", lmed.Format(msText), msText(cmed.Median())), Loads: busyOnly(busyOf(dq)...),
			Rule: atMostOf("L's median", lmed.Median(), cmed.Median(), 0.1, "C's"),
		},
	)
	pi := l4sAt(runs, l4sPI2, full)
	pl := over(pi, func(r *l4sRun) float64 { return ms(r.med[clsL]) })
	cs = append(cs, Claim{
		Source: "RFC 9332 §1.1", What: "PI2 in one queue, 4 : 4 flows: the scalable packets' median delay",
		Paper: "one queue: L4S packets wait behind Classic ones, at PI2's 15 ms target", Ours: pl.Format(msText), Loads: busyOnly(busyOf(pi)...),
		Rule: atLeast("median", pl.Median(), target/2, " ms"),
	})
	red := l4sAt(runs, l4sRED, full)
	rr := over(red, (*l4sRun).ratio)
	cs = append(cs, Claim{
		Source: "RFC 8257 (DCTCP), deployment", What: "DCTCP RED in one queue, 4 : 4 flows: per-flow rate, scalable : Classic",
		Paper: "DCTCP takes more than its share from Classic TCP in a shared step-marked queue", Ours: rr.Format(ratioText), Loads: busyOnly(busyOf(red)...),
		Rule: atLeast("ratio", rr.Median(), 2, "×"),
	})
	tot := over(dq, (*l4sRun).total)
	maxG := dq[0].maxGoodput()
	cs = append(cs, Claim{
		Source: "RFC 9332 §2.1", What: "DualQ, 4 : 4 flows: total goodput",
		Paper: "full utilisation", Ours: fmt.Sprintf("%s Mbit/s, %.1f%% of C·1448/1538", tot.Format(mbitText), 100*tot.Median()/maxG), Loads: busyOnly(busyOf(dq)...),
		Rule: atLeastOf("goodput", tot.Median(), maxG, 0.9, "C·1448/1538"),
	})
	// p_L against k·√p_C: the coupled part of p_L is k·p′ and p_C is
	// (p′)², so with p′ varying over the window (Jensen) the coupled
	// part alone is at most k·√p_C; the L queue's step adds marks.
	pLC := over(dq, func(r *l4sRun) float64 {
		pc := r.signalled(clsC)
		if pc == 0 {
			return math.NaN()
		}
		return r.signalled(clsL) / (l4sCoupling * math.Sqrt(pc))
	})
	pL := over(dq, func(r *l4sRun) float64 { return r.signalled(clsL) })
	pC := over(dq, func(r *l4sRun) float64 { return r.signalled(clsC) })
	cs = append(cs, Claim{
		Source: "RFC 9332 §2.4", What: "DualQ, 4 : 4 flows: the L queue's marked fraction p_L against k·√p_C, p_C the C queue's marked or dropped fraction",
		Paper: "p_L = max(step, k·p′), p_C = (p′)²", Ours: fmt.Sprintf("p_L %s, p_C %s: p_L/(k·√p_C) = %s", pctText(pL.Median()), pctText(pC.Median()), pLC.Format(ratioText)),
		Loads: busyOnly(busyOf(dq)...),
		Rule:  inRange("p_L/(k·√p_C)", pLC.Median(), 0.5, 3).because("Jensen keeps the coupled part at most 1; the step adds"),
	})
	return cs
}

// l4sTable is one scheme's runs, a row per mix.
func l4sTable(runs []*l4sRun, scheme string) Table {
	t := Table{
		Title: l4sTitle(scheme),
		Header: []string{"flows L : C", "L per flow", "C per flow", "L : C per flow", "total", "L delay median / p99", "C delay median / p99",
			"L marked", "C marked or dropped", "drops L / C", "RTT L / C", "arrival gaps ≥ 2 ms (longest)", "port busy"},
		Note: "Goodput in Mbit/s, total as a share of C·1448/1538. Every number is the median over the runs; the ratio prints their range. " +
			"Marked and dropped: of the class's data packets at the bottleneck. RTT: the senders' smoothed RTT. " +
			"Arrival gaps: silences of 2 ms or more in the packets reaching the switch while the flows ran, when the worker or the hosts were off their CPUs " +
			"(the longest over the runs in brackets); each ends in a burst.",
	}
	for _, mix := range l4sMixes {
		rs := l4sAt(runs, scheme, mix)
		med := func(f func(*l4sRun) float64) float64 { return over(rs, f).Median() }
		lo, hi := slices.Min(busyOf(rs)), slices.Max(busyOf(rs))
		busy := Busy(lo)
		if hi-lo >= 0.0005 {
			busy = fmt.Sprintf("%.1f–%s", 100*lo, Busy(hi))
		}
		t.Rows = append(t.Rows, []string{
			mixName(mix),
			mbitText(med(func(r *l4sRun) float64 { return r.perFlow(clsL) })),
			mbitText(med(func(r *l4sRun) float64 { return r.perFlow(clsC) })),
			over(rs, (*l4sRun).ratio).Format(ratioText),
			fmt.Sprintf("%s (%.1f%%)", mbitText(med((*l4sRun).total)), 100*med((*l4sRun).total)/rs[0].maxGoodput()),
			msText(med(func(r *l4sRun) float64 { return ms(r.med[clsL]) })) + " / " + msText(med(func(r *l4sRun) float64 { return ms(r.p99[clsL]) })),
			msText(med(func(r *l4sRun) float64 { return ms(r.med[clsC]) })) + " / " + msText(med(func(r *l4sRun) float64 { return ms(r.p99[clsC]) })),
			pctText(med(func(r *l4sRun) float64 { return r.signalled(clsL) })),
			pctText(med(func(r *l4sRun) float64 { return r.signalled(clsC) })),
			fmt.Sprintf("%.0f / %.0f", med(func(r *l4sRun) float64 { return float64(r.drops[clsL]) }), med(func(r *l4sRun) float64 { return float64(r.drops[clsC]) })),
			msText(med(func(r *l4sRun) float64 { return ms(r.rtt[clsL]) })) + " / " + msText(med(func(r *l4sRun) float64 { return ms(r.rtt[clsC]) })),
			fmt.Sprintf("%.0f (%s)", med(func(r *l4sRun) float64 { return float64(r.gaps) }), msText(slices.Max(over(rs, func(r *l4sRun) float64 { return ms(r.longest) })))),
			busy,
		})
	}
	return t
}

// l4sPlotDelay draws each scheme's first run of mix: each class's mean
// queueing delay per l4sBin.
func l4sPlotDelay(runs []*l4sRun, mix [2]int, path string) error {
	var ps []*plot.Plot
	for _, s := range l4sSchemes {
		r := l4sAt(runs, s, mix)[0]
		var lines []Line
		for c := range 2 {
			l := Line{Label: l4sClassNames[c]}
			for i, y := range r.bins[c] {
				if !math.IsNaN(y) {
					l.XY = append(l.XY, plotter.XY{X: (time.Duration(i) * l4sBin).Seconds(), Y: y})
				}
			}
			lines = append(lines, l)
		}
		p, err := newPlot(l4sTitle(s), "time (s)", "queueing delay (ms)", lines)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	return saveTiles(path, 3, ps, 4*vg.Inch, 3*vg.Inch)
}
