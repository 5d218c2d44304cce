package experiment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
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
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// bccShared is BCC's testbed validation (002 §V-B): two congested egress
// ports on one shared buffer pool with Dynamic Threshold α = 1, long-lived
// ECN TCP into one and a UDP blast into the other, the shared-buffer ECN
// threshold swept (Fig. 7 and 9); then the same two ports on pools of
// their own with TCP into both (Table IV).
func bccShared() Experiment {
	return Experiment{
		Name:    "bcc-shared",
		Paper:   "BCC's testbed validation (002 §V-B, Fig. 7 and 9, Table IV)",
		Summary: "two congested ports on one DT pool, TCP against a UDP blast: shared-buffer ECN threshold sweep, TCP goodput, loss, buffer over time",
		Run:     runBCC,
	}
}

// The paper's testbed (002 §V-B): 100 Gbit/s ports, a per-queue ECN
// threshold of 325 KB, 3 MB of each MMU dynamically allocated with α = 1,
// 16 TCP flows from two senders to P5 and a UDP blast to P6.
const (
	bccPaperRate  = 100e9
	bccPaperK     = 325 << 10
	bccPaperPool  = 3 << 20
	bccPaperFlows = 16
	bccAlpha      = 1.0
	bccUDPLoad    = 1.2  // the blast's offered load on P6, of C
	bccPayload    = 1472 // UDP payload bytes: 1514-byte frames
	bccSample     = 20 * time.Millisecond
	// bccRate is the testbed's C: lower than the other experiments' 995
	// Mbit/s because one CPU runs every host's TCP and the blast, which at
	// 995 Mbit/s reached 39% of C beside 274 Mbit/s of TCP; at 300 Mbit/s
	// P5 was busy 77–95% (2026-11-23).
	bccRate = 200_000_000
	// bccCC and bccRTO are the hosts' TCP: 002 §V-B's testbed runs ECN*,
	// "regular ECN-enabled TCP", which Linux's cubic with ECN is; its
	// RTO_min is 002's 5 ms (§III-C, §V-A: "the minimum effective RTO_min
	// for many Linux kernel versions").
	bccCC  = "cubic"
	bccRTO = 5 * time.Millisecond
)

// bccHosts cites what the paper's hosts ran.
const bccHosts = "002 §V-B: \"We use ECN* (regular ECN-enabled TCP) in experiments as it is more sensitive to different ECN marking settings\": " +
	"Linux's cubic with ECN, which cuts its window to 0.7 on an ECN echo, once per round trip. The testbed's RTO_min is not stated; 002 sets " +
	"5 ms in its simulations (§III-C, §V-A), \"the minimum effective RTO_min for many Linux kernel versions\", and so do we."

// bccNonECT is the experiment's Not-ECT policy: the common one, and what
// it means under ECN*.
const bccNonECT = nonECTDrop + " Under ECN* the SYNs (and bare FINs) are Not-ECT: every TCP flow connects before the blast starts, " +
	"as the paper's long-lived flows were up before it set a threshold, so that no SYN meets a marker above its threshold."

// Hosts of the demo's testbed as this experiment uses them: h1 and h2 send
// TCP to h5 (P5), h3 sends UDP (or, for Table IV, TCP) to h4 (P6).
const (
	bccTCPPort  = demo.Hosts - 1 // h5's port, the paper's P5
	bccUDPPort  = demo.Hosts - 2 // h4's port, the paper's P6
	bccUDPSrc   = 2              // h3
	bccDefaultT = demo.DefaultDuration
)

var (
	bccTCPSenders = []int{0, 1}
	// The shared-buffer thresholds of Fig. 9, in the paper's KB; 0 turns
	// shared-buffer ECN off (the figure's reference, and Fig. 7).
	bccSweep = []int64{0, 500, 1000, 1500, 1750, 2000}
	// Table IV's thresholds, KB.
	bccTableIV = []int64{0, 350, 150}
	// UDP loads of the loss sweep, of C; bccUDPLoad is the sweep's.
	bccLoads = []float64{0.6, 0.9, bccUDPLoad}
	// The threshold BCC runs with in the loss sweep, the paper's KB.
	bccLossK int64 = 1000
)

// bccScale maps the paper's buffer sizes onto the testbed. Every buffer
// quantity keeps its ratio to the per-port ECN threshold K, which is
// C·RTT·λ at both rates (002 §III-A, 001 §2.2 Eq. 1): a size of the
// paper's is multiplied by K/325 KB. With K = 32 KB the 3 MB pool is
// 302 KB. The base RTT is made K/C by a delay line, so K stays one BDP,
// and the TCP flows are scaled with the bytes, so that their minimum
// windows are the same share of the BDP: 16 × 0.098 ≈ 2 flows.
type bccScale struct {
	K    int64 // the testbed's per-port threshold, bytes
	Rate int64 // bit/s
}

// factor is K over the paper's 325 KB.
func (s bccScale) factor() float64 { return float64(s.K) / bccPaperK }

// bytes returns the paper's kb KB at the testbed.
func (s bccScale) bytes(kb int64) int64 { return int64(float64(kb<<10)*s.factor() + 0.5) }

// pool is the shared pool B.
func (s bccScale) pool() int64 { return s.bytes(bccPaperPool >> 10) }

// flows is the number of TCP flows to a congested port, at least one a sender.
func (s bccScale) flows() int {
	return max(int(float64(bccPaperFlows)*s.factor()+0.5), len(bccTCPSenders))
}

// delay is the delay line of each egress port: two of them in a flow's
// path make its base RTT K/C, plus the testbed's own.
func (s bccScale) delay() time.Duration {
	return time.Duration(float64(s.K) * 8 / float64(s.Rate) * 1e9 / 2)
}

