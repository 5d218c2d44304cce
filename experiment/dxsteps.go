package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/timestamp"
	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// dxStepsExperiment is 004 §VI-A's check of the queueing delay DX
// measures (Fig. 12): one sender saturates the bottleneck port at exactly
// its rate C, and another host injects one MTU packet into the same port
// at fixed intervals. Each injected packet stays in the standing queue,
// so the queueing delay steps up by one transmission time per injection,
// in DX's measurement as in the switch's.
func dxStepsExperiment() Experiment {
	return Experiment{
		Name:    "dx-steps",
		Paper:   "DX's queueing delay against the switch's, one injected MTU packet at a time (004 §VI-A, Fig. 12)",
		Summary: "one flow paced at C plus one MTU packet every interval from another host: DX's measured queueing delay steps, against the switch's",
		Run:     runDXSteps,
	}
}

// The experiment's constants: how many packets it injects, in how long
// by default, and the saturating sender's token bucket, deep enough to
// catch up after the scheduler wakes it late (a sender that loses tokens
// falls below C and drains the queue it measures).
const (
	dxSteps        = 24
	dxStepsDefault = 240 * time.Millisecond
	dxStepsBurst   = 32 // packets
)

// The unloaded phase that comes first: one flow paced at C/dxNoiseShare,
// one packet at a time, so that no packet waits behind another, for
// dxNoiseDefault (dxNoiseShort in a short run).
const (
	dxNoiseShare   = 100
	dxNoiseDefault = 2 * time.Second
	dxNoiseShort   = 500 * time.Millisecond
)

// dxProbe starts the payload of every injected packet: the tap tells
// them from the flow's data by it.
var dxProbe = []byte("ecnswitch dx-steps probe")

// stepSample is one delay sample: when its packet entered the bottleneck's
// queue, on the switch's clock, and the queueing delay, ns.
type stepSample struct{ t, d int64 }

// dxStepsRun is what one run measured.
type dxStepsRun struct {
	rate    int64
	busy    float64
	elapsed time.Duration
	// inject are the injected packets' times of entering the queue, and
	// dx and sw DX's measured delay per ACK (placed at its newest
	// packet's entry) and the switch's sojourn per data packet, all on
	// the switch's clock.
	inject []int64
	dx, sw []stepSample
	sent   int // packets injected
	missed uint64
	drops  uint64
	sender udp.SenderStats
	noise  *rttNoise // the unloaded phase; nil if not run
}

// rttNoise is what the unloaded phase measured: 004 §VI-A's noise of RTT
// samples between hosts back to back (Fig. 10, 11), here through the
// switch with nothing else on the port.
type rttNoise struct {
	rate     int64 // the flow's pace, bit/s
	duration time.Duration
	busy     float64
	// rtt and host are the RTT of every ACK that covered one packet, from
	// the stamps and with the sender's receive path (udp.DelaySample), ns.
	rtt, host []int64
	sojourn   []int64 // the switch's sojourn of each of the flow's packets, ns
}

