package experiment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// hpccExperiment is HPCC against DCTCP through one port that both marks
// CE at K and adds INT records (Li et al., SIGCOMM 2019): one long-lived
// flow, then a second joining it, of transport/udp's endpoints, whose
// data carry INT headers either way.
func hpccExperiment() Experiment {
	return Experiment{
		Name:    "hpcc",
		Paper:   "HPCC's headline (Li et al., SIGCOMM 2019, §1, §5: a near-zero queue at high utilisation, fast fair convergence) on INT records from ecnswitch (issue 25)",
		Summary: "HPCC against DCTCP through one INT and DCTCP-marking port: a second flow joins a first; queue from the INT records, utilisation, convergence time; medians of 3 runs",
		Run:     runHPCC,
	}
}

// The experiment's constants, fixed before the first run.
const (
	hpccRate     = 250_000_000 // bit/s: the bottleneck, which this machine's endpoints keep busy (dx's 250 Mbit/s)
	hpccK        = dxK         // bytes: DCTCP's K, dx's
	hpccHostRate = 1e9         // bit/s: every sender paces at most at its link's rate
	// hpccT is HPCC's T: above the loop's RTT here (tens of µs of path,
	// up to the receiver's read of a batch and a loaded machine's
	// scheduling), so that W_init = 1 Gbit/s · T fills the port.
	hpccT        = 200 * time.Microsecond
	hpccPort     = 4790 // the receiver's UDP port, which the port's INT looks for
	hpccCoalesce = 5 * time.Microsecond
	hpccRuns     = 3
	hpccAlone    = time.Second            // the first flow alone, after its warm-up
	hpccSettle   = 500 * time.Millisecond // after the join, before the steady window
	hpccDefault  = 3 * time.Second        // the steady window with both flows
	hpccBin      = 20 * time.Millisecond
	hpccHold     = 5 // bins a convergence must hold
)

// The rules' bounds, fixed before the first run (see hpccClaims).
const (
	hpccNearZero   = 2.0  // full frames: HPCC's median queue at most this
	hpccQueueDrop  = 0.75 // HPCC's median queue below DCTCP's by at least this
	hpccBusyLo     = 0.85 // HPCC's port busy at least this (η = 95% is its target)
	hpccBusyOfDC   = 0.90 // HPCC's busy at least this share of DCTCP's
	hpccJainMin    = 0.95 // Jain's index of the two flows' goodput over the steady window
	hpccConvergedJ = 0.9  // a bin counts as converged at this Jain's index
)

// hpccKinds are the congestion controls, each through the same port.
var hpccKinds = []transport.Kind{transport.KindHPCC, transport.KindDCTCP}

// hpccRun is one run of one congestion control.
type hpccRun struct {
	cc   transport.Kind
	run  int
	busy float64 // the port over the steady window
	// q are the INT records' queue occupancy (after the packet left) of
	// every data packet sent in the steady window, bytes; sojourn their
	// queueing delay, ns.
	q, sojourn []int64
	// The flows' bytes at the bottleneck by hpccBin, from the first
	// packet of the first flow; join is the bin of flow 2's first packet.
	bins      [2][]int64
	join      int
	converged time.Duration // from the join; -1 if never
	jain      float64       // over the steady window
	goodput   [2]float64    // bit/s at the bottleneck over the steady window
	records   uint64        // INT records the port added over the run
	noRoom    uint64
	marks     uint64
	drops     uint64
	senders   []udp.SenderStats
	window, u []float64 // HPCC's final W and U, per flow
	missed    uint64    // packets the tap had no room for
	qAt       []int64   // time of each q, ns from the steady window's start
	flowOf    []uint8   // flow of each q
}