// String says how the paper was scaled, for the report.
func (s bccScale) String() string {
	return fmt.Sprintf("The paper's testbed runs at 100 Gbit/s with a per-queue ECN threshold of 325 KB (002 §V-B); ours at %s with K = %d KB, "+
		"the standard threshold C·RTT·λ of the MQ-ECN testbed (001 §5.1). Every buffer size keeps its ratio to K, which is one BDP at both rates: "+
		"a size of the paper's is multiplied by %d KB / 325 KB = %.4f, so the 3 MB pool is %d KB and a shared-buffer threshold of 1500 KB is %d KB. "+
		"A delay line of K/(2C) = %v on every egress port makes the base RTT K/C (%v) plus the testbed's own tens of µs, so K stays one BDP. "+
		"The number of TCP flows scales with the bytes, so that their minimum windows (2 segments each) are the same share of the BDP: 16 × %.3f ≈ %d.",
		rate(s.Rate), s.K>>10, s.K>>10, s.factor(), s.pool()>>10, s.bytes(1500)>>10, s.delay().Round(time.Microsecond), (2 * s.delay()).Round(time.Microsecond),
		s.factor(), s.flows())
}

// bccCase is one run: the shared-buffer threshold (the paper's KB, 0 for
// none), the UDP blast's load on P6 (0: TCP from h3 to h4 instead, the
// multi-MMU case of Table IV) and whether P5 and P6 share one pool.
type bccCase struct {
	part      string // "fig9", "loss" or "table4"
	threshold int64  // paper's KB; 0: shared-buffer ECN off
	udpLoad   float64
	shared    bool
}

// bccCases returns the runs in order: the threshold sweep with the blast
// at bccUDPLoad, the loss sweep over bccLoads without and with BCC (the
// bccUDPLoad points are the sweep's), then Table IV.
func bccCases() []bccCase {
	var cs []bccCase
	for _, k := range bccSweep {
		cs = append(cs, bccCase{part: "fig9", threshold: k, udpLoad: bccUDPLoad, shared: true})
	}
	for _, l := range bccLoads {
		if l == bccUDPLoad {
			continue
		}
		for _, k := range []int64{0, bccLossK} {
			cs = append(cs, bccCase{part: "loss", threshold: k, udpLoad: l, shared: true})
		}
	}
	for _, k := range bccTableIV {
		cs = append(cs, bccCase{part: "table4", threshold: k})
	}
	return cs
}

// bccConfig is the switch of case c on the testbed's ports (ifaces, h1 to
// h5): one queue a port, DWRR, shaped to C; P5 and P6 draw from one pool of
// B with DT α (c.shared) or from one each, the other ports from pools of
// their own with a static cap; every port marks at dequeue (002 §V-B
// footnote 4) with per-port standard ECN at K and, when c.threshold is
// set, BCC's shared-buffer ECN with K_min = K_max = the scaled threshold
// (as the paper's testbed sets both, Fig. 8).
func bccConfig(o demo.Options, ifaces []string, c bccCase) (dataplane.Config, error) {
	if len(ifaces) != demo.Hosts {
		return dataplane.Config{}, fmt.Errorf("bcc-shared: %d ports, want %d", len(ifaces), demo.Hosts)
	}
	s := bccScale{K: o.K, Rate: o.Rate}
	deq, err := bccMarkers(s, c.threshold)
	if err != nil {
		return dataplane.Config{}, err
	}
	cfg := dataplane.Config{Workers: 1, Spin: dataplane.DefaultSpin, CPUs: o.WorkerCPUs, Classifier: dataplane.Classifier{DSCP: map[uint8]int{}}}
	cfg.Pools = []buffer.PoolConfig{{Size: s.pool()}}
	if !c.shared {
		cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: s.pool()})
	}
	for i, name := range ifaces {
		pool, q := 0, buffer.QueueConfig{Alpha: bccAlpha}
		switch {
		case i == bccUDPPort && !c.shared:
			pool = 1
		case i != bccUDPPort && i != bccTCPPort:
			pool, q = len(cfg.Pools), buffer.QueueConfig{Cap: o.Buffer}
			cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: o.Buffer})
		}
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name: name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, Queues: []scheduler.QueueConfig{{}},
				Overhead: scheduler.OverheadEthernet, LineRate: o.Rate},
			Shaper:   scheduler.ShaperConfig{Rate: o.Rate, Bucket: o.Bucket, Overhead: scheduler.OverheadEthernet},
			Pool:     pool,
			Queues:   []buffer.QueueConfig{q},
			Dequeue:  deq,
			Delay:    dataplane.Delay{Fixed: s.delay()},
			Coalesce: o.Coalesce,
		})
	}
	return cfg, nil
}

// bccMarkers returns the dequeue chain: per-port standard ECN at K, and
// with threshold (the paper's KB) BCC's two members, the per-port one at K
// and the shared-buffer one at the scaled threshold.
func bccMarkers(s bccScale, threshold int64) ([]dataplane.MarkerSpec, error) {
	if threshold == 0 {
		port := marking.CutOff(marking.MeasurePort, marking.Bytes(s.K))
		if _, err := marking.NewRED(port, marking.Dequeue, 1); err != nil {
			return nil, fmt.Errorf("bcc-shared: %w", err)
		}
		return []dataplane.MarkerSpec{{Name: "port-standard", New: func(nq int) (marking.Marker, error) {
			return marking.NewRED(port, marking.Dequeue, nq)
		}}}, nil
	}
	cfg := marking.BCCConfig{PortThreshold: marking.Bytes(s.K), KMin: marking.Bytes(s.bytes(threshold)), LineRate: s.Rate}
	if _, err := marking.NewBCC(cfg, marking.Dequeue, 1); err != nil {
		return nil, fmt.Errorf("bcc-shared: threshold %d KB: %w", threshold, err)
	}
	member := func(i int) func(int) (marking.Marker, error) {
		return func(nq int) (marking.Marker, error) {
			ms, err := marking.NewBCC(cfg, marking.Dequeue, nq)
			if err != nil {
				return nil, err
			}
			return ms[i].Marker, nil
		}
	}
	return []dataplane.MarkerSpec{{Name: marking.BCCPortMember, New: member(0)}, {Name: marking.BCCPoolMember, New: member(1)}}, nil
}