func runDXSteps(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(dxStepsDefault)
	noiseFor := dxNoiseDefault
	if env.Short {
		noiseFor = dxNoiseShort
	}
	var r *dxStepsRun
	o, err := env.withBed(ctx, dxOptions(), func(b *bed) error {
		noise, err := runNoise(ctx, b, warmup, noiseFor)
		if err != nil {
			return err
		}
		env.say("dx-steps: unloaded, %d RTT samples, σ %.2f µs from the stamps, %.2f µs with the host's receive path",
			len(noise.rtt), stddev(noise.rtt)/1e3, stddev(noise.host)/1e3)
		if r, err = runSteps(ctx, b, warmup, duration/dxSteps); err != nil {
			return err
		}
		r.noise = noise
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dx-steps: %w", err)
	}
	env.say("dx-steps: busy %s, %d of %d injected packets seen", Busy(r.busy), len(r.inject), r.sent)
	return dxStepsReport(env, o, warmup, duration, r), nil
}

// runSteps saturates the bottleneck with one flow from h1 paced at C,
// injects dxSteps MTU packets from h2 one interval apart after warmup, and
// measures until an interval after the last.
func runSteps(ctx context.Context, b *bed, warmup, interval time.Duration) (*dxStepsRun, error) {
	r := &dxStepsRun{rate: b.options().Rate}
	err := b.withUDPRig(demo.NoMarking, interval*(dxSteps+1), dxProbe, udp.ReceiverConfig{}, func(g *udpRig) error {
		hosts := b.hosts()
		rh := hosts[demo.Bottleneck]
		sink, err := rh.ListenUDP(0)
		if err != nil {
			return err
		}
		defer sink.Close()
		go func() { // drain the probes; ends when sink closes
			b := make([]byte, 2048)
			for {
				if _, err := sink.Read(b); err != nil {
					return
				}
			}
		}()
		probeDst := netip.AddrPortFrom(rh.IPv4, udpPort(sink))

		// ECN* on an unmarked port with no loss never cuts its window: the
		// flow sends at the pace, C, "full throttle" (004 §VI-A).
		var on atomic.Bool
		var samples []flowSample
		s, c, err := dialSender(ctx, hosts[0], g.dst, udp.Config{
			Flow: 1, CC: transport.KindECNStar, Tolerance: dxTolerance, Rate: r.rate, Burst: dxStepsBurst,
			OnSample: func(x udp.DelaySample) {
				if on.Load() {
					samples = append(samples, flowSample{x.Seq, x.Packets, x.Queue})
				}
			},
		})
		if err != nil {
			return err
		}
		defer c.Close()
		pc, err := hosts[1].DialUDP(ctx, probeDst, demo.DSCP(0), packet.NotECT)
		if err != nil {
			return err
		}
		defer pc.Close()
		probe := make([]byte, udp.DefaultSize) // an MTU packet, as the data's
		copy(probe, dxProbe)

		stop := runEndpoints(ctx, g.rcv, []*udp.Sender{s})
		if err := warm(ctx, g.rcv, 1, warmup); err != nil {
			return errors.Join(err, stop())
		}
		st0 := g.sw.Stats().Ports[demo.Bottleneck]
		start := time.Now()
		g.tap.on.Store(true)
		on.Store(true)
		var werr error
		for range dxSteps {
			if werr = sleep(ctx, interval); werr != nil {
				break
			}
			if _, werr = pc.Write(probe); werr != nil {
				break
			}
			r.sent++
		}
		if werr == nil {
			werr = sleep(ctx, interval)
		}
		// A worker held up (by other CPU load) may not have sent the last
		// probe yet: wait for it, a while.
		for deadline := time.Now().Add(time.Second); werr == nil && g.tap.probes.Load() < int64(r.sent) && time.Now().Before(deadline); {
			werr = sleep(ctx, time.Millisecond)
		}
		g.tap.on.Store(false)
		on.Store(false)
		r.elapsed = time.Since(start)
		st1 := g.sw.Stats().Ports[demo.Bottleneck]
		if err := errors.Join(werr, stop()); err != nil {
			return err
		}
		if err := g.stop(); err != nil { // the tap is quiet once the workers stop
			return err
		}
		r.busy = demo.PortBusy(st0, st1, r.rate, r.elapsed)
		r.drops = queueDrops(st0, st1, 0)
		r.sender = s.Stats()
		r.missed = g.tap.missed.Load()
		r.inject, r.sw, r.dx = placeSteps(g.tap.records(), samples)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// runNoise sends one flow from h1 to h5 through an unmarked, otherwise
// idle port, paced at C/dxNoiseShare one packet at a time, and records
// for d after warmup the RTT of every ACK that covers one packet and the
// switch's sojourn of every packet.
func runNoise(ctx context.Context, b *bed, warmup, d time.Duration) (*rttNoise, error) {
	rate := b.options().Rate
	r := &rttNoise{rate: rate / dxNoiseShare, duration: d}
	err := b.withUDPRig(demo.NoMarking, d/dxNoiseShare, nil, udp.ReceiverConfig{}, func(g *udpRig) error {
		var on atomic.Bool
		s, c, err := dialSender(ctx, b.hosts()[0], g.dst, udp.Config{
			Flow: 1, CC: transport.KindECNStar, Tolerance: dxTolerance, Rate: r.rate, Burst: 1,
			OnSample: func(x udp.DelaySample) {
				if on.Load() && x.Packets == 1 {
					r.rtt, r.host = append(r.rtt, x.RTT), append(r.host, x.HostRTT)
				}
			},
		})
		if err != nil {
			return err
		}
		defer c.Close()
		stop := runEndpoints(ctx, g.rcv, []*udp.Sender{s})
		if err := warm(ctx, g.rcv, 1, warmup); err != nil {
			return errors.Join(err, stop())
		}
		st0, st1, elapsed, werr := g.window(ctx, &on, d)
		if err := errors.Join(werr, stop()); err != nil {
			return err
		}
		if err := g.stop(); err != nil {
			return err
		}
		r.busy = demo.PortBusy(st0, st1, rate, elapsed)
		for _, rec := range g.tap.records() {
			r.sojourn = append(r.sojourn, rec.sojourn)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// placeSteps puts the tap's records and the sender's samples on the
// switch's clock, each at its packet's entry into the queue (departure
// minus sojourn): the probes' entries, the data packets' sojourns, and
// each ACK's delay at the entry of the newest packet it covers.
func placeSteps(recs []tapRecord, samples []flowSample) (inject []int64, sw, dx []stepSample) {
	entry := make(map[uint64]int64, len(recs))
	for _, rec := range recs {
		t := rec.t - rec.sojourn
		if rec.flow == 0 {
			inject = append(inject, t)
			continue
		}
		sw = append(sw, stepSample{t, rec.sojourn})
		if _, dup := entry[rec.seq]; !dup {
			entry[rec.seq] = t
		}
	}
	for _, s := range samples {
		if t, ok := entry[s.seq]; ok {
			dx = append(dx, stepSample{t, s.queue})
		}
	}
	slices.SortFunc(sw, func(a, b stepSample) int { return int(a.t - b.t) })
	slices.SortFunc(dx, func(a, b stepSample) int { return int(a.t - b.t) })
	slices.Sort(inject)
	return inject, sw, dx
}

// levels returns the median delay of the samples (sorted by t) between
// consecutive injections: before the first, between each two, and after
// the last, len(inject)+1 levels. A level with no sample is 0, and ok is
// false then.
func levels(samples []stepSample, inject []int64) (lv []float64, ok bool) {
	ok = true
	bounds := append(append([]int64{math.MinInt64}, inject...), math.MaxInt64)
	for i := 1; i < len(bounds); i++ {
		var ds []int64
		for _, s := range samples {
			if s.t >= bounds[i-1] && s.t < bounds[i] {
				ds = append(ds, s.d)
			}
		}
		if len(ds) == 0 {
			ok = false
			lv = append(lv, 0)
			continue
		}
		lv = append(lv, float64(quantile(ds, 0.5)))
	}
	return lv, ok
}

// steps returns the differences of consecutive levels.
func steps(lv []float64) []float64 {
	var st []float64
	for i := 1; i < len(lv); i++ {
		st = append(st, lv[i]-lv[i-1])
	}
	return st
}

// dxStepsReport renders the run.
func dxStepsReport(env Env, o demo.Options, warmup, duration time.Duration, r *dxStepsRun) *Report {
	tx := float64(timestamp.TransmissionTime(wireFrame, r.rate))
	dxLv, dxOK := levels(r.dx, r.inject)
	swLv, swOK := levels(r.sw, r.inject)
	dxSt, swSt := steps(dxLv), steps(swLv)
	dxStep, swStep := median(dxSt), median(swSt)
	rep := env.report(dxStepsExperiment(), "DX's queueing delay, one injected packet at a time")
	rep.Setup = []string{
		fmt.Sprintf("The demo's five-host testbed; ecnswitch on AF_XDP ports shaped to %.0f Mbit/s, one queue, a %d KB "+
			"buffer, no marker. h1 sends one flow of transport/udp's endpoints to h5 (1472-byte datagrams), paced at "+
			"exactly C in bursts of at most %d packets; its congestion control is ECN*, which on an unmarked, lossless "+
			"port never cuts its window, so the flow runs \"full throttle\" at C (004 §VI-A). After %v of warm-up, h2 "+
			"sends one 1472-byte UDP datagram to another socket on h5 every %v, %d in all: each lengthens the "+
			"standing queue by one packet.",
			float64(r.rate)/1e6, o.Buffer>>10, dxStepsBurst, warmup, duration/dxSteps, dxSteps),
		fmt.Sprintf("DX's queueing delay is the sender's estimate per ACK (timestamp.Delay: OWD − OWD_base, base "+
			"re-taken within %v of the minimum RTT) from t1 = the send time and t2, t4 = the kernel's SO_TIMESTAMPNS "+
			"receive stamps. The switch's is the sojourn of every data packet at the bottleneck, from a tap. Both are "+
			"placed on the switch's clock at the time the packet entered the queue (the tap's departure minus "+
			"sojourn; an ACK at its newest packet's), and so are the injected packets. A level is the median delay "+
			"between two injections; a step is the difference of two levels.",
			dxTolerance),
	}
	rep.Scaling = "None: the paper's software-stamp run is at 1 Gbit/s (Fig. 12(a)); one MTU frame on the wire (1538 " +
		fmt.Sprintf("bytes) takes %.2f µs at %.0f Mbit/s.", tx/1e3, float64(r.rate)/1e6)
	rep.Claims = []Claim{{
		Source: "004 Fig. 12(a)", What: "DX's measured queueing delay per injected MTU packet (median step)",
		Paper: "one transmission time, 12 µs at 1 Gbit/s", Ours: fmt.Sprintf("%.2f µs (one packet: %.2f µs)", dxStep/1e3, tx/1e3),
		Busy: []float64{r.busy}, Rule: near("", dxStep, tx, 0.25, "one transmission time").given(dxOK),
	}, {
		Source: "004 Fig. 12(a)", What: "the switch's own queueing delay per injected packet (median step)",
		Paper: "the switch's queue matches DX's measurement", Ours: fmt.Sprintf("%.2f µs", swStep/1e3),
		Busy: []float64{r.busy}, Rule: near("", swStep, tx, 0.25, "one transmission time").given(swOK),
	}}

	var offs []float64
	for i := range dxLv {
		offs = append(offs, dxLv[i]-swLv[i])
	}
	var rows [][]string
	for i := range dxLv {
		row := []string{fmt.Sprint(i), fmt.Sprintf("%.1f µs", dxLv[i]/1e3), fmt.Sprintf("%.1f µs", swLv[i]/1e3), "", ""}
		if i > 0 {
			row[3], row[4] = fmt.Sprintf("%+.1f µs", dxSt[i-1]/1e3), fmt.Sprintf("%+.1f µs", swSt[i-1]/1e3)
		}
		rows = append(rows, row)
	}
	rep.Tables = []Table{{
		Title:  "Levels between injections",
		Header: []string{"packets injected", "DX's median", "switch's median", "DX's step", "switch's step"},
		Rows:   rows,
		Note: fmt.Sprintf("%d probes sent, %d seen by the tap; %d DX samples and %d switch samples placed; the port %s busy, "+
			"%d drops, %d tap records missed; the flow sent %d packets, %d resent (warm-up included). DX's levels sit a "+
			"median %.1f µs from the switch's: its OWD_base is the OWD of its lowest-RTT sample, and a flow that keeps the "+
			"port busy at C never finds the queue empty. A negative step is the sender falling behind C for a moment "+
			"(woken later than its bucket covers), which drains the queue.",
			r.sent, len(r.inject), len(r.dx), len(r.sw), Busy(r.busy), r.drops, r.missed, r.sender.Sent, r.sender.Retrans,
			median(offs)/1e3),
	}}
	rep.Plots = []Plot{{
		File: "steps.png", Caption: "Queueing delay over time, medians of 1 ms bins; an injection every interval.",
		Draw: func(path string) error { return drawSteps(path, r) },
	}}
	rep.Limits = []string{
		"The stamps are the kernel's software stamps; t1 is the time just before sendmmsg, so a packet late in its burst " +
			"reads the burst's sending as queueing. The paper's Fig. 12(a) also uses software stamps, at 1 Gbit/s.",
		"The sender paces at C with the switch's wire accounting, rounded down to the ns per packet (0.007% fast), so the " +
			"queue also creeps up by about one packet per 14,000 sent; a sender woken later than its bucket covers falls " +
			"behind C and the queue shrinks.",
	}
	if n := r.noise; n != nil {
		rep.Claims = append(rep.Claims, noiseClaim(n))
		rep.Tables = append(rep.Tables, noiseTable(n))
		rep.Plots = append(rep.Plots, Plot{
			File: "rtt-noise.png", Caption: "RTT samples on the unloaded path (004 Fig. 11): from the stamps, and with the sender's receive path.",
			Draw: func(path string) error { return drawNoise(path, n) },
		})
		rep.Limits = append(rep.Limits, "On the unloaded path the stamps take out the receiver's hold and the sender's "+
			"receive path, nothing else: t1 is read in user space before sendmmsg, and between the hosts are two veths "+
			"and the switch's worker, which sleeps on an idle port (after 16 idle passes) and wakes for each packet. "+
			"The paper's hosts were cabled back to back and stamped at DPDK's poll or at the NIC.")
		rep.Setup = append(rep.Setup, fmt.Sprintf("First, unloaded (004 §VI-A, Fig. 10–11, measured there between two hosts "+
			"back to back): after %v of warm-up, h1 sends one flow to h5 for %v, paced at C/%d (%.1f Mbit/s) one packet at "+
			"a time, so that no packet waits behind another; the port has nothing else to send. Every ACK that covers one "+
			"packet gives two RTTs: from the stamps, (t4 − t1) − (t3 − t2), and with the sender's receive path left in, "+
			"the time the sender read the ACK in place of t4. The port's busy fraction does not apply to this phase.",
			warmup, n.duration, dxNoiseShare, float64(n.rate)/1e6))
	}
	return rep
}

// noiseClaim compares the noise of the stamped RTT with the paper's:
// direction only, as the stamps differ (the paper's are DPDK's and the
// NIC's, ours the kernel's software stamps and t1 in user space).
func noiseClaim(n *rttNoise) Claim {
	sr, sh := stddev(n.rtt), stddev(n.host)
	rr, rh := spread(n.rtt), spread(n.host)
	return Claim{
		Source: "004 §VI-A, Fig. 10–11",
		What:   "noise of RTT samples on an unloaded path: from the stamps, against the RTT with host delay",
		Paper:  "σ 1.98 µs with DPDK software stamps, 0.53 µs with NIC stamps, against 80.7 µs in the kernel's TCP stack",
		Ours: fmt.Sprintf("σ %.2f µs from the stamps against %.2f µs with the sender's receive path; p1–p99 %.2f against %.2f µs (%d samples)",
			sr/1e3, sh/1e3, float64(rr)/1e3, float64(rh)/1e3, len(n.rtt)),
		Rule: below("the stamped RTT's σ", sr, sh, "the host-time RTT's").
			and(below("its p1–p99 spread", float64(rr), float64(rh), "the host-time RTT's")).
			given(len(n.rtt) > 1).because("direction only: the paper's stamps are DPDK's and the NIC's"),
	}
}

// noiseTable gives the distribution of both RTTs and of the switch's
// sojourn in the unloaded phase.
func noiseTable(n *rttNoise) Table {
	row := func(name string, xs []int64) []string {
		us := func(v float64) string { return fmt.Sprintf("%.2f µs", v/1e3) }
		return []string{name, fmt.Sprint(len(xs)), us(float64(quantile(xs, 0.01))), us(float64(quantile(xs, 0.5))),
			us(float64(quantile(xs, 0.99))), us(float64(quantile(xs, 1))), us(stddev(xs))}
	}
	return Table{
		Title:  "Unloaded path: RTT samples and the switch's sojourn",
		Header: []string{"", "samples", "p1", "median", "p99", "max", "σ"},
		Rows: [][]string{
			row("RTT from the stamps", n.rtt),
			row("RTT with the sender's receive path", n.host),
			row("the switch's sojourn of the flow's packets", n.sojourn),
		},
		Note: fmt.Sprintf("The flow paced at %.1f Mbit/s, one packet at a time, for %v; the port %.1f%% busy. The paper "+
			"(004 §VI-A) reports σ 1.98 µs with DPDK software stamps and burst control, 0.53 µs with NIC stamps, against "+
			"80.7 µs for the kernel's TCP RTT; with NIC stamps the range was 11.38 µs against the kernel's 710 µs (Fig. 11).",
			float64(n.rate)/1e6, n.duration, 100*n.busy),
	}
}

// drawNoise plots the CDFs of the unloaded phase's two RTTs.
func drawNoise(path string, n *rttNoise) error {
	if len(n.rtt) == 0 {
		return errors.New("dx-steps: no RTT samples to plot")
	}
	durs := func(xs []int64) []time.Duration {
		ds := make([]time.Duration, len(xs))
		for i, x := range xs {
			ds[i] = time.Duration(x)
		}
		return ds
	}
	p, err := newPlot("RTT on the unloaded path", "RTT (µs)", "CDF", []Line{
		cdf("from the stamps", durs(n.rtt)),
		cdf("with the sender's receive path", durs(n.host)),
	})
	if err != nil {
		return err
	}
	// The rare late sample would squeeze the body into the left edge: the
	// x axis ends past the host-time RTT's p99, the table has the rest.
	p.X.Min, p.X.Max = 0, 1.5*float64(quantile(n.host, 0.99))/1e3
	p.Legend.Top, p.Legend.Left = false, false
	return saveTiles(path, 1, []*plot.Plot{p}, 16*vg.Centimeter, 9*vg.Centimeter)
}

// drawSteps plots the run's delays in 1 ms bins.
func drawSteps(path string, r *dxStepsRun) error {
	if len(r.sw) == 0 {
		return errors.New("dx-steps: no switch samples to plot")
	}
	t0 := r.sw[0].t
	bins := func(ss []stepSample) plotter.XYs {
		var xy plotter.XYs
		for i := 0; i < len(ss); {
			bin := (ss[i].t - t0) / 1e6
			var ds []int64
			for ; i < len(ss) && (ss[i].t-t0)/1e6 == bin; i++ {
				ds = append(ds, ss[i].d)
			}
			xy = append(xy, plotter.XY{X: float64(bin), Y: float64(quantile(ds, 0.5)) / 1e3})
		}
		return xy
	}
	p, err := newPlot("one MTU packet injected per interval", "time (ms)", "queueing delay (µs)", []Line{
		{Label: "DX's measurement", XY: bins(r.dx)},
		{Label: "switch's sojourn", XY: bins(r.sw)},
	})
	if err != nil {
		return err
	}
	return saveTiles(path, 1, []*plot.Plot{p}, 16*vg.Centimeter, 9*vg.Centimeter)
}
