package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
	"github.com/ecnswitch/ecnswitch/testbed/ect1"
)

// l4sCoexist is RFC 9332's coexistence of scalable and Classic traffic on
// real kernel TCP: scalable flows (testbed/dctcp's DCTCP, sent ECT(1) by
// testbed/ect1's rewrite) against cubic flows through one DualQ Coupled
// AQM port at tc-dualpi2's defaults, and the same flows through a
// single-queue PI2 and through one queue with DCTCP's RED cut-off.
func l4sCoexist() Experiment {
	return Experiment{
		Name:    "l4s-coexist",
		Paper:   "RFC 9332's coexistence of scalable (L4S) and Classic flows through a DualQ Coupled AQM (§2.1, §2.4, §4.1; tc-dualpi2(8)'s defaults), against a single-queue PI2 and DCTCP's RED",
		Summary: "1 and 4 scalable flows (DCTCP, ECT(1)) against 1 and 4 cubic flows through a DualQ port, a single-queue PI2 and DCTCP RED: per-flow rates, L and C queue delay, marks",
		Run:     runL4S,
	}
}

// The experiment's setting.
const (
	l4sPortL = 9331 // the scalable flows' receiver port (RFC 9331); their packets leave ECT(1)
	l4sPortC = 3168 // the Classic flows' (RFC 3168)
	// l4sAckDelay holds the receiver's ACKs at the senders' ports: every
	// flow's base RTT is this plus the testbed's tens of µs, an
	// Internet-like RTT where tc-dualpi2's defaults (target 15 ms, for
	// RTTs up to 100 ms) are at home.
	l4sAckDelay = 10 * time.Millisecond
	// l4sBuffer is every port's buffer: 34 ms at 995 Mbit/s, room for
	// the Classic queue's 15 ms target and the flows' slow start.
	l4sBuffer  = 4 << 20
	l4sDefault = 15 * time.Second
	l4sWarmup  = 5 * time.Second // slow start, and cubic's growth to its share, at a 10 ms RTT
	l4sRuns    = 3
	l4sBin     = 10 * time.Millisecond // the delay plots' resolution
	l4sRTTs    = 250 * time.Millisecond
	// l4sRTTModel is the base RTT the claims' Reno model assumes: the
	// ACK delay, 15 ms of Classic queue on top for the Classic flows and
	// about 0.5 ms of L queue for the scalable ones.
	l4sRTTModel = l4sAckDelay
)

// The classes of flows, as the experiment numbers them (not the DualQ's
// queue numbers).
const (
	clsL = 0 // scalable: DCTCP with ECT(1)
	clsC = 1 // Classic: cubic with ECN
)

// l4sClassNames name the classes in tables and plots.
var l4sClassNames = [2]string{"scalable (L)", "Classic (C)"}

// The schemes of the bottleneck port.
const (
	l4sDualQ = "dualq"           // DualQ Coupled AQM, tc-dualpi2's defaults
	l4sPI2   = marking.SchemePI2 // one queue, PI2 coupled within it (RFC 9332 §2.1)
	l4sRED   = marking.SchemeRED // one queue, RED cut-off at DCTCP's K
)

var l4sSchemes = []string{l4sDualQ, l4sPI2, l4sRED}

// l4sTitle returns a scheme's name in the report.
func l4sTitle(s string) string {
	switch s {
	case l4sDualQ:
		return "DualQ (DualPI2)"
	case l4sPI2:
		return "PI2, one queue"
	case l4sRED:
		return "DCTCP RED, one queue"
	}
	return s
}

// l4sMixes are the flow counts of a run: scalable, Classic.
var l4sMixes = [][2]int{{1, 1}, {1, 4}, {4, 1}, {4, 4}}

// l4sSenders are the hosts (h1–h4) that send each class's flows, dealt
// in turn; h5 receives.
var l4sSenders = [2][]int{clsL: {0, 1}, clsC: {2, 3}}

// l4sCC is each class's TCP congestion control.
var l4sCC = [2]string{clsL: dctcp.Name, clsC: "cubic"}

// l4sPorts are each class's receiver ports.
var l4sPorts = [2]uint16{clsL: l4sPortL, clsC: l4sPortC}