// bccSampleAt is the buffer at one instant: P5's and P6's occupancy and
// the shared pool's (pool 0).
type bccSampleAt struct {
	at             time.Duration
	tcp, udp, pool int64
}

// bccRun is what one case measured over its window.
type bccRun struct {
	c       bccCase
	round   int // which of the runs, from 0
	elapsed time.Duration
	// loadTCP and loadUDP are the machine over the window, with P5's and
	// P6's busy fraction and the TCP senders of each (none for the blast).
	loadTCP, loadUDP demo.Load
	dropped          demo.Drops // the switch's, every port, in the window
	// goodput is the TCP payload rate into h5 and, for Table IV, into h4.
	goodput, goodput2 float64
	busyTCP, busyUDP  float64 // P5's and P6's wire time over C·T
	// enq and drops count P5's admitted and dropped packets; loss is
	// drops over both.
	enq, drops uint64
	marks      uint64            // CE marks at P5
	poolMarks  uint64            // of them by the shared-buffer member
	udpSent    uint64            // datagrams the blast sent in the window
	udpDrops   uint64            // P6's drops
	meanTCP    float64           // P5's mean occupancy, bytes
	meanUDP    float64           // P6's
	meanPool   float64           // the pool's
	series     []bccSampleAt     // every bccSample
	peakTCP    int64             // P5's largest sampled occupancy
	dropWhy    map[string]uint64 // P5's drops by reason
}

// loss returns P5's drop rate.
func (r bccRun) loss() float64 {
	if r.enq+r.drops == 0 {
		return 0
	}
	return float64(r.drops) / float64(r.enq+r.drops)
}

func runBCC(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(bccDefaultT)
	var runs []bccRun
	o, err := env.withBed(ctx, demo.Options{Rate: bccRate, Classes: []demo.Class{{Flows: 1, Senders: []int{0}}}, CongestionControl: bccCC, RTOMin: bccRTO}, func(b *bed) error {
		for round := range env.runs() {
			for _, c := range bccCases() {
				if err := ctx.Err(); err != nil {
					return err
				}
				r, err := runBCCCase(ctx, b, c, warmup, duration)
				if err != nil {
					return fmt.Errorf("%s, threshold %d KB, UDP %.0f%%: %w", c.part, c.threshold, 100*c.udpLoad, err)
				}
				r.round = round
				env.say("bcc-shared: run %d, %s threshold %4d KB UDP %3.0f%%: TCP %s, P5 busy %.1f%%, P6 busy %.1f%%, P5 loss %.3f%%, mean P5/P6/pool %.0f/%.0f/%.0f KB; %s; drops %s",
					round+1, c.part, c.threshold, 100*c.udpLoad, mbps(r.goodput+r.goodput2), 100*r.busyTCP, 100*r.busyUDP, 100*r.loss(), r.meanTCP/1024, r.meanUDP/1024, r.meanPool/1024,
					r.loadTCP, r.dropped)
				runs = append(runs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bcc-shared: %w", err)
	}
	return bccReport(env, o, warmup, duration, runs)
}

// runBCCCase starts the switch of c, its TCP flows and its blast, warms
// up, measures, and stops them all.
func runBCCCase(ctx context.Context, b *bed, c bccCase, warmup, duration time.Duration) (bccRun, error) {
	r := bccRun{c: c}
	cfg, err := bccConfig(b.options(), b.ifaces(), c)
	if err != nil {
		return r, err
	}
	err = b.withConfig(cfg, func(sw demo.Switch) error { return r.run(ctx, b, sw, warmup, duration) })
	return r, err
}

// run runs the TCP flows and the blast of r's case on the switch sw.
func (r *bccRun) run(ctx context.Context, b *bed, sw demo.Switch, warmup, duration time.Duration) (err error) {
	o, hosts, c := b.options(), b.hosts(), r.c
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errs []error
	var mu sync.Mutex
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			cancel()
		}
	}
	s := bccScale{K: o.K, Rate: o.Rate}
	var connMu sync.Mutex
	conns := map[string][]net.Conn{} // the senders' ends, by receiving host's name
	tcp := func(dst testbed.Host, from []int) (*bulk.Receiver, error) {
		ln, err := dst.ListenTCP(0)
		if err != nil {
			return nil, err
		}
		rcv := bulk.Serve(ln)
		addr := netip.AddrPortFrom(dst.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))
		for i, h := range from {
			n := s.flows() / len(from)
			if i < s.flows()%len(from) {
				n++
			}
			wg.Go(func() {
				_, err := bulk.Sender{Flows: n, Dial: func(ctx context.Context) (net.Conn, error) {
					c, err := hosts[h].DialTCP(ctx, addr, 0)
					if err == nil {
						connMu.Lock()
						conns[dst.Name] = append(conns[dst.Name], c)
						connMu.Unlock()
					}
					return c, err
				}}.Run(ctx)
				fail(err)
			})
		}
		return rcv, nil
	}
	rcv, err := tcp(hosts[bccTCPPort], bccTCPSenders)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rcv.Close()) }()
	// Every flow connects before the blast starts: above the threshold the
	// shared-buffer member drops Not-ECT packets (RFC 3168 §7), SYNs among
	// them, as the paper's long-lived flows were up before it set one.
	for deadline := time.Now().Add(5 * time.Second); len(rcv.Flows()) < s.flows(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			cancel()
			wg.Wait()
			return fmt.Errorf("%d of %d TCP flows connected within 5s", len(rcv.Flows()), s.flows())
		}
	}
	var rcv2 *bulk.Receiver
	var sent atomic.Uint64
	if c.udpLoad == 0 {
		if rcv2, err = tcp(hosts[bccUDPPort], []int{bccUDPSrc}); err != nil {
			cancel()
			wg.Wait()
			return err
		}
		defer func() { err = errors.Join(err, rcv2.Close()) }()
	} else {
		sink, err := hosts[bccUDPPort].ListenUDP(0) // never read: the kernel drops what its buffer cannot hold
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		defer sink.Close()
		// h4 sends nothing else: without a frame from it, the switch (new
		// every run) would not know its port and would flood the blast.
		announce := &net.UDPAddr{IP: hosts[bccUDPSrc].IPv4.AsSlice(), Port: 9}
		for range 3 {
			if _, err := sink.WriteTo([]byte("bcc-shared"), announce); err != nil {
				cancel()
				wg.Wait()
				return fmt.Errorf("announce h4: %w", err)
			}
		}
		dst := netip.AddrPortFrom(hosts[bccUDPPort].IPv4, uint16(sink.LocalAddr().(*net.UDPAddr).Port))
		wg.Go(func() { fail(blast(ctx, hosts[bccUDPSrc], dst, c.udpLoad*float64(o.Rate), &sent)) })
	}
	defer func() { cancel(); wg.Wait(); err = errors.Join(err, errors.Join(errs...)) }()

	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(warmup):
	}
	bytes := func() (a, b int64) {
		a = rcv.Bytes()
		if rcv2 != nil {
			b = rcv2.Bytes()
		}
		return a, b
	}
	st0, sent0, start := sw.Stats(), sent.Load(), time.Now()
	drops0 := switchDrops(sw)
	connMu.Lock()
	tcpConns, udpConns := slices.Clone(conns[hosts[bccTCPPort].Name]), slices.Clone(conns[hosts[bccUDPPort].Name])
	connMu.Unlock()
	meterTCP, meterUDP := demo.StartMeter(st0, tcpConns), demo.StartMeter(st0, udpConns)
	a0, b0 := bytes()
	tick := time.NewTicker(bccSample)
	defer tick.Stop()
	end := time.NewTimer(duration)
	defer end.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			st := sw.Stats()
			r.series = append(r.series, bccSampleAt{at: now.Sub(start), tcp: st.Ports[bccTCPPort].Bytes, udp: st.Ports[bccUDPPort].Bytes, pool: st.Pools[0].Bytes})
		case <-end.C:
			done = true
		}
	}
	st1, sent1, now := sw.Stats(), sent.Load(), time.Now()
	a1, b1 := bytes()
	r.elapsed = now.Sub(start)
	r.fill(st0, st1, o.Rate)
	r.dropped = switchDrops(sw).Sub(drops0)
	r.loadTCP, r.loadUDP = meterTCP.Stop(st1, r.busyTCP), meterUDP.Stop(st1, r.busyUDP)
	if c.udpLoad > 0 {
		r.loadUDP.Senders = nil // the blast, no TCP
	}
	r.goodput = float64(a1-a0) * 8 / r.elapsed.Seconds()
	r.goodput2 = float64(b1-b0) * 8 / r.elapsed.Seconds()
	r.udpSent = sent1 - sent0
	return nil
}