func runHPCC(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(hpccDefault)
	o := demo.Options{
		Classes:  []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, // the demo's flows are not used
		Rate:     hpccRate,
		K:        hpccK,
		Coalesce: hpccCoalesce,
		WorkerRX: true, // the endpoints' UDP receive is light: it stays on the worker's CPU
	}
	m0 := readMachine()
	var runs []*hpccRun
	o, err := env.withBed(ctx, o, func(b *bed) error {
		for _, cc := range hpccKinds {
			rs, err := repeat(ctx, hpccRuns, func(ctx context.Context, i int) (*hpccRun, error) {
				env.say("hpcc: %s, run %d of %d", cc, i+1, hpccRuns)
				r, err := runHPCCFlows(ctx, b, cc, hpccTimes{warmup, hpccAlone, hpccSettle, duration})
				if err != nil {
					return nil, err
				}
				r.run = i + 1
				env.say("hpcc: %s: busy %s, median queue %.2f frames, converged in %v", cc, Busy(r.busy), frames(float64(quantile(r.q, 0.5))), r.converged)
				return r, nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", cc, err)
			}
			runs = append(runs, rs...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hpcc: %w", err)
	}
	return hpccReport(env, o, warmup, duration, runs, m0.to(readMachine()))
}

// hpccConfig is the switch: every port as the demo's (one queue, shaped to
// the bed's rate, a static cap of its buffer), marking CE at K for
// DCTCP's senders, with INT for the packets to hpccPort.
func hpccConfig(o demo.Options, ifaces []string) dataplane.Config {
	cfg := dataplane.Config{Workers: 1, Spin: dataplane.DefaultSpin, CPUs: o.WorkerCPUs, Classifier: dataplane.Classifier{DSCP: map[uint8]int{}}}
	for i, name := range ifaces {
		cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: o.Buffer})
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name: name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, Queues: []scheduler.QueueConfig{{}},
				Overhead: scheduler.OverheadEthernet, LineRate: o.Rate},
			Shaper: scheduler.ShaperConfig{Rate: o.Rate, Bucket: o.Bucket, Overhead: scheduler.OverheadEthernet},
			Pool:   i,
			Queues: []buffer.QueueConfig{{Cap: o.Buffer}},
			Enqueue: []dataplane.MarkerSpec{{Name: marking.SchemeDCTCP, New: func(nq int) (marking.Marker, error) {
				return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(o.K)), marking.Enqueue, nq)
			}}},
			INT:      &dataplane.INT{Port: hpccPort, NodeID: uint32(i + 1)},
			Coalesce: o.Coalesce,
		})
	}
	return cfg
}

// hpccSender is one flow's sender config.
func hpccSender(cc transport.Kind, flow uint32) udp.Config {
	c := udp.Config{Flow: flow, CC: cc, INTHops: 1, Rate: hpccHostRate}
	if cc == transport.KindHPCC {
		c.HPCC = transport.HPCCConfig{
			BaseRTT: int64(hpccT),
			Init:    float64(hpccHostRate) * hpccT.Seconds() / 8 / wireFrame, // W_init = B_NIC·T, in full frames on the wire
		}
	}
	return c
}

// hpccTimes are a run's phases: flow 1's warm-up, flow 1 alone, from
// flow 2's join to the steady window, and the steady window.
type hpccTimes struct{ warmup, alone, settle, steady time.Duration }

