package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
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

// dxNoiseRTO is the unloaded flow's least RTO: one packet at a time on an
// idle path loses nothing, and a host held up for longer than the
// endpoints' default 10 ms (a loaded machine's softirq) would otherwise
// send again what was not lost, and every sample of what it sent again is
// void (Karn). The saturating flow keeps the default: a burst that
// overflows the port is recovered from in 10 ms, not 200.
const dxNoiseRTO = 200 * time.Millisecond

// dxProbe starts the payload of every injected packet: the tap tells
// them from the flow's data by it.
var dxProbe = []byte("ecnswitch dx-steps probe")

// stepSample is one delay sample: when its packet entered the bottleneck's
// queue, on the switch's clock, and the queueing delay, ns.
type stepSample struct{ t, d int64 }

// dxStepsRun is what one run of the steps measured.
type dxStepsRun struct {
	round   int // which of the runs, from 0
	rate    int64
	busy    float64
	load    demo.Load
	dropped demo.Drops // every port's, in the window
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
}

// rttNoise is what one run of the unloaded phase measured: 004 §VI-A's
// noise of RTT samples between hosts back to back (Fig. 10, 11), over a
// direct veth pair or through the switch with nothing else on the port.
type rttNoise struct {
	round    int    // which of the runs, from 0
	path     string // noiseDirect or noiseSwitch
	rate     int64  // the flow's pace, bit/s
	duration time.Duration
	busy     float64
	// rtt and host are the RTT of every ACK that covered one packet, from
	// the stamps (t1 the kernel's transmit stamp) and with the sender's
	// own send and receive paths (udp.DelaySample), ns.
	rtt, host []int64
	stamped   int     // of the samples, those whose t1 was a transmit stamp
	sojourn   []int64 // the switch's sojourn of each of the flow's packets, ns; none direct
	// load is the machine over the window: the port is meant to idle
	// (Open), so only a saturated CPU makes the run not comparable.
	load demo.Load
}

// The unloaded phase's two paths.
const (
	noiseDirect = "direct veth pair"
	noiseSwitch = "through the switch"
)

// dxStepsHosts says what the hosts ran.
const dxStepsHosts = "004 §VI-A stamps at DPDK's poll (software, 1 Gbit/s) or at the NIC (10 Gbit/s), between two hosts back to back and through " +
	"a switch saturated by \"full throttle traffic from one host\". Ours are transport/udp's endpoints: t1 the kernel's software transmit stamp " +
	"of the datagram (SO_TIMESTAMPING, at the veth's transmit), t2 and t4 its receive stamps (SO_TIMESTAMPNS), t3 the receiver's send time read " +
	"before its sendmmsg; the saturating flow's congestion control is ECN*, its least RTO the endpoints' 10 ms. The unloaded flow's least RTO is 200 ms: one packet at a time on an idle path loses nothing, and a shorter one would have a host held up on a loaded machine send again what was not lost, voiding the samples of what it sent again (Karn). Kernel TCP carries nothing here."

// dxStepsNonECT is the experiment's Not-ECT policy.
const dxStepsNonECT = nonECTDrop + " The port has no marker here, so no packet is marked or dropped for it; the injected packets are " +
	"Not-ECT UDP, as 004's ICMP pings are."