// fill takes the run's counters from two snapshots of the switch and its
// occupancy from the samples.
func (r *bccRun) fill(st0, st1 dataplane.Stats, rate int64) {
	p0, p1 := st0.Ports[bccTCPPort], st1.Ports[bccTCPPort]
	u0, u1 := st0.Ports[bccUDPPort], st1.Ports[bccUDPPort]
	r.busyTCP = demo.PortBusy(p0, p1, rate, r.elapsed)
	r.busyUDP = demo.PortBusy(u0, u1, rate, r.elapsed)
	q0, q1 := p0.Queues[0], p1.Queues[0]
	r.enq = q1.Enqueued - q0.Enqueued
	r.marks = q1.MarkedEnq + q1.MarkedDeq - q0.MarkedEnq - q0.MarkedDeq
	r.dropWhy = map[string]uint64{}
	for why, n := range p1.Drops {
		if d := n - p0.Drops[why]; d > 0 {
			r.dropWhy[why] = d
			r.drops += d
		}
	}
	for why, n := range u1.Drops {
		r.udpDrops += n - u0.Drops[why]
	}
	for i, m := range p1.Markers {
		if m.Name == marking.BCCPoolMember && i < len(p0.Markers) {
			r.poolMarks = m.Marks - p0.Markers[i].Marks
		}
	}
	for _, s := range r.series {
		r.meanTCP += float64(s.tcp)
		r.meanUDP += float64(s.udp)
		r.meanPool += float64(s.pool)
		r.peakTCP = max(r.peakTCP, s.tcp)
	}
	if n := float64(len(r.series)); n > 0 {
		r.meanTCP, r.meanUDP, r.meanPool = r.meanTCP/n, r.meanUDP/n, r.meanPool/n
	}
}

// blast sends UDP datagrams of bccPayload bytes from h to dst at bps bit/s
// of Ethernet wire time (frames plus 24 bytes of FCS, preamble and gap),
// ECT(0) so that a marker marks rather than drops them (the paper's blast
// reacts to neither, 002 §V-B), until ctx is done. sent counts datagrams
// the kernel took.
func blast(ctx context.Context, h testbed.Host, dst netip.AddrPort, bps float64, sent *atomic.Uint64) error {
	c, err := h.DialUDP(ctx, dst, 0, packet.ECT0)
	if err != nil {
		return err
	}
	defer c.Close()
	const wire = bccPayload + 42 + 24 // UDP, IPv4, Ethernet headers; FCS, preamble, gap
	pps := bps / (8 * wire)
	buf := make([]byte, bccPayload)
	start := time.Now()
	var n uint64
	for ctx.Err() == nil {
		due := uint64(time.Since(start).Seconds() * pps)
		if n >= due {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		for k := 0; n < due && k < 64; k, n = k+1, n+1 { // at most 64 at a time, then look at the clock again
			if _, err := c.Write(buf); err != nil {
				if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
					return nil
				}
				continue // ENOBUFS and the like: a lost datagram, as a blast loses them
			}
			sent.Add(1)
		}
	}
	return nil
}