// runHPCCFlows runs flow 1 of cc from h1 alone, then flow 2 from h2
// beside it, through a switch of hpccConfig, and measures.
func runHPCCFlows(ctx context.Context, b *bed, cc transport.Kind, ts hpccTimes) (*hpccRun, error) {
	r := &hpccRun{cc: cc, converged: -1}
	o := b.options()
	err := b.withConfig(hpccConfig(o, b.ifaces()), func(sw demo.Switch) (err error) {
		tp, ok := sw.(tapper)
		if !ok {
			return errors.New("the switch takes no tap")
		}
		total := ts.warmup + ts.alone + ts.settle + ts.steady + 2*time.Second
		tap := &hpccTap{recs: make([]hpccRecord, int(float64(o.Rate)/(8*wireFrame)*total.Seconds()*1.2)+1024)}
		if err := tp.AddTap(demo.Bottleneck, tap); err != nil {
			return err
		}
		hosts := b.hosts()
		rc, err := hosts[demo.Bottleneck].ListenUDP(hpccPort)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rc.Close()) }()
		rconn, err := udp.Prepare(rc, udp.NotECT)
		if err != nil {
			return err
		}
		rcv, err := udp.NewReceiver(rconn, udp.ReceiverConfig{INT: true})
		if err != nil {
			return err
		}
		dst := netip.AddrPortFrom(hosts[demo.Bottleneck].IPv4, hpccPort)
		var senders []*udp.Sender
		for i := range 2 {
			s, c, err := dialSender(ctx, hosts[i], dst, hpccSender(cc, uint32(i+1)))
			if err != nil {
				return err
			}
			defer c.Close()
			senders = append(senders, s)
		}
		tap.on.Store(true)
		stop := runSenders(ctx, rcv, senders[:1])
		werr := warm(ctx, rcv, 1, ts.warmup)
		if werr == nil {
			werr = sleep(ctx, ts.alone)
		}
		if werr != nil {
			return errors.Join(werr, stop())
		}
		stop2 := runSenders(ctx, nil, senders[1:])
		werr = warm(ctx, rcv, 2, 0)
		if werr == nil {
			werr = sleep(ctx, ts.settle)
		}
		st0 := sw.Stats().Ports[demo.Bottleneck]
		tap.steady.Store(true)
		start := time.Now()
		if werr == nil {
			werr = sleep(ctx, ts.steady)
		}
		elapsed := time.Since(start)
		tap.steady.Store(false)
		st1 := sw.Stats().Ports[demo.Bottleneck]
		if err := errors.Join(werr, stop2(), stop()); err != nil {
			return err
		}
		if err := sw.Stop(); err != nil { // the tap is quiet once the workers stop
			return err
		}
		tap.on.Store(false)
		r.busy = demo.PortBusy(st0, st1, o.Rate, elapsed)
		r.marks = st1.Queues[0].MarkedEnq - st0.Queues[0].MarkedEnq
		r.drops = queueDrops(st0, st1, 0)
		if in := st1.INT; in != nil {
			r.records, r.noRoom = in.Added, in.NoRoom
		}
		for _, s := range senders {
			r.senders = append(r.senders, s.Stats())
			if h, ok := s.Controller().(*transport.HPCC); ok {
				r.window, r.u = append(r.window, h.Window()), append(r.u, h.U())
			}
		}
		r.missed = tap.missed.Load()
		r.fill(tap.records())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// runSenders runs the receiver (if any) and the senders until stop,
// which ends the senders, lets their last ACKs arrive, ends the receiver
// and returns their errors.
func runSenders(ctx context.Context, rcv *udp.Receiver, senders []*udp.Sender) (stop func() error) {
	if rcv != nil {
		return runEndpoints(ctx, rcv, senders)
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(senders))
	for i, s := range senders {
		wg.Go(func() { errs[i] = s.Run(sctx) })
	}
	return func() error {
		cancel()
		wg.Wait()
		return errors.Join(errs...)
	}
}

// fill computes the run's measures from the tap's records.
func (r *hpccRun) fill(recs []hpccRecord) {
	if len(recs) == 0 {
		return
	}
	t0 := recs[0].t
	from, to := int64(-1), int64(0) // the steady window's first and last records' times
	for _, x := range recs {
		if x.steady {
			if from < 0 {
				from = x.t
			}
			to = x.t
		}
	}
	bin := int64(hpccBin)
	r.join = -1
	var bytes [2]int64
	for _, x := range recs {
		f := int(x.flow) - 1
		if f < 0 || f > 1 {
			continue
		}
		k := int((x.t - t0) / bin)
		for len(r.bins[0]) <= k {
			r.bins[0], r.bins[1] = append(r.bins[0], 0), append(r.bins[1], 0)
		}
		r.bins[f][k] += int64(x.wire)
		if f == 1 && r.join < 0 {
			r.join = k
		}
		if x.steady {
			r.q = append(r.q, int64(x.queue))
			r.sojourn = append(r.sojourn, x.sojourn)
			r.qAt = append(r.qAt, x.t-from)
			r.flowOf = append(r.flowOf, uint8(f))
			bytes[f] += int64(x.wire)
		}
	}
	if d := float64(to-from) / 1e9; d > 0 {
		for f := range 2 {
			r.goodput[f] = float64(bytes[f]) * 8 / d
		}
	}
	r.jain = jain(float64(bytes[0]), float64(bytes[1]))
	r.converged = convergence(r.bins, r.join)
}

// jain returns Jain's fairness index of two rates, 1 when equal; 0 when
// both are 0.
func jain(a, b float64) float64 {
	if a+b == 0 {
		return 0
	}
	return (a + b) * (a + b) / (2 * (a*a + b*b))
}

// convergence returns the time from bin join (flow 2's first packet) to
// the start of the first hpccHold bins in a row whose Jain's index of the
// two flows' bytes is at least hpccConvergedJ; -1 if none, or no join.
func convergence(bins [2][]int64, join int) time.Duration {
	if join < 0 {
		return -1
	}
	run := 0
	for k := join; k < len(bins[0]); k++ {
		if jain(float64(bins[0][k]), float64(bins[1][k])) >= hpccConvergedJ {
			run++
		} else {
			run = 0
		}
		if run == hpccHold {
			return time.Duration(k-hpccHold+1-join) * hpccBin
		}
	}
	return -1
}

// hpccFrame is a data frame as it waits in the queue, bytes: a 1448-byte
// datagram's, before the switch adds its record.
const hpccFrame = udp.DefaultSize - 24 + 8 + 20 + 14

// frames turns queued bytes into data frames (hpccFrame).
func frames(bytes float64) float64 { return bytes / hpccFrame }

// hpccTap keeps, while on is set, every transport/udp data packet the
// bottleneck port sends that carries INT headers: its time, flow, the
// queue occupancy its record carries and its queueing delay. It runs on
// the worker, so it neither allocates nor locks, and drops what does not
// fit.
type hpccTap struct {
	on     atomic.Bool
	steady atomic.Bool // the steady window is open
	n      atomic.Int64
	missed atomic.Uint64
	recs   []hpccRecord
}

type hpccRecord struct {
	t, sojourn int64
	queue      uint32 // bytes, this hop's record
	wire       uint32 // the frame on the wire, bytes
	flow       uint32
	steady     bool // in the steady window
}

// Record implements dataplane.Tap.
func (t *hpccTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventEgress || ev.INT != dataplane.INTAdded || !t.on.Load() {
		return
	}
	flow, queue, ok := intData(ev.Frame)
	if !ok {
		return
	}
	i := t.n.Add(1) - 1
	if i >= int64(len(t.recs)) {
		t.missed.Add(1)
		return
	}
	t.recs[i] = hpccRecord{t: ev.Time, sojourn: ev.Sojourn, queue: queue, wire: uint32(len(ev.Frame) + 24), flow: flow, steady: t.steady.Load()}
}

// records returns what the tap kept; call it once the worker stopped.
func (t *hpccTap) records() []hpccRecord {
	return t.recs[:min(t.n.Load(), int64(len(t.recs)))]
}

// intData returns the flow of an untagged IPv4 frame carrying a
// transport/udp data datagram behind INT headers, and the queue occupancy
// of the newest record.
func intData(f []byte) (flow, queue uint32, ok bool) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv4 || f[14+9] != packet.ProtoUDP {
		return 0, 0, false
	}
	p := 14 + int(f[14]&0xf)*4 + 8
	if p > len(f) {
		return 0, 0, false
	}
	h, stack, err := intmd.Parse(f[p:])
	if err != nil || h.Hops() == 0 {
		return 0, 0, false
	}
	hop, _ := h.Hop(stack, 0)
	d := f[p+intmd.HeaderLen+len(stack):]
	if len(d) < udp.HeaderLen || d[0] != 1<<4|byte(udp.TypeData) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(d[2:]), hop.QueueBytes, true
}