// l4sK is DCTCP's marking threshold for the RED baseline: K > C·RTT/7
// (Alizadeh et al. §3.4) at the emulated base RTT, in bytes.
func l4sK(rate int64) int64 {
	return int64(float64(rate) * l4sAckDelay.Seconds() / 8 / 7)
}

// l4sRun is one scheme with one mix of flows.
type l4sRun struct {
	scheme  string
	mix     [2]int // flows: scalable, Classic
	rate    int64  // C, bit/s
	elapsed time.Duration
	busy    float64
	// flows are each flow's goodput, bit/s, by class.
	flows [2][]float64
	// med and p99 are the class's queueing delay at the bottleneck
	// (enqueue to dequeue), over every data packet of the window.
	med, p99 [2]time.Duration
	// bins are the class's mean queueing delay in ms per l4sBin, NaN
	// where none of its packets left.
	bins [2][]float64
	// pkts, marks and drops are the class's data packets the bottleneck
	// sent, those it sent CE, and those the switch dropped.
	pkts, marks, drops [2]uint64
	rtt                [2]time.Duration // the flows' mean smoothed RTT (TCP_INFO)
	minRTT             time.Duration    // the lowest RTT any flow saw
	dualq              *dataplane.DualQStats
	missed             uint64 // packets the tap had no room for
	// gaps counts the silences of l4sGap or more at the switch's ports,
	// gapTime sums them and longest is the longest: the machine's stalls.
	gaps             uint64
	gapTime, longest time.Duration
}

// goodput returns class c's goodput, bit/s.
func (r *l4sRun) goodput(c int) float64 {
	var g float64
	for _, f := range r.flows[c] {
		g += f
	}
	return g
}

// perFlow returns class c's mean goodput per flow, bit/s.
func (r *l4sRun) perFlow(c int) float64 {
	if len(r.flows[c]) == 0 {
		return 0
	}
	return r.goodput(c) / float64(len(r.flows[c]))
}

// ratio returns the scalable flows' per-flow goodput over the Classic
// flows', +Inf if the Classic flows had none.
func (r *l4sRun) ratio() float64 {
	if r.perFlow(clsC) == 0 {
		return math.Inf(1)
	}
	return r.perFlow(clsL) / r.perFlow(clsC)
}

// total returns the goodput of every flow, bit/s.
func (r *l4sRun) total() float64 { return r.goodput(clsL) + r.goodput(clsC) }

// maxGoodput is the most TCP payload the port carries, C·1448/1538.
func (r *l4sRun) maxGoodput() float64 { return float64(r.rate) * 1448 / 1538 }

// signalled returns the fraction of class c's packets the switch marked
// or dropped: the congestion signal its flows saw.
func (r *l4sRun) signalled(c int) float64 {
	n := r.pkts[c] + r.drops[c]
	if n == 0 {
		return 0
	}
	return float64(r.marks[c]+r.drops[c]) / float64(n)
}