// bccKB formats bytes as KB.
func bccKB(b float64) string { return fmt.Sprintf("%.0f KB", b/1024) }

// bccFind returns the first run of part with the threshold and load.
func bccFind(runs []bccRun, part string, threshold int64, load float64) (bccRun, bool) {
	rs := bccAll(runs, part, threshold, load)
	if len(rs) == 0 {
		return bccRun{}, false
	}
	return rs[0], true
}

// bccAll returns every run of part with the threshold and load, one a
// round.
func bccAll(runs []bccRun, part string, threshold int64, load float64) []bccRun {
	var out []bccRun
	for _, r := range runs {
		if r.c.part == part && r.c.threshold == threshold && r.c.udpLoad == load {
			out = append(out, r)
		}
	}
	return out
}

// bccLossRuns returns the loss sweep's runs at load, with BCC or without:
// the sweep's own, or at bccUDPLoad the threshold sweep's.
func bccLossRuns(runs []bccRun, load float64, withBCC bool) []bccRun {
	k := int64(0)
	if withBCC {
		k = bccLossK
	}
	if load == bccUDPLoad {
		return bccAll(runs, "fig9", k, load)
	}
	return bccAll(runs, "loss", k, load)
}

// bccLoads returns the TCP port's loads of runs, and the UDP port's too
// when udp is set.
func bccLoadsOf(rs []bccRun, tcp, udp bool) []demo.Load {
	var ls []demo.Load
	for _, r := range rs {
		if tcp {
			ls = append(ls, r.loadTCP)
		}
		if udp {
			ls = append(ls, r.loadUDP)
		}
	}
	return ls
}