// hpccOf returns the runs of cc.
func hpccOf(runs []*hpccRun, cc transport.Kind) []*hpccRun {
	var out []*hpccRun
	for _, r := range runs {
		if r.cc == cc {
			out = append(out, r)
		}
	}
	return out
}

// busies returns the runs' busy fractions.
func busies(runs ...[]*hpccRun) []float64 {
	var b []float64
	for _, rs := range runs {
		for _, r := range rs {
			b = append(b, r.busy)
		}
	}
	return b
}

// hpccClaims sets HPCC's claims beside the runs: every rule is on the
// medians over the runs of each congestion control.
func hpccClaims(runs []*hpccRun) []Claim {
	hp, dc := hpccOf(runs, transport.KindHPCC), hpccOf(runs, transport.KindDCTCP)
	medQ := func(r *hpccRun) float64 { return frames(float64(quantile(r.q, 0.5))) }
	p99Q := func(r *hpccRun) float64 { return frames(float64(quantile(r.q, 0.99))) }
	conv := func(r *hpccRun) float64 {
		if r.converged < 0 {
			return float64(1 << 62) // never: slower than any time
		}
		return float64(r.converged) / 1e6
	}
	hq, dq := over(hp, medQ), over(dc, medQ)
	h99, d99 := over(hp, p99Q), over(dc, p99Q)
	hb, db := over(hp, func(r *hpccRun) float64 { return r.busy }), over(dc, func(r *hpccRun) float64 { return r.busy })
	hc, dcv := over(hp, conv), over(dc, conv)
	hj := over(hp, func(r *hpccRun) float64 { return r.jain })
	fr := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	pc := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	ms := func(x float64) string {
		if x >= 1<<61 {
			return "never"
		}
		return fmt.Sprintf("%.0f", x)
	}
	all := busies(hp, dc)
	return []Claim{
		{Source: "HPCC §1, §5.2 (Fig. 9, 10)", What: "median queue, HPCC, 2 flows (INT records, after the packet left)",
			Paper: "near zero", Ours: hq.Format(fr) + " frames", Loads: busyOnly(busies(hp)...),
			Rule: atMost("HPCC's median queue", hq.Median(), hpccNearZero, " frames")},
		{Source: "HPCC §5.2 (Fig. 9, 10)", What: fmt.Sprintf("median queue, HPCC vs DCTCP (marking at K = %d B, %.1f frames), 2 flows", hpccK, frames(hpccK)),
			Paper: "HPCC's far below DCTCP's", Ours: hq.Format(fr) + " vs " + dq.Format(fr) + " frames", Loads: busyOnly(all...),
			Rule: lower("median queue, DCTCP → HPCC", dq.Median(), hq.Median(), hpccQueueDrop, 1)},
		{Source: "HPCC §5.2 (Fig. 9, 10)", What: "p99 queue, HPCC vs DCTCP, 2 flows",
			Paper: "HPCC's far below DCTCP's", Ours: h99.Format(fr) + " vs " + d99.Format(fr) + " frames", Loads: busyOnly(all...),
			Rule: below("HPCC's p99", h99.Median(), d99.Median(), "DCTCP's")},
		{Source: "HPCC §3.3, §5.2", What: "utilisation, HPCC, 2 flows (port busy; HPCC aims at η = 95%)",
			Paper: "high: η = 95%", Ours: hb.Format(pc), Loads: busyOnly(busies(hp)...),
			Rule: atLeast("HPCC's busy", hb.Median(), hpccBusyLo, "%")},
		{Source: "HPCC §5.2", What: "utilisation, HPCC vs DCTCP, 2 flows",
			Paper: "HPCC close to DCTCP's", Ours: hb.Format(pc) + " vs " + db.Format(pc), Loads: busyOnly(all...),
			Rule: atLeastOf("HPCC's busy", hb.Median(), db.Median(), hpccBusyOfDC, "DCTCP's")},
		{Source: "HPCC §1, §5.3", What: fmt.Sprintf("convergence after a second flow joins (Jain's index ≥ %.1f over %d bins of %v in a row)", hpccConvergedJ, hpccHold, hpccBin),
			Paper: "faster than DCTCP", Ours: hc.Format(ms) + " vs " + dcv.Format(ms) + " ms", Loads: busyOnly(all...),
			Rule: notAbove("HPCC's", hc.Median(), dcv.Median(), "DCTCP's")},
		{Source: "HPCC §5.3", What: "fairness, HPCC, 2 flows (Jain's index of their bytes over the steady window)",
			Paper: "fair", Ours: hj.Format(func(x float64) string { return fmt.Sprintf("%.3f", x) }), Loads: busyOnly(busies(hp)...),
			Rule: atLeast("Jain's index", hj.Median(), hpccJainMin, "")},
	}
}