func runDXSteps(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(dxStepsDefault)
	noiseFor := dxNoiseDefault
	if env.Short {
		noiseFor = dxNoiseShort
	}
	var steps []*dxStepsRun
	var noise []*rttNoise
	o, err := env.withBed(ctx, dxOptions(), func(b *bed) error {
		for round := range env.runs() {
			hs := b.hosts()
			id, err := testbed.RandomID()
			if err != nil {
				return err
			}
			remove, err := directPair(hs[0], hs[demo.Bottleneck], "dx"+id)
			if err != nil {
				return err
			}
			n, err := runNoiseDirect(ctx, b, warmup, noiseFor)
			if err = errors.Join(err, remove()); err != nil {
				return err
			}
			n.round = round
			noise = append(noise, n)
			env.say("dx-steps: run %d, unloaded over a direct veth pair: %d RTT samples (%d with a transmit stamp), σ %.2f µs (IQR %.2f) from the stamps, %.2f µs (IQR %.2f) with the host's paths",
				round+1, len(n.rtt), n.stamped, stddev(n.rtt)/1e3, float64(iqr(n.rtt))/1e3, stddev(n.host)/1e3, float64(iqr(n.host))/1e3)
			if n, err = runNoise(ctx, b, warmup, noiseFor); err != nil {
				return err
			}
			n.round = round
			noise = append(noise, n)
			env.say("dx-steps: run %d, unloaded through the switch: %d RTT samples (%d with a transmit stamp), σ %.2f µs (IQR %.2f) from the stamps, %.2f µs (IQR %.2f) with the host's paths",
				round+1, len(n.rtt), n.stamped, stddev(n.rtt)/1e3, float64(iqr(n.rtt))/1e3, stddev(n.host)/1e3, float64(iqr(n.host))/1e3)
			r, err := runSteps(ctx, b, warmup, duration/dxSteps)
			if err != nil {
				return err
			}
			r.round = round
			steps = append(steps, r)
			env.say("dx-steps: run %d: busy %s, %d of %d injected packets seen; %s; drops %s", round+1, Busy(r.busy), len(r.inject), r.sent, r.load, r.dropped)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dx-steps: %w", err)
	}
	return dxStepsReport(env, o, warmup, duration, steps, noise), nil
}

// iqr returns the distance from the 25th to the 75th percentile of xs.
func iqr[T number](xs []T) T { return quantile(xs, 0.75) - quantile(xs, 0.25) }

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
		probeDst := netip.AddrPortFrom(rh.IPv4, udpPort(sink))
		pc, err := hosts[1].DialUDP(ctx, probeDst, demo.DSCP(0), packet.NotECT)
		if err != nil {
			return err
		}
		defer pc.Close()
		// One probe crosses before the flow fills the port: h2 resolves
		// h5's address then, not when a full port may drop its ARP
		// request (and the kernel hold the probes a second, until it asks
		// again).
		if err := primePath(ctx, pc, sink); err != nil {
			return err
		}
		go func() { // drain the probes; ends when sink closes
			b := make([]byte, 2048)
			for {
				if _, err := sink.Read(b); err != nil {
					return
				}
			}
		}()

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
		probe := make([]byte, udp.DefaultSize) // an MTU packet, as the data's
		copy(probe, dxProbe)

		stop := runEndpoints(ctx, g.rcv, []*udp.Sender{s})
		if err := warm(ctx, g.rcv, 1, warmup); err != nil {
			return errors.Join(err, stop())
		}
		st0 := g.sw.Stats().Ports[demo.Bottleneck]
		drops0 := switchDrops(g.sw)
		meter := demo.StartMeter(g.sw.Stats(), nil)
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
		// A host path held up (by other CPU load) may not have let the
		// last probe into the queue yet: wait for it, a while; then an
		// interval more, two, so that the flow's packets after it count
		// too even if its sender is held up as long.
		for deadline := time.Now().Add(time.Second); werr == nil && g.tap.probes.Load() < int64(r.sent) && time.Now().Before(deadline); {
			werr = sleep(ctx, time.Millisecond)
		}
		if werr == nil {
			werr = sleep(ctx, 2*interval)
		}
		g.tap.on.Store(false)
		on.Store(false)
		r.elapsed = time.Since(start)
		st1 := g.sw.Stats().Ports[demo.Bottleneck]
		r.load = meter.Stop(g.sw.Stats(), demo.PortBusy(st0, st1, r.rate, r.elapsed))
		r.dropped = switchDrops(g.sw).Sub(drops0)
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
	r := &rttNoise{path: noiseSwitch, rate: rate / dxNoiseShare, duration: d}
	err := b.withUDPRig(demo.NoMarking, d/dxNoiseShare, nil, udp.ReceiverConfig{}, func(g *udpRig) error {
		var on atomic.Bool
		s, c, err := dialStampedSender(ctx, b.hosts()[0], g.dst, r.config(&on))
		if err != nil {
			return err
		}
		defer c.Close()
		stop := runEndpoints(ctx, g.rcv, []*udp.Sender{s})
		if err := warm(ctx, g.rcv, 1, warmup); err != nil {
			return errors.Join(err, stop())
		}
		meter := demo.StartMeter(g.sw.Stats(), nil)
		st0, st1, elapsed, werr := g.window(ctx, &on, d)
		r.busy = demo.PortBusy(st0, st1, rate, elapsed)
		r.load = meter.Stop(g.sw.Stats(), r.busy)
		r.load.Open = true
		if err := errors.Join(werr, stop()); err != nil {
			return err
		}
		if err := g.stop(); err != nil {
			return err
		}
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

// runNoiseDirect does as runNoise over the direct veth pair between h1
// and h5 (directPair), the switch out of the path.
func runNoiseDirect(ctx context.Context, b *bed, warmup, d time.Duration) (*rttNoise, error) {
	r := &rttNoise{path: noiseDirect, rate: b.options().Rate / dxNoiseShare, duration: d}
	hosts := b.hosts()
	rh := hosts[demo.Bottleneck]
	rc, err := rh.ListenUDP(0)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	rconn, err := udp.Prepare(rc, udp.NotECT)
	if err != nil {
		return nil, err
	}
	rcv, err := udp.NewReceiver(rconn, udp.ReceiverConfig{})
	if err != nil {
		return nil, err
	}
	var on atomic.Bool
	s, c, err := dialStampedSender(ctx, hosts[0], netip.AddrPortFrom(rh.IPv4, udpPort(rc)), r.config(&on))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := runEndpoints(ctx, rcv, []*udp.Sender{s})
	if err := warm(ctx, rcv, 1, warmup); err != nil {
		return nil, errors.Join(err, stop())
	}
	meter := demo.StartMeter(dataplane.Stats{}, nil)
	on.Store(true)
	err = sleep(ctx, d)
	on.Store(false)
	r.load = meter.Stop(dataplane.Stats{}, 0)
	r.load.Open = true
	return r, errors.Join(err, stop())
}

// config is the unloaded flow's: ECN*, paced at r.rate one packet at a
// time, its single-packet samples recorded while on is set.
func (r *rttNoise) config(on *atomic.Bool) udp.Config {
	return udp.Config{
		Flow: 1, CC: transport.KindECNStar, Tolerance: dxTolerance, Rate: r.rate, Burst: 1, MinRTO: dxNoiseRTO,
		OnSample: func(x udp.DelaySample) {
			if on.Load() && x.Packets == 1 {
				r.rtt, r.host = append(r.rtt, x.RTT), append(r.host, x.HostRTT)
				if x.TxStamped {
					r.stamped++
				}
			}
		},
	}
}

// dialStampedSender does as dialSender, with the kernel's transmit stamps
// as t1 (udp.EnableTxStamps).
func dialStampedSender(ctx context.Context, h testbed.Host, dst netip.AddrPort, cfg udp.Config) (*udp.Sender, *net.UDPConn, error) {
	c, err := h.DialUDP(ctx, dst, demo.DSCP(0), packet.ECT0)
	if err != nil {
		return nil, nil, err
	}
	conn, err := udp.Prepare(c, udp.ECT0)
	if err != nil {
		return nil, nil, errors.Join(err, c.Close())
	}
	if cfg.TxStamps, err = udp.EnableTxStamps(c); err != nil {
		return nil, nil, errors.Join(err, c.Close())
	}
	s, err := udp.NewSender(conn, nil, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, c.Close())
	}
	return s, c, nil
}

// primePath sends probes on pc until sink reads one, at most primeTimeout:
// the path's neighbours are resolved and the switch has learned it.
func primePath(ctx context.Context, pc, sink *net.UDPConn) error {
	deadline := time.Now().Add(primeTimeout)
	b := make([]byte, 2048)
	for time.Now().Before(deadline) {
		if _, err := pc.Write(dxProbe); err != nil {
			return err
		}
		sink.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := sink.Read(b)
		if err == nil {
			sink.SetReadDeadline(time.Time{})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("no probe crossed to the sink in %v", primeTimeout)
}

// primeTimeout bounds primePath: longer than the kernel's one-second ARP
// retry.
const primeTimeout = 3 * time.Second

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

// groups returns the injections as the queue took them: those that
// entered with no data packet entering between them (the host path held
// them and let them go together, as a loaded machine's does) form one
// group; it returns each group's first entry and its count of packets.
func groups(sw []stepSample, inject []int64) (at []int64, k []int) {
	for i, t := range inject {
		if i > 0 && !dataBetween(sw, inject[i-1], t) {
			k[len(k)-1]++
			continue
		}
		at, k = append(at, t), append(k, 1)
	}
	return at, k
}

// dataBetween reports whether a data sample (sorted by t) entered in
// [a, b).
func dataBetween(sw []stepSample, a, b int64) bool {
	i, _ := slices.BinarySearchFunc(sw, a, func(s stepSample, t int64) int { return cmp.Compare(s.t, t) })
	return i < len(sw) && sw[i].t < b
}

// levels returns the median delay of the samples (sorted by t) between
// consecutive group entries: before the first, between each two, and
// after the last, len(at)+1 levels. A level with no sample is 0, and ok is
// false then.
func levels(samples []stepSample, at []int64) (lv []float64, ok bool) {
	ok = true
	bounds := append(append([]int64{math.MinInt64}, at...), math.MaxInt64)
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

// steps returns the differences of consecutive levels, each over the
// packets of the group between them (k): the step per injected packet.
func steps(lv []float64, k []int) []float64 {
	var st []float64
	for i := 1; i < len(lv); i++ {
		st = append(st, (lv[i]-lv[i-1])/float64(max(k[i-1], 1)))
	}
	return st
}

// stepsOf returns a run's levels and steps, DX's and the switch's, over
// its groups of injections.
func stepsOf(r *dxStepsRun) (dxLv, swLv, dxSt, swSt []float64, k []int, dxOK, swOK bool) {
	at, k := groups(r.sw, r.inject)
	dxLv, dxOK = levels(r.dx, at)
	swLv, swOK = levels(r.sw, at)
	return dxLv, swLv, steps(dxLv, k), steps(swLv, k), k, dxOK, swOK
}

// dxStepsReport renders the runs: the steps' and the unloaded phase's.
func dxStepsReport(env Env, o demo.Options, warmup, duration time.Duration, runs []*dxStepsRun, noise []*rttNoise) *Report {
	r := runs[0]
	tx := float64(timestamp.TransmissionTime(wireFrame, r.rate))
	type result struct {
		dxLv, swLv, dxSt, swSt []float64
		k                      []int
		dxOK, swOK             bool
	}
	res := make([]result, len(runs))
	for i, x := range runs {
		var y result
		y.dxLv, y.swLv, y.dxSt, y.swSt, y.k, y.dxOK, y.swOK = stepsOf(x)
		res[i] = y
	}
	dxStep := over(res, func(y result) float64 { return median(y.dxSt) })
	swStep := over(res, func(y result) float64 { return median(y.swSt) })
	dxOK := !slices.ContainsFunc(res, func(y result) bool { return !y.dxOK })
	swOK := !slices.ContainsFunc(res, func(y result) bool { return !y.swOK })
	var loads []demo.Load
	for _, x := range runs {
		loads = append(loads, x.load)
	}
	us := func(x float64) string { return fmt.Sprintf("%.2f", x/1e3) }
	rep := env.report(dxStepsExperiment(), "DX's queueing delay, one injected packet at a time")
	rep.Setup = []string{
		fmt.Sprintf("The demo's five-host testbed; ecnswitch on AF_XDP ports shaped to %.0f Mbit/s, one queue, a %d KB "+
			"buffer, no marker. h1 sends one flow of transport/udp's endpoints to h5 (1472-byte datagrams), paced at "+
			"exactly C in bursts of at most %d packets; its congestion control is ECN*, which on an unmarked, lossless "+
			"port never cuts its window, so the flow runs \"full throttle\" at C (004 §VI-A). After %v of warm-up, h2 "+
			"sends one 1472-byte UDP datagram to another socket on h5 every %v, %d in all (one crosses before the flow starts, "+
			"so that h2's neighbour entry for h5 is resolved): each lengthens the standing queue by one packet. Every run "+
			"repeats %d times.",
			float64(r.rate)/1e6, o.Buffer>>10, dxStepsBurst, warmup, duration/dxSteps, dxSteps, len(runs)),
		fmt.Sprintf("DX's queueing delay is the sender's estimate per ACK (timestamp.Delay: OWD − OWD_base, base "+
			"re-taken within %v of the minimum RTT) from t1 = the send time and t2, t4 = the kernel's SO_TIMESTAMPNS "+
			"receive stamps. The switch's is the sojourn of every data packet at the bottleneck, from a tap. Both are "+
			"placed on the switch's clock at the time the packet entered the queue (the tap's departure minus "+
			"sojourn; an ACK at its newest packet's), and so are the injected packets. Injected packets that entered with no "+
			"data packet between them (the host path held them and let them go together) count as one group of k; a level is the "+
			"median delay between two groups, a step the difference of two levels over the k packets of the group between them.",
			dxTolerance),
	}
	rep.Transport, rep.NonECT = dxStepsHosts, dxStepsNonECT
	rep.Scaling = "None: the paper's software-stamp run is at 1 Gbit/s (Fig. 12(a)); one MTU frame on the wire (1538 " +
		fmt.Sprintf("bytes) takes %.2f µs at %.0f Mbit/s.", tx/1e3, float64(r.rate)/1e6)
	rep.Claims = []Claim{{
		Source: "004 Fig. 12(a)", What: "DX's measured queueing delay per injected MTU packet (median step)",
		Paper: "one transmission time, 12 µs at 1 Gbit/s", Ours: fmt.Sprintf("%s µs (one packet: %.2f µs)", dxStep.Format(us), tx/1e3),
		Loads: loads, Rule: near("", dxStep.Median(), tx, 0.25, "one transmission time").given(dxOK),
	}, {
		Source: "004 Fig. 12(a)", What: "the switch's own queueing delay per injected packet (median step)",
		Paper: "the switch's queue matches DX's measurement", Ours: fmt.Sprintf("%s µs", swStep.Format(us)),
		Loads: loads, Rule: near("", swStep.Median(), tx, 0.25, "one transmission time").given(swOK),
	}}

	y := res[0]
	var offs []float64
	for i := range y.dxLv {
		offs = append(offs, y.dxLv[i]-y.swLv[i])
	}
	var rows [][]string
	for i := range y.dxLv {
		row := []string{fmt.Sprint(i), "", fmt.Sprintf("%.1f µs", y.dxLv[i]/1e3), fmt.Sprintf("%.1f µs", y.swLv[i]/1e3), "", ""}
		if i > 0 {
			row[1] = fmt.Sprint(y.k[i-1])
			row[4], row[5] = fmt.Sprintf("%+.1f µs", y.dxSt[i-1]/1e3), fmt.Sprintf("%+.1f µs", y.swSt[i-1]/1e3)
		}
		rows = append(rows, row)
	}
	rep.Tables = []Table{{
		Title:  "Levels between injections, the first run",
		Header: []string{"group", "packets in it", "DX's median", "switch's median", "DX's step per packet", "switch's step per packet"},
		Rows:   rows,
		Note: fmt.Sprintf("%d probes sent, %d seen by the tap, in %d groups; %d DX samples and %d switch samples placed; the port %s busy, "+
			"%d tap records missed; the flow sent %d packets, %d resent (warm-up included). DX's levels sit a "+
			"median %.1f µs from the switch's: its OWD_base is the OWD of its lowest-RTT sample, and a flow that keeps the "+
			"port busy at C never finds the queue empty. A negative step is the sender falling behind C for a moment "+
			"(woken later than its bucket covers), which drains the queue.",
			r.sent, len(r.inject), len(y.k), len(r.dx), len(r.sw), loadBusy(r.load), r.missed, r.sender.Sent, r.sender.Retrans,
			median(offs)/1e3),
	}}
	var lrows []loadRow
	for _, n := range noise {
		lrows = append(lrows, loadRow{label: fmt.Sprintf("unloaded, %s, run %d", n.path, n.round+1), load: n.load})
	}
	for _, x := range runs {
		lrows = append(lrows, loadRow{label: fmt.Sprintf("steps, run %d", x.round+1), load: x.load, drops: x.dropped})
	}
	rep.Plots = []Plot{{
		File: "steps.png", Caption: "Queueing delay over time, medians of 1 ms bins; an injection every interval (the first run).",
		Draw: func(path string) error { return drawSteps(path, r) },
	}}
	rep.Limits = []string{
		"t1 is the kernel's software transmit stamp of the send that carried the packet; a burst of the saturating flow, sent in one " +
			"UDP GSO send, has its first segment's stamp, so a packet late in its burst still reads the burst's sending as queueing. " +
			"The paper's Fig. 12(a) also uses software stamps, at 1 Gbit/s.",
		"The sender paces at C with the switch's wire accounting, rounded down to the ns per packet (0.007% fast), so the " +
			"queue also creeps up by about one packet per 14,000 sent; a sender woken later than its bucket covers falls " +
			"behind C and the queue shrinks.",
	}
	if len(noise) > 0 {
		for _, path := range []string{noiseDirect, noiseSwitch} {
			var ns []*rttNoise
			for _, n := range noise {
				if n.path == path {
					ns = append(ns, n)
				}
			}
			if len(ns) > 0 {
				rep.Claims = append(rep.Claims, noiseClaim(ns))
			}
		}
		rep.Tables = append(rep.Tables, noiseTable(noise))
		rep.Plots = append(rep.Plots, Plot{
			File: "rtt-noise.png", Caption: "RTT samples on the unloaded path (004 Fig. 11), the first run of each path: from the stamps, and with the sender's own paths.",
			Draw: func(path string) error { return drawNoise(path, noise) },
		})
		rep.Limits = append(rep.Limits, "On the unloaded path the stamps take out the sender's send and receive paths and the receiver's hold, "+
			"nothing else: t3 is read in user space before the receiver's sendmmsg; through the switch, two veths and the switch's worker, "+
			"which sleeps on an idle port and wakes for each packet, lie between the hosts; the direct pair is one veth. "+
			"The paper's hosts were cabled back to back and stamped at DPDK's poll or at the NIC.")
		n := noise[0]
		rep.Setup = append(rep.Setup, fmt.Sprintf("First, unloaded (004 §VI-A, Fig. 10–11, measured there between two hosts "+
			"back to back), over a direct veth pair between h1 and h5 (routes to each other's address over it, the switch out of the path) "+
			"and then through the switch: after %v of warm-up, h1 sends one flow to h5 for %v, paced at C/%d (%.1f Mbit/s) one packet at "+
			"a time, so that no packet waits behind another; the port has nothing else to send. Every ACK that covers one "+
			"packet gives two RTTs: from the stamps, (t4 − t1) − (t3 − t2) with t1 the kernel's transmit stamp, and with the sender's own "+
			"paths left in, from the time it read before sending to the time it read the ACK. The port's busy fraction does not apply to this phase.",
			warmup, n.duration, dxNoiseShare, float64(n.rate)/1e6))
	}
	rep.Tables = append(rep.Tables, loadTable(lrows))
	return rep
}

// noiseClaim compares the noise of the stamped RTT with the host-time
// RTT's on one path, over its runs: direction only, as the stamps differ
// (the paper's are DPDK's and the NIC's, ours the kernel's software
// stamps).
func noiseClaim(ns []*rttNoise) Claim {
	sd := func(f func(*rttNoise) []int64) Runs {
		return over(ns, func(n *rttNoise) float64 { return stddev(f(n)) })
	}
	sp := func(f func(*rttNoise) []int64) Runs {
		return over(ns, func(n *rttNoise) float64 { return float64(spread(f(n))) })
	}
	iq := func(f func(*rttNoise) []int64) Runs {
		return over(ns, func(n *rttNoise) float64 { return float64(iqr(f(n))) })
	}
	rtt := func(n *rttNoise) []int64 { return n.rtt }
	host := func(n *rttNoise) []int64 { return n.host }
	sr, sh := sd(rtt), sd(host)
	rr, rh := sp(rtt), sp(host)
	us := func(x float64) string { return fmt.Sprintf("%.2f", x/1e3) }
	samples := over(ns, func(n *rttNoise) float64 { return float64(len(n.rtt)) })
	var loads []demo.Load
	for _, n := range ns {
		loads = append(loads, n.load)
	}
	return Claim{
		Loads:  loads,
		Source: "004 §VI-A, Fig. 10–11",
		What:   "noise of RTT samples on an unloaded path, " + ns[0].path + ": from the stamps, against the RTT with host delay",
		Paper:  "σ 1.98 µs with DPDK software stamps, 0.53 µs with NIC stamps, against 80.7 µs in the kernel's TCP stack",
		Ours: fmt.Sprintf("σ %s µs from the stamps against %s µs with the sender's paths; IQR %s against %s µs; p1–p99 %s against %s µs (%.0f samples a run)",
			sr.Format(us), sh.Format(us), iq(rtt).Format(us), iq(host).Format(us), rr.Format(us), rh.Format(us), samples.Median()),
		Rule: below("the stamped RTT's σ", sr.Median(), sh.Median(), "the host-time RTT's").
			and(below("its p1–p99 spread", rr.Median(), rh.Median(), "the host-time RTT's")).
			given(samples.Median() > 1).because("direction only: the paper's stamps are DPDK's and the NIC's"),
	}
}

// noiseTable gives the distribution of both RTTs and of the switch's
// sojourn in the unloaded phase, per path and run.
func noiseTable(ns []*rttNoise) Table {
	row := func(name string, xs []int64) []string {
		us := func(v float64) string { return fmt.Sprintf("%.2f µs", v/1e3) }
		return []string{name, fmt.Sprint(len(xs)), us(float64(quantile(xs, 0.01))), us(float64(quantile(xs, 0.5))),
			us(float64(quantile(xs, 0.99))), us(float64(quantile(xs, 1))), us(stddev(xs)), us(float64(iqr(xs)))}
	}
	t := Table{
		Title:  "Unloaded path: RTT samples and the switch's sojourn",
		Header: []string{"", "samples", "p1", "median", "p99", "max", "σ", "IQR"},
	}
	for _, n := range ns {
		tag := fmt.Sprintf("%s, run %d: ", n.path, n.round+1)
		t.Rows = append(t.Rows, row(tag+"RTT from the stamps", n.rtt), row(tag+"RTT with the sender's own paths", n.host))
		if len(n.sojourn) > 0 {
			t.Rows = append(t.Rows, row(tag+"the switch's sojourn of the flow's packets", n.sojourn))
		}
	}
	n := ns[0]
	t.Note = fmt.Sprintf("The flow paced at %.1f Mbit/s, one packet at a time, for %v; t1 the kernel's transmit stamp for %d of the first run's %d samples. "+
		"The paper (004 §VI-A) reports σ 1.98 µs with DPDK software stamps and burst control, 0.53 µs with NIC stamps, against "+
		"80.7 µs for the kernel's TCP RTT; with NIC stamps the range was 11.38 µs against the kernel's 710 µs (Fig. 11). σ follows the "+
		"rare late sample (a descheduled thread); the IQR, the middle half's width, does not.",
		float64(n.rate)/1e6, n.duration, n.stamped, len(n.rtt))
	return t
}

// drawNoise plots the CDFs of the unloaded phase's two RTTs, the first
// run of each path.
func drawNoise(path string, ns []*rttNoise) error {
	durs := func(xs []int64) []time.Duration {
		ds := make([]time.Duration, len(xs))
		for i, x := range xs {
			ds[i] = time.Duration(x)
		}
		return ds
	}
	var lines []Line
	xmax := 0.0
	for _, n := range ns {
		if n.round > 0 || len(n.rtt) == 0 {
			continue
		}
		stamped, host := cdf(n.path+": from the stamps", durs(n.rtt)), cdf(n.path+": with the sender's paths", durs(n.host))
		host.Dashed = true
		lines = append(lines, stamped, host)
		xmax = max(xmax, 1.5*float64(quantile(n.host, 0.99))/1e3)
	}
	if len(lines) == 0 {
		return errors.New("dx-steps: no RTT samples to plot")
	}
	p, err := newPlot("RTT on the unloaded path", "RTT (µs)", "CDF", lines)
	if err != nil {
		return err
	}
	// The rare late sample would squeeze the body into the left edge: the
	// x axis ends past the host-time RTTs' p99, the table has the rest.
	p.X.Min, p.X.Max = 0, xmax
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