func runL4S(ctx context.Context, env Env) (*Report, error) {
	warmup, duration := env.times(l4sDefault)
	if !env.Short {
		warmup = max(warmup, l4sWarmup)
	}
	var runs []*l4sRun
	o, err := env.withBed(ctx, l4sOptions(), func(b *bed) (err error) {
		rws, err := rewriteECT1(b.hosts(), l4sPortL)
		if err != nil {
			return err
		}
		defer func() {
			for _, rw := range rws {
				err = errors.Join(err, rw.Close())
			}
		}()
		all, err := repeat(ctx, l4sRuns, func(ctx context.Context, run int) ([]*l4sRun, error) {
			var rs []*l4sRun
			for _, s := range l4sSchemes {
				for _, mix := range l4sMixes {
					env.say("l4s-coexist: run %d of %d, %s, %s", run+1, l4sRuns, l4sTitle(s), mixName(mix))
					r, err := runL4SOnce(ctx, b, s, mix, uint64(run+1), warmup, duration)
					if err != nil {
						return rs, fmt.Errorf("%s, %s: %w", l4sTitle(s), mixName(mix), err)
					}
					env.say("l4s-coexist: %s per flow L %s, C %s (%.2f); delay L %s / %s, C %s / %s; %d arrival gaps ≥ %v (longest %s); busy %s",
						mixName(mix), mbps(r.perFlow(clsL)), mbps(r.perFlow(clsC)), r.ratio(),
						millis(r.med[clsL]), millis(r.p99[clsL]), millis(r.med[clsC]), millis(r.p99[clsC]), r.gaps, l4sGap, millis(r.longest), Busy(r.busy))
					rs = append(rs, r)
				}
			}
			return rs, nil
		})
		for _, rs := range all {
			runs = append(runs, rs...)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("l4s-coexist: %w", err)
	}
	return l4sReport(env, o, warmup, duration, runs)
}

// l4sOptions is the bed: the demo's five hosts defaulting to dctcp (the
// Classic flows pick cubic per socket), the buffer l4sBuffer.
func l4sOptions() demo.Options {
	return demo.Options{
		Classes:           []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, // the demo's own flows are not used
		CongestionControl: dctcp.Name,
		Buffer:            l4sBuffer,
	}
}

// rewriteECT1 attaches testbed/ect1's rewriter to every host for port:
// the scalable flows' packets, both ways, leave ECT(1).
func rewriteECT1(hosts []testbed.Host, port uint16) ([]*ect1.Rewriter, error) {
	var rws []*ect1.Rewriter
	for _, h := range hosts {
		rw, err := ect1.Attach(h.Netns, h.HostIf, []uint16{port})
		if err != nil {
			for _, r := range rws {
				err = errors.Join(err, r.Close())
			}
			return nil, err
		}
		rws = append(rws, rw)
	}
	return rws, nil
}

// l4sConfig is the switch of scheme over the bed's ports: every port
// shaped to C with one queue and l4sBuffer; the bottleneck (h5's) a DualQ,
// a PI2 queue or a RED queue at DCTCP's K; the others hold the ACKs
// l4sAckDelay. seed seeds the AQMs' draws.
func l4sConfig(o demo.Options, ifaces []string, scheme string, seed uint64) (dataplane.Config, error) {
	cfg := dataplane.Config{Workers: 1, Spin: dataplane.DefaultSpin, CPUs: o.WorkerCPUs, Classifier: dataplane.Classifier{DSCP: map[uint8]int{}}}
	for i, name := range ifaces {
		cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: l4sBuffer})
		p := dataplane.PortConfig{
			Name: name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, Queues: []scheduler.QueueConfig{{}},
				Overhead: scheduler.OverheadEthernet, LineRate: o.Rate},
			Shaper:   scheduler.ShaperConfig{Rate: o.Rate, Bucket: o.Bucket, Overhead: scheduler.OverheadEthernet},
			Pool:     i,
			Queues:   []buffer.QueueConfig{{Cap: l4sBuffer}},
			Coalesce: o.Coalesce,
		}
		if i != demo.Bottleneck {
			p.Delay = dataplane.Delay{Fixed: l4sAckDelay}
			cfg.Ports = append(cfg.Ports, p)
			continue
		}
		switch scheme {
		case l4sDualQ:
			p.Scheduler = scheduler.Config{Kind: scheduler.DualQ, NumQueues: 2, Overhead: scheduler.OverheadEthernet, LineRate: o.Rate}
			p.Queues = []buffer.QueueConfig{{Cap: l4sBuffer}, {Cap: l4sBuffer}}
			p.DualQ = dataplane.DualQ{AQM: marking.DualPI2Config{Seed: seed}}
		case l4sPI2:
			p.Dequeue = []dataplane.MarkerSpec{{Name: marking.SchemePI2, New: func(nq int) (marking.Marker, error) {
				return marking.NewPI2(marking.PI2Config{Seed: seed}, marking.Dequeue, nq)
			}}}
		case l4sRED:
			k := marking.CutOff(marking.MeasureQueue, marking.Bytes(l4sK(o.Rate)))
			p.Enqueue = []dataplane.MarkerSpec{{Name: "dctcp-red", New: func(nq int) (marking.Marker, error) {
				return marking.NewRED(k, marking.Enqueue, nq)
			}}}
		default:
			return dataplane.Config{}, fmt.Errorf("l4s-coexist: scheme %q: want one of %v", scheme, l4sSchemes)
		}
		cfg.Ports = append(cfg.Ports, p)
	}
	if err := cfg.Validate(); err != nil {
		return dataplane.Config{}, fmt.Errorf("l4s-coexist: %s: %w", scheme, err)
	}
	return cfg, nil
}