// hpccReport renders the runs.
func hpccReport(env Env, o demo.Options, warmup, duration time.Duration, runs []*hpccRun, m machine) (*Report, error) {
	if want := len(hpccKinds) * hpccRuns; len(runs) != want {
		return nil, fmt.Errorf("hpcc: %d runs, want %d", len(runs), want)
	}
	rep := env.report(hpccExperiment(), "HPCC against DCTCP on ecnswitch's INT")
	hc := hpccSender(transport.KindHPCC, 1).HPCC
	h, _ := transport.NewHPCC(hc)
	hc = h.Config()
	rep.Setup = []string{
		fmt.Sprintf("The demo's five-host testbed; ecnswitch on AF_XDP ports, every port shaped to %.0f Mbit/s with one queue and a %d KB "+
			"buffer; h5's port is the bottleneck. Every port marks CE at K = %d bytes (RED cut-off on the queue, DCTCP's) and has INT "+
			"(dataplane.INT) for UDP to port %d: it adds its record — queue occupancy after the packet left, TX bytes, egress time, link "+
			"rate, 24 bytes — to every data packet as it leaves. HPCC and DCTCP run through the same port, in turn.",
			float64(o.Rate)/1e6, o.Buffer>>10, hpccK, hpccPort),
		fmt.Sprintf("The flows are transport/udp's endpoints: 1448-byte datagrams that start with INT-MD headers asking one hop for HPCC's "+
			"fields (room left for the record: 1472-byte datagrams on the wire past the switch), paced at most at %.0f Gbit/s in bursts "+
			"of ≤ 10 packets; the receiver on h5 echoes each data packet's records in its ACK. Flow 1 (h1) runs alone for %v after "+
			"%v of warm-up, then flow 2 (h2) joins; %v after the join the steady window of %v begins. %d runs of each congestion "+
			"control; every rule is on the medians over runs.",
			hpccHostRate/1e9, hpccAlone, warmup, hpccSettle, duration, hpccRuns),
		fmt.Sprintf("HPCC is Algorithm 1 of the paper (transport.HPCC): T = %v, W_init = B_NIC·T = %.1f packets (B_NIC = %.0f Gbit/s), "+
			"η = %.2f, maxStage = %d, W_AI = W_init·(1 − η)/16 = %.3f packets, the window at most W_init, paced at W/T. DCTCP is "+
			"transport.DCTCP (g = 1/16) against the marks; it ignores the INT records it carries too.",
			hpccT, hc.Init, hpccHostRate/1e9, hc.Eta, hc.MaxStage, hc.AI),
		"The queue is what the switch's INT records carry (the queue the packet left, after it left), read by a tap on the " +
			"bottleneck from every data packet it sent in the steady window, in data frames as they wait (" + strconv.Itoa(hpccFrame) + " bytes, before their record); \"busy\" is the port's wire rate " +
			"over C in the window. Convergence: from flow 2's first packet at the bottleneck, the time until Jain's index of the two " +
			"flows' bytes per " + hpccBin.String() + " bin stays ≥ " + fmt.Sprint(hpccConvergedJ) + " for " + strconv.Itoa(hpccHold) + " bins.",
		"The machine: " + m.String() + ". The runs were made on this loaded machine, not under the quiet-machine lock; see Limits.",
	}
	rep.Scaling = fmt.Sprintf("The paper runs 25–100 Gbit/s links with µs RTTs in its testbed and simulations; here the link is %.0f Mbit/s "+
		"and T is %v. HPCC's window law is scale-free in U (qlen/(B·T) + txRate/B) and η; W_init and W_AI follow B_NIC·T. "+
		"Queues are compared in frames, not µs.", float64(o.Rate)/1e6, hpccT)
	rep.Claims = hpccClaims(runs)
	rep.Tables = hpccTables(runs)
	rep.Plots = hpccPlots(runs)
	rep.Limits = []string{
		"HPCC aims at η = 95% of the link, below MinBusy's 95% comparable bound by design: an HPCC run near 95% busy is doing what " +
			"HPCC does; \"not comparable\" beside DCTCP's runs means the machine did not keep up.",
		"The endpoints are user-space programs on a loaded two-vCPU machine: a sender late by a scheduling quantum sends a burst (at " +
			"most 10 packets), and the worker, late too, stamps a batch's arrivals at once; both show as queue on the virtual line " +
			"that no congestion control made. The queue percentiles include that noise.",
		"HPCC's records come from ecnswitch's one hop; the paper's multi-hop paths and its per-hop rate choice are not exercised. " +
			"HPCC reacts to every ACK (fast reaction) and updates its reference window once per round trip, as Algorithm 1 does; " +
			"ACKs cover the packets of one read (up to 16), so some packets' records are never echoed.",
		"The network is lossy (a static cap, no PFC): a loss is recovered by go-back-N; HPCC's window ignores it, as HPCC has no loss reaction.",
	}
	return rep, nil
}