// bccReport renders the runs of bccCases, in that order, round after
// round.
func bccReport(env Env, o demo.Options, warmup, duration time.Duration, runs []bccRun) (*Report, error) {
	cases := bccCases()
	if len(runs) == 0 || len(runs)%len(cases) != 0 {
		return nil, fmt.Errorf("bcc-shared: %d runs, want rounds of %d", len(runs), len(cases))
	}
	for i, r := range runs {
		if c := cases[i%len(cases)]; r.c != c {
			return nil, fmt.Errorf("bcc-shared: run %d is %+v, want %+v", i+1, r.c, c)
		}
	}
	nruns := len(runs) / len(cases)
	s := bccScale{K: o.K, Rate: o.Rate}
	B := float64(s.pool())
	rep := env.report(bccShared(), "bcc-shared: two congested ports on one shared buffer, TCP against a UDP blast (002 §V-B, Fig. 7 and 9, Table IV)")
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket, one DWRR queue a port. "+
			"P5 (h5's port) and P6 (h4's) draw from one shared pool of B = %d KB with Dynamic Threshold α = %g (002 Eq. 1: a queue may hold α·(B − ΣQ), "+
			"so one congested queue alone settles at αB/(1+α) = B/2); the other ports have pools of their own (%d KB, static cap). "+
			"Every port marks at dequeue (002 §V-B footnote 4) with per-port standard ECN at K = %d KB; with BCC, the shared-buffer ECN/RED member "+
			"(marking.NewBCC) marks too, its K_min = K_max set to the threshold (as the paper's testbed sets both, Fig. 8).",
			rate(o.Rate), o.Bucket, s.pool()>>10, bccAlpha, o.Buffer>>10, o.K>>10),
		fmt.Sprintf("Single MMU (Fig. 7, 9): %d long-lived cubic TCP flows with ECN (ECN*) from h1 and h2 to h5, and a UDP blast from h3 to h4 at %.0f%% of C "+
			"(ECT(0), %d-byte datagrams, paced in wire bits, into a socket nobody reads). The shared-buffer threshold is swept over %v KB of the paper's "+
			"(0: shared-buffer ECN off); then the blast's load is swept over %v of C without BCC and with it at %d KB, for P5's loss against load. "+
			"Multiple MMUs (Table IV): P5 and P6 on pools of their own (B each), TCP into both (%d flows from h1, h2 to h5; %d from h3 to h4), thresholds %v KB.",
			s.flows(), 100*bccUDPLoad, bccPayload, bccSweep, bccLoads, bccLossK, s.flows(), s.flows(), bccTableIV),
		fmt.Sprintf("Each run: the switch started, the flows and the blast started, %v of warm-up, %v measured; occupancies sampled every %v. "+
			"Every case runs %d times, the cases in turn.", warmup, duration, bccSample, nruns),
	}
	rep.Scaling = s.String()
	rep.Transport, rep.NonECT = bccHosts, bccNonECT
	rep.Limits = []string{
		"Port busy: a claim lists the busy fraction of the ports that should be full in its runs: P6 (the blast's) always, and P5 where TCP is meant to fill it. " +
			"In Table IV, both ports of the run without a threshold, and of a run whose threshold should leave them full. A threshold that throttles TCP idles P5 by design; that idle time is the effect measured, not the machine falling behind, and the blast's port shows whether the worker kept up.",
		"The blast is ECT(0), so markers mark it and never drop it: the paper's blast \"does not react to ECN marks (and drops)\" (002 §V-B), and its switch marks at egress, " +
			"where it cannot stop the queue building. A Not-ECT blast here would be dropped at dequeue above the threshold.",
		"No per-port private buffer: the paper's MMU reserves ∼1 MB beside its 3 MB shared pool; here every byte is shared, so DT alone bounds each queue.",
		"The exact thresholds of Fig. 9 are not in the paper's text (500 KB gives ∼8 Gbit/s, 1750 KB ∼90 Gbit/s); ours span 500–2000 KB.",
		fmt.Sprintf("C is %s, not the other experiments' 995 Mbit/s: one CPU runs every host's TCP and the blast, and at 995 Mbit/s the blast reached 39%% of C "+
			"beside 274 Mbit/s of TCP; at 300 Mbit/s P5 was busy 77–95%% in the runs where TCP should fill it. Each run says what rate the blast reached.", rate(bccRate)),
		"Untested: BCC's lower loss (002 §IV-B, Fig. 6, a simulation with 8 congested ports a pool). Its loss is the victim's overflow at its Dynamic " +
			"Threshold, and this workload never takes P5 there: with two ports, DT with α = 1 leaves P5 α·(B − ΣQ), about B/4, beside the blast's B/2, " +
			"several times the standing queue its long-lived flows keep near K, so there is no loss for BCC to remove (the loss table shows P5's drops " +
			"against the blast's load). Reaching the threshold needs bursts of new windows into P5 (slow starts), or more congested ports a pool; " +
			"neither is run here, so the claim is not set beside ours.",
	}
	med := func(rs []bccRun, f func(bccRun) float64) Runs { return over(rs, f) }
	goodput := func(r bccRun) float64 { return r.goodput }
	kb := func(x float64) string { return bccKB(x) }
	mb := func(x float64) string { return mbps(x) }
	refs := bccAll(runs, "fig9", 0, bccUDPLoad)
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	r500s, r1750s := bccAll(runs, "fig9", 500, bccUDPLoad), bccAll(runs, "fig9", 1750, bccUDPLoad)
	udpQ, tcpQ := med(refs, func(r bccRun) float64 { return r.meanUDP }), med(refs, func(r bccRun) float64 { return r.meanTCP })
	udpShare := udpQ.Median() / B
	refG, g500, g1750 := med(refs, goodput), med(r500s, goodput), med(r1750s, goodput)
	rep.Claims = append(rep.Claims,
		Claim{Source: "002 Fig. 7", What: "UDP port P6's queue, no shared-buffer ECN, as a share of the pool",
			Paper: "∼1.5 MB of 3 MB (B/2 by DT with α = 1)", Ours: fmt.Sprintf("%s of %s (%.2f B)", udpQ.Format(kb), bccKB(B), udpShare),
			Loads: bccLoadsOf(refs, false, true), Rule: inRange("P6's mean over B", udpShare, 0.35, 0.65)},
		Claim{Source: "002 Fig. 7", What: "TCP port P5's queue beside P6's, no shared-buffer ECN",
			Paper: "remains very low", Ours: fmt.Sprintf("%s vs %s", tcpQ.Format(kb), udpQ.Format(kb)),
			Loads: bccLoadsOf(refs, true, true), Rule: atMostOf("P5's mean", tcpQ.Median(), udpQ.Median(), 0.3, "P6's").given(udpQ.Median() > 0)},
		Claim{Source: "002 Fig. 9", What: "TCP goodput, shared-buffer threshold 500 KB (below P6's queue) vs none",
			Paper: "∼8 vs ∼90 Gbit/s (∼9%)", Ours: fmt.Sprintf("%s vs %s (%.0f%%)", g500.Format(mb), refG.Format(mb), 100*ratio(g500.Median(), refG.Median())),
			Loads: append(bccLoadsOf(r500s, false, true), bccLoadsOf(refs, true, false)...),
			Rule:  atMostOf("", g500.Median(), refG.Median(), 0.5, "none's").given(refG.Median() > 0)},
		Claim{Source: "002 Fig. 9", What: "TCP goodput, threshold 1750 KB (above P6's queue) vs none",
			Paper: "∼90 Gbit/s, as without", Ours: fmt.Sprintf("%s vs %s (%.0f%%)", g1750.Format(mb), refG.Format(mb), 100*ratio(g1750.Median(), refG.Median())),
			Loads: append(bccLoadsOf(r1750s, true, true), bccLoadsOf(refs, true, false)...),
			Rule:  atLeastOf("", g1750.Median(), refG.Median(), 0.85, "none's").given(refG.Median() > 0)},
	)
	{
		var gs []string
		var gm []float64
		var loads []demo.Load
		for _, k := range bccSweep[1:] {
			rs := bccAll(runs, "fig9", k, bccUDPLoad)
			g := med(rs, goodput)
			gs = append(gs, fmt.Sprintf("%d", int(g.Median()/1e6+0.5)))
			gm = append(gm, g.Median())
			// above P6's share TCP should fill P5 (002 §V-B: "above 1.5MB")
			loads = append(loads, bccLoadsOf(rs, float64(s.bytes(k)) > B/2, true)...)
		}
		rep.Claims = append(rep.Claims, Claim{Source: "002 Fig. 9", What: fmt.Sprintf("TCP goodput as the threshold grows over %v KB", bccSweep[1:]),
			Paper: "grows with the threshold", Ours: strings.Join(gs, " → ") + fmt.Sprintf(" Mbit/s (medians of %d runs)", nruns),
			Loads: loads, Rule: noStepDown(gm, refG.Median(), 0.05, "none's goodput")})
	}
	t0s := bccAll(runs, "table4", 0, 0)
	both := func(r bccRun) float64 { return r.goodput + r.goodput2 }
	for _, x := range []struct {
		k     int64
		paper string
		full  bool // the threshold should leave the ports full
		rule  func(g, g0 float64) Rule
	}{
		{350, "90.94 + 89.39 vs 91.02 + 89.42 Gbit/s (−0.1%)", true,
			func(g, g0 float64) Rule { return near("", g, g0, 0.05, "none's") }},
		{150, "78.43 + 77.89 vs 91.02 + 89.42 Gbit/s (13.4% lower)", false,
			func(g, g0 float64) Rule { return lower("", g0, g, 0.05, 0.4) }},
	} {
		rs := bccAll(runs, "table4", x.k, 0)
		g, g0 := med(rs, both).Median(), med(t0s, both).Median()
		loads := bccLoadsOf(t0s, true, true)
		if x.full {
			loads = append(loads, bccLoadsOf(rs, true, true)...)
		}
		m := func(rs []bccRun, f func(bccRun) float64) string { return fmt.Sprintf("%.0f", med(rs, f).Median()/1e6) }
		g2 := func(r bccRun) float64 { return r.goodput2 }
		rep.Claims = append(rep.Claims, Claim{Source: "002 Table IV", What: fmt.Sprintf("TCP goodput into S5 + S6 on separate pools, threshold %d KB vs none", x.k),
			Paper: x.paper, Ours: fmt.Sprintf("%s + %s vs %s + %s Mbit/s (%s; medians of %d runs)", m(rs, goodput), m(rs, g2), m(t0s, goodput), m(t0s, g2), lowerBy(1-ratio(g, g0), 1), nruns),
			Loads: loads, Rule: x.rule(g, g0)})
	}
	ref, _ := bccFind(runs, "fig9", 0, bccUDPLoad)

	sweep := Table{Title: "Fig. 9: TCP goodput against the shared-buffer threshold (blast at " + fmt.Sprintf("%.0f%%", 100*bccUDPLoad) + " of C)",
		Header: []string{"threshold (paper)", "threshold (ours)", "TCP goodput", "of none's", "P5 mean / peak", "P6 mean", "pool mean", "P5 loss", "P5 marks (pool's)", "blast", "P5 busy", "P6 busy"},
		Note:   "Occupancies are the mean (and P5's peak) of the samples; P5 loss is its drops over its admitted and dropped packets; the blast's rate is what the kernel took, of C in wire bits."}
	for _, k := range bccSweep {
		sweep.Rows = append(sweep.Rows, bccRow(bccAll(runs, "fig9", k, bccUDPLoad), s, refG.Median(), o.Rate))
	}
	sweep.Note = fmt.Sprintf("Medians of %d runs. ", nruns) + sweep.Note
	loss := Table{Title: "P5's loss against the blast's load, without and with BCC (" + fmt.Sprintf("%d KB", bccLossK) + ")",
		Header: []string{"blast (offered)", "BCC", "TCP goodput", "P5 loss", "P5 drops", "P5 mean", "pool mean", "blast", "P5 busy", "P6 busy"}}
	for _, l := range bccLoads {
		for _, with := range []bool{false, true} {
			rs := bccLossRuns(runs, l, with)
			b := "off"
			if with {
				b = fmt.Sprintf("%d KB", bccLossK)
			}
			m := func(f func(bccRun) float64) float64 { return med(rs, f).Median() }
			loss.Rows = append(loss.Rows, []string{fmt.Sprintf("%.0f%%", 100*l), b, mbps(m(goodput)), fmt.Sprintf("%.3f%%", 100*m(bccRun.loss)),
				fmt.Sprintf("%.0f", m(func(r bccRun) float64 { return float64(r.drops) })),
				bccKB(m(func(r bccRun) float64 { return r.meanTCP })), bccKB(m(func(r bccRun) float64 { return r.meanPool })),
				rs[0].blastRate(o.Rate), bccBusy(rs, func(r bccRun) demo.Load { return r.loadTCP }), bccBusy(rs, func(r bccRun) demo.Load { return r.loadUDP })})
		}
	}
	loss.Note = fmt.Sprintf("Medians of %d runs; drops are P5's, every reason (the table of where each run's time went gives them by reason and kind); "+
		"the blast's rate is the first run's.", nruns)
	tiv := Table{Title: "Table IV: TCP into both ports, on separate pools",
		Header: []string{"threshold (paper)", "threshold (ours)", "S5 paper", "S5 ours", "S6 paper", "S6 ours", "P5 busy", "P6 busy"}}
	paperIV := map[int64][2]string{0: {"91.02 Gbit/s", "89.42 Gbit/s"}, 350: {"90.94 Gbit/s", "89.39 Gbit/s"}, 150: {"78.43 Gbit/s", "77.89 Gbit/s"}}
	for _, k := range bccTableIV {
		rs := bccAll(runs, "table4", k, 0)
		tiv.Rows = append(tiv.Rows, []string{bccThreshold(k), bccScaled(s, k), paperIV[k][0], mbps(med(rs, goodput).Median()), paperIV[k][1],
			mbps(med(rs, func(r bccRun) float64 { return r.goodput2 }).Median()),
			bccBusy(rs, func(r bccRun) demo.Load { return r.loadTCP }), bccBusy(rs, func(r bccRun) demo.Load { return r.loadUDP })})
	}
	tiv.Note = fmt.Sprintf("Medians of %d runs.", nruns)
	var loads []loadRow
	for _, r := range runs {
		label := fmt.Sprintf("%s, threshold %s, blast %.0f%%, run %d", r.c.part, bccThreshold(r.c.threshold), 100*r.c.udpLoad, r.round+1)
		udp := r.loadUDP
		udp.CPUs = nil
		loads = append(loads, loadRow{label: label + ", P5", load: r.loadTCP, drops: r.dropped}, loadRow{label: label + ", P6", load: udp})
	}
	rep.Tables = []Table{sweep, loss, tiv, loadTable(loads)}
	with, _ := bccFind(runs, "fig9", 1750, bccUDPLoad)
	low, _ := bccFind(runs, "fig9", 500, bccUDPLoad)
	rep.Plots = []Plot{
		{File: "buffer.png", Caption: "P5's, P6's and the shared pool's occupancy over time with the blast at " + fmt.Sprintf("%.0f%%", 100*bccUDPLoad) +
			" of C: without shared-buffer ECN (002 Fig. 7), and with it at 500 and 1750 KB. B/2 is dashed.",
			Draw: func(path string) error { return bccBufferPlot(path, B, []bccRun{ref, low, with}) }},
		{File: "goodput.png", Caption: "TCP goodput against the shared-buffer threshold, in the paper's KB (002 Fig. 9); none's goodput dashed.",
			Draw: func(path string) error { return bccGoodputPlot(path, runs, refG.Median()) }},
		{File: "loss.png", Caption: "P5's TCP loss against the blast's load, without and with BCC.",
			Draw: func(path string) error { return bccLossPlot(path, runs) }},
	}
	return rep, nil
}