// runL4SOnce runs mix's flows through a switch of scheme.
func runL4SOnce(ctx context.Context, b *bed, scheme string, mix [2]int, seed uint64, warmup, duration time.Duration) (*l4sRun, error) {
	o := b.options()
	cfg, err := l4sConfig(o, b.ifaces(), scheme, seed)
	if err != nil {
		return nil, err
	}
	r := &l4sRun{scheme: scheme, mix: mix, rate: o.Rate}
	err = b.withConfig(cfg, func(sw demo.Switch) error { return r.measure(ctx, sw, b.hosts(), warmup, duration) })
	return r, err
}

// measure connects every flow, runs them warmup, measures them for
// duration, and stops the switch to read its tap.
func (r *l4sRun) measure(ctx context.Context, sw demo.Switch, hosts []testbed.Host, warmup, duration time.Duration) (err error) {
	tp, ok := sw.(tapper)
	if !ok {
		return errors.New("the switch takes no tap")
	}
	tap := newL4STap(demo.Bottleneck, r.rate, duration)
	for i := range hosts {
		if err := tp.AddTap(i, tap); err != nil {
			return err
		}
	}
	rh := hosts[demo.Bottleneck]
	var rcv [2]*bulk.Receiver
	defer func() {
		for _, rc := range rcv {
			if rc != nil {
				err = errors.Join(err, rc.Close())
			}
		}
	}()
	var conns [2][]net.Conn
	defer func() {
		for _, cs := range conns {
			for _, c := range cs {
				c.Close()
			}
		}
	}()
	for c := range rcv {
		ln, err := rh.ListenTCP(l4sPorts[c])
		if err != nil {
			return err
		}
		if err := setCC(ln.(syscall.Conn), l4sCC[c]); err != nil {
			ln.Close()
			return fmt.Errorf("listener of %s: %w", l4sClassNames[c], err)
		}
		rcv[c] = bulk.Serve(ln)
	}
	// Every flow connects before any sends: a SYN that met a full queue
	// would be dropped (Not-ECT) and wait a second to retry.
	for c, n := range r.mix {
		dst := netip.AddrPortFrom(rh.IPv4, l4sPorts[c])
		for f := range n {
			conn, err := dialCC(ctx, hosts[l4sSenders[c][f%len(l4sSenders[c])]], dst, l4sCC[c], r.rate)
			if err != nil {
				return err
			}
			conns[c] = append(conns[c], conn)
		}
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for _, cs := range conns {
		for _, c := range cs {
			wg.Go(func() { pump(sctx, c) })
		}
	}

	if err := sleep(ctx, warmup); err != nil {
		return err
	}
	bytes0 := [2]map[string]int64{flowBytes(rcv[clsL]), flowBytes(rcv[clsC])}
	st0 := sw.Stats().Ports[demo.Bottleneck]
	tap.on.Store(true)
	start := time.Now()
	var rtts [2][]time.Duration
	r.minRTT = time.Duration(math.MaxInt64)
	tick := time.NewTicker(l4sRTTs)
	for time.Since(start) < duration {
		select {
		case <-ctx.Done():
			tick.Stop()
			return ctx.Err()
		case <-tick.C:
		case <-time.After(time.Until(start.Add(duration))):
		}
		for c, cs := range conns {
			for _, conn := range cs {
				if srtt, minRTT, ok := tcpRTT(conn); ok {
					rtts[c] = append(rtts[c], srtt)
					r.minRTT = min(r.minRTT, minRTT)
				}
			}
		}
	}
	tick.Stop()
	tap.on.Store(false)
	r.elapsed = time.Since(start)
	st1 := sw.Stats().Ports[demo.Bottleneck]
	for c := range rcv {
		b1 := flowBytes(rcv[c])
		for remote, n := range b1 {
			r.flows[c] = append(r.flows[c], float64(n-bytes0[c][remote])*8/r.elapsed.Seconds())
		}
		slices.Sort(r.flows[c])
		r.rtt[c] = meanDuration(rtts[c])
	}
	r.busy = demo.PortBusy(st0, st1, r.rate, r.elapsed)
	if st1.DualQ != nil {
		d := *st1.DualQ
		r.dualq = &d
	}
	stop()
	wg.Wait()
	// The tap is the worker's until the switch stops.
	if err := sw.Stop(); err != nil {
		return err
	}
	r.summarize(tap)
	return nil
}

// summarize takes the tap's counts, and the delay statistics and series
// of its records.
func (r *l4sRun) summarize(t *l4sTap) {
	for c := range 2 {
		r.pkts[c], r.marks[c], r.drops[c] = t.pkts[c].Load(), t.marks[c].Load(), t.drops[c].Load()
	}
	r.missed = t.missed.Load()
	r.gaps, r.gapTime, r.longest = t.gaps.Load(), time.Duration(t.gapNS.Load()), time.Duration(t.longest.Load())
	recs := t.records()
	if len(recs) == 0 {
		return
	}
	t0 := recs[0].t
	var delays [2][]int64
	var sum [2][]float64
	var n [2][]int
	for _, rec := range recs {
		c := int(rec.class)
		delays[c] = append(delays[c], rec.sojourn)
		bin := int((rec.t - t0) / int64(l4sBin))
		for len(sum[c]) <= bin {
			sum[c], n[c] = append(sum[c], 0), append(n[c], 0)
		}
		sum[c][bin] += float64(rec.sojourn) / 1e6
		n[c][bin]++
	}
	for c := range 2 {
		r.med[c] = time.Duration(quantile(delays[c], 0.5))
		r.p99[c] = time.Duration(quantile(delays[c], 0.99))
		r.bins[c] = make([]float64, len(sum[c]))
		for i := range sum[c] {
			r.bins[c][i] = math.NaN()
			if n[c][i] > 0 {
				r.bins[c][i] = sum[c][i] / float64(n[c][i])
			}
		}
	}
}

// flowBytes returns the bytes each of rcv's flows has read, by the
// sender's address.
func flowBytes(rcv *bulk.Receiver) map[string]int64 {
	m := map[string]int64{}
	for _, f := range rcv.Flows() {
		m[f.Remote] = f.Bytes
	}
	return m
}

// pump writes to c until ctx ends.
func pump(ctx context.Context, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { c.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, 256<<10)
	for ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// dialCC connects from h to dst with TCP congestion control cc, set
// before the SYN leaves (a dctcp SYN asks for ECN with ECT, a cubic one
// without, tcp_ecn=1), and turns on TCP's own pacing, at most at pace
// bit/s of frames: SO_MAX_PACING_RATE makes the kernel pace every flow at
// its pacing rate (twice cwnd/RTT in slow start, 1.2 times after), as a
// scalable sender should (TCP Prague paces) and as Linux paces any flow
// under fq.
func dialCC(ctx context.Context, h testbed.Host, dst netip.AddrPort, cc string, pace int64) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error { return setRawCC(rc, cc) }}
	var c net.Conn
	err := h.Do(func() error {
		var err error
		c, err = d.DialContext(dctx, "tcp", dst.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %s to %s: %w", h.Name, cc, dst, err)
	}
	bytes := uint64(float64(pace) / 8 * 1514 / 1538) // the kernel counts frames without FCS, preamble and gap
	rc, err := c.(syscall.Conn).SyscallConn()
	if err == nil {
		var serr error
		err = rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, bytes)
		})
		err = errors.Join(err, serr)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("host %s: pacing rate %d B/s: %w", h.Name, bytes, err)
	}
	return c, nil
}

// setCC sets c's TCP congestion control.
func setCC(c syscall.Conn, cc string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return setRawCC(rc, cc)
}

func setRawCC(rc syscall.RawConn, cc string) error {
	var serr error
	err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
	if err == nil && serr != nil {
		err = fmt.Errorf("congestion control %s: %w", cc, serr)
	}
	return err
}

// tcpRTT returns c's smoothed and minimum RTT (TCP_INFO).
func tcpRTT(c net.Conn) (srtt, minRTT time.Duration, ok bool) {
	sc, isSC := c.(syscall.Conn)
	if !isSC {
		return 0, 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var ti *unix.TCPInfo
	var ierr error
	if rc.Control(func(fd uintptr) { ti, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }) != nil || ierr != nil {
		return 0, 0, false
	}
	return time.Duration(ti.Rtt) * time.Microsecond, time.Duration(ti.Min_rtt) * time.Microsecond, true
}

// mixName formats a mix as "1 : 4" (scalable : Classic flows).
func mixName(mix [2]int) string { return fmt.Sprintf("%d : %d", mix[clsL], mix[clsC]) }