// hpccTables are the report's tables: per run, then per flow.
func hpccTables(runs []*hpccRun) []Table {
	var rows [][]string
	for _, r := range runs {
		conv := "never"
		if r.converged >= 0 {
			conv = fmt.Sprintf("%d ms", r.converged.Milliseconds())
		}
		wu := "–"
		if len(r.window) == 2 {
			wu = fmt.Sprintf("%.2f, %.2f / %.2f, %.2f", r.window[0], r.window[1], r.u[0], r.u[1])
		}
		rows = append(rows, []string{
			r.cc.String(), strconv.Itoa(r.run), Busy(r.busy),
			fmt.Sprintf("%.2f", frames(float64(quantile(r.q, 0.5)))), fmt.Sprintf("%.2f", frames(float64(quantile(r.q, 0.99)))),
			fmt.Sprintf("%.2f", frames(float64(slices.Max(append(r.q, 0))))),
			micros(time.Duration(quantile(r.sojourn, 0.5))), micros(time.Duration(quantile(r.sojourn, 0.99))),
			mbps(r.goodput[0]) + ", " + mbps(r.goodput[1]), fmt.Sprintf("%.3f", r.jain), conv,
			fmt.Sprint(r.marks), fmt.Sprint(r.drops), fmt.Sprint(r.records), fmt.Sprint(r.noRoom), wu,
		})
	}
	var frows [][]string
	for _, r := range runs {
		for i, s := range r.senders {
			frows = append(frows, []string{r.cc.String(), strconv.Itoa(r.run), strconv.Itoa(i + 1),
				fmt.Sprint(s.Sent), fmt.Sprint(s.Retrans), fmt.Sprint(s.Timeouts), fmt.Sprint(s.Marks), fmt.Sprint(s.Congestion), fmt.Sprint(s.Acks)})
		}
	}
	return []Table{
		{
			Title: "Runs (the steady window with both flows)",
			Header: []string{"CC", "run", "busy", "median queue (frames)", "p99", "max", "median sojourn", "p99 sojourn",
				"flows' rates at the bottleneck", "Jain", "converged after", "CE marks", "drops", "INT records added", "no room",
				"HPCC's W (pkt) / U at the end"},
			Rows: rows,
			Note: "Queues are the INT records' (after the packet left); sojourns the switch's enqueue-to-dequeue times of the same " +
				"packets. Records and \"no room\" count over the whole run, warm-up included.",
		},
		{
			Title:  "Per flow (whole run)",
			Header: []string{"CC", "run", "flow", "sent", "resent", "timeouts", "CE echoed", "window reductions", "ACKs"},
			Rows:   frows,
		},
	}
}