// bccRow is a row of the threshold sweep: the medians of the runs rs.
func bccRow(rs []bccRun, s bccScale, ref float64, rate int64) []string {
	m := func(f func(bccRun) float64) float64 { return over(rs, f).Median() }
	g := m(func(r bccRun) float64 { return r.goodput })
	share := "–"
	if ref > 0 {
		share = fmt.Sprintf("%.0f%%", 100*g/ref)
	}
	r := rs[0]
	return []string{bccThreshold(r.c.threshold), bccScaled(s, r.c.threshold), mbps(g), share,
		bccKB(m(func(r bccRun) float64 { return r.meanTCP })) + " / " + bccKB(m(func(r bccRun) float64 { return float64(r.peakTCP) })),
		bccKB(m(func(r bccRun) float64 { return r.meanUDP })), bccKB(m(func(r bccRun) float64 { return r.meanPool })),
		fmt.Sprintf("%.3f%%", 100*m(bccRun.loss)),
		fmt.Sprintf("%.0f (%.0f)", m(func(r bccRun) float64 { return float64(r.marks) }), m(func(r bccRun) float64 { return float64(r.poolMarks) })),
		r.blastRate(rate), bccBusy(rs, func(r bccRun) demo.Load { return r.loadTCP }), bccBusy(rs, func(r bccRun) demo.Load { return r.loadUDP })}
}