// hpccPlots are the report's plots, from each congestion control's first
// run: the queue over time and its CDF, and the flows' rates around the
// join.
func hpccPlots(runs []*hpccRun) []Plot {
	first := func(cc transport.Kind) *hpccRun { return hpccOf(runs, cc)[0] }
	return []Plot{
		{File: "queue-time.png", Caption: "The bottleneck's queue (INT records) over the first 100 ms of the steady window, first run of each.", Draw: func(path string) error {
			var lines []Line
			for _, cc := range hpccKinds {
				r := first(cc)
				var xy plotter.XYs
				for i, t := range r.qAt {
					if t > int64(100*time.Millisecond) {
						break
					}
					xy = append(xy, plotter.XY{X: float64(t) / 1e6, Y: frames(float64(r.q[i]))})
				}
				lines = append(lines, Line{Label: cc.String(), XY: xy})
			}
			p, err := newPlot("queue, 2 flows", "time (ms)", "queue (frames)", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 16*vg.Centimeter, 8*vg.Centimeter)
		}},
		{File: "queue-cdf.png", Caption: "CDF of the queue every data packet's INT record carries, steady windows of every run.", Draw: func(path string) error {
			var lines []Line
			for _, r := range runs {
				q := slices.Clone(r.q)
				slices.Sort(q)
				xy := make(plotter.XYs, len(q))
				for i, b := range q {
					xy[i] = plotter.XY{X: frames(float64(b)), Y: float64(i+1) / float64(len(q))}
				}
				lines = append(lines, Line{Label: fmt.Sprintf("%s run %d", r.cc, r.run), XY: xy, Dashed: r.cc == transport.KindDCTCP})
			}
			p, err := newPlot("queue per data packet", "frames", "CDF", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 14*vg.Centimeter, 9*vg.Centimeter)
		}},
		{File: "join.png", Caption: fmt.Sprintf("Each flow's rate at the bottleneck per %v around flow 2's join, first run of each.", hpccBin), Draw: func(path string) error {
			var ps []*plot.Plot
			for _, cc := range hpccKinds {
				r := first(cc)
				var lines []Line
				for f := range 2 {
					var xy plotter.XYs
					for k := max(r.join-10, 0); k < min(r.join+40, len(r.bins[f])); k++ {
						xy = append(xy, plotter.XY{X: float64(k-r.join) * hpccBin.Seconds() * 1e3, Y: float64(r.bins[f][k]) * 8 / hpccBin.Seconds() / 1e6})
					}
					lines = append(lines, Line{Label: fmt.Sprintf("flow %d", f+1), XY: xy})
				}
				p, err := newPlot(cc.String(), "ms from the join", "Mbit/s", lines)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			return saveTiles(path, 2, ps, 12*vg.Centimeter, 8*vg.Centimeter)
		}},
	}
}