// bccBusy formats the runs' busy fractions of one port (its load), the
// median and range, "(not comparable)" where the machine limited one.
func bccBusy(rs []bccRun, load func(bccRun) demo.Load) string {
	b := over(rs, func(r bccRun) float64 { return load(r).Busy })
	out := b.Format(func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) })
	if slices.ContainsFunc(rs, func(r bccRun) bool { return !load(r).Comparable() }) {
		out += " (not comparable)"
	}
	return out
}

// blastRate formats the rate the blast reached as a share of C.
func (r bccRun) blastRate(rate int64) string {
	if r.elapsed <= 0 || r.c.udpLoad == 0 {
		return "–"
	}
	const wire = bccPayload + 42 + 24
	return fmt.Sprintf("%.0f%%", 100*float64(r.udpSent)*wire*8/r.elapsed.Seconds()/float64(rate))
}

func bccThreshold(k int64) string {
	if k == 0 {
		return "none"
	}
	return fmt.Sprintf("%d KB", k)
}

func bccScaled(s bccScale, k int64) string {
	if k == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f KB", float64(s.bytes(k))/1024)
}

// bccBufferPlot draws P5's, P6's and the pool's occupancy over time, one
// panel a run.
func bccBufferPlot(path string, B float64, runs []bccRun) error {
	var ps []*plot.Plot
	for _, r := range runs {
		lines := []Line{{Label: "P5 (TCP)"}, {Label: "P6 (UDP)"}, {Label: "pool"}, {Label: "B/2", Dashed: true}}
		for _, x := range r.series {
			t := x.at.Seconds()
			lines[0].XY = append(lines[0].XY, plotter.XY{X: t, Y: float64(x.tcp) / 1024})
			lines[1].XY = append(lines[1].XY, plotter.XY{X: t, Y: float64(x.udp) / 1024})
			lines[2].XY = append(lines[2].XY, plotter.XY{X: t, Y: float64(x.pool) / 1024})
		}
		if n := len(r.series); n > 0 {
			lines[3].XY = plotter.XYs{{X: r.series[0].at.Seconds(), Y: B / 2048}, {X: r.series[n-1].at.Seconds(), Y: B / 2048}}
		}
		p, err := newPlot("shared-buffer threshold "+bccThreshold(r.c.threshold), "time (s)", "occupancy (KB)", lines)
		if err != nil {
			return err
		}
		p.Y.Max *= 1.4 // room for the legend
		ps = append(ps, p)
	}
	return saveTiles(path, len(ps), ps, 4*vg.Inch, 3*vg.Inch)
}

// bccGoodputPlot draws the threshold sweep's TCP goodput.
func bccGoodputPlot(path string, runs []bccRun, ref float64) error {
	l := Line{Label: "TCP goodput"}
	for _, k := range bccSweep[1:] {
		g := over(bccAll(runs, "fig9", k, bccUDPLoad), func(r bccRun) float64 { return r.goodput }).Median()
		l.XY = append(l.XY, plotter.XY{X: float64(k), Y: g / 1e6})
	}
	none := Line{Label: "no shared-buffer ECN", Dashed: true,
		XY: plotter.XYs{{X: float64(bccSweep[1]), Y: ref / 1e6}, {X: float64(bccSweep[len(bccSweep)-1]), Y: ref / 1e6}}}
	p, err := newPlot("TCP goodput against the shared-buffer threshold", "threshold (the paper's KB)", "goodput (Mbit/s)", []Line{l, none})
	if err != nil {
		return err
	}
	return saveTiles(path, 1, []*plot.Plot{p}, 5*vg.Inch, 3.5*vg.Inch)
}

// bccLossPlot draws P5's loss against the blast's load.
func bccLossPlot(path string, runs []bccRun) error {
	lines := []Line{{Label: "no shared-buffer ECN"}, {Label: fmt.Sprintf("BCC, %d KB", bccLossK)}}
	for _, l := range bccLoads {
		for i, with := range []bool{false, true} {
			loss := over(bccLossRuns(runs, l, with), bccRun.loss).Median()
			lines[i].XY = append(lines[i].XY, plotter.XY{X: 100 * l, Y: 100 * loss})
		}
	}
	p, err := newPlot("P5's TCP loss against the blast's load", "blast (% of C)", "loss (%)", lines)
	if err != nil {
		return err
	}
	return saveTiles(path, 1, []*plot.Plot{p}, 5*vg.Inch, 3.5*vg.Inch)
}
