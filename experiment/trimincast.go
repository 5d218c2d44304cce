package experiment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
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
	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// trimIncast is NDP's incast (Handley et al., SIGCOMM 2017) through a
// trimming port: N senders answer at once with a short message each,
// through h5's port, with NDP's receiver-driven transport over a port
// that trims (dataplane.Trim), against window transports over drop-tail
// and over DCTCP marking.
func trimIncast() Experiment {
	return Experiment{
		Name:    "trim-incast",
		Paper:   "NDP's incast claim (Handley et al., SIGCOMM 2017: near-optimal completion times for short transfers, incast included) on packet trimming (issue 25)",
		Summary: "N-to-1 incasts of 29 KB messages: NDP over a trimming port against window transports over drop-tail and DCTCP marking; message completion, retransmissions, queue",
		Run:     runTrimIncast,
	}
}

// The experiment's constants. A message is 20 datagrams of transport/udp's
// 1472 bytes (29.4 KB, a short message); every transport starts with a
// window of 10 packets (NDP's first window, transport.InitWindow) and
// waits out a 10 ms retransmission timeout (transport/udp's, a tuned
// datacenter RTO). Trimmed headers keep 64 bytes of UDP payload and are
// marked DSCP 46; the trim queue has a 64 KB reserve, room for 600 of
// them when the pool is full. The receiver's pull pacer may send 8 pulls
// back to back after a pause: a software receiver on a shared CPU wakes
// late by tens of µs.
const (
	trimMsgPackets   = 20
	trimDSCP         = 46
	trimReserve      = 64 << 10
	trimShallow      = 8 * 1514 // bytes: NDP's 8-packet data queue
	trimPullBurst    = 8
	trimHostRate     = 1e9 // bit/s: every sender paces at its link's rate
	trimRounds       = 10
	trimRoundTimeout = 3 * time.Second
	trimGap          = 30 * time.Millisecond // between rounds: late ACKs, an empty queue
	trimCoalesce     = 5 * time.Microsecond
	trimTapRecords   = 1 << 20
)

// trimSenders are the incast's sizes: up to 128 senders, dealt out to the
// testbed's four sender hosts, 32 each.
var trimSenders = []int{8, 32, 128}

// trimVariant is one transport over one port.
type trimVariant struct {
	name string
	ndp  bool           // NDP's receiver-driven transport, else a window law
	cc   transport.Kind // the window law
	trim bool           // the bottleneck trims
	mark bool           // the bottleneck marks CE at K (RED cut-off), DCTCP's
	data int64          // the data queue's cap, bytes; 0: the demo's buffer
}

func trimVariants() []trimVariant {
	return []trimVariant{
		{name: "NDP, trimming", ndp: true, trim: true},
		{name: "NDP, trimming, 8-packet queue", ndp: true, trim: true, data: trimShallow},
		{name: "NDP, drop-tail", ndp: true},
		{name: "window (ECN*), drop-tail", cc: transport.KindECNStar},
		{name: "DCTCP, marking at K", cc: transport.KindDCTCP, mark: true},
	}
}

// trimRound is one incast: n messages sent at once.
type trimRound struct {
	n int
	// mct are the messages' completion times, ns from the round's start
	// to the receiver's stamp of the packet that completed each;
	// incomplete messages (failed) count as the round's timeout.
	mct      []int64
	failed   int
	sent     uint64 // data datagrams sent, again included
	retrans  uint64
	timeouts uint64
	// At the receiver: packets received whole (duplicates included) and
	// trimmed headers. At the bottleneck: packets trimmed, and dropped
	// for any reason.
	whole, headers uint64
	trimmed, drops uint64
	wire           uint64  // bytes the bottleneck sent, with 24 of overhead each
	busy           float64 // wire over C·(the last completion)
	sojourn        []int64 // the bottleneck's queueing delay of each whole data packet
	hdrSojourn     []int64 // of each trimmed header
	ndp            []udp.NDPSenderStats
	idle           uint64 // NDP's pulls that found nothing to send
}

// last returns the round's completion: its last message's.
func (r *trimRound) last() int64 { return slices.Max(r.mct) }

// trimRun is one variant with one count of senders.
type trimRun struct {
	v      trimVariant
	n      int
	rate   int64
	rounds []*trimRound
}

// ideal returns the least time the bottleneck takes to carry an incast
// of n messages: every data frame on the wire back to back at C.
func trimIdeal(n int, rate int64) int64 {
	return int64(n) * trimMsgPackets * int64(wireFrame) * 8 * 1e9 / rate
}

// mcts returns every message's completion time over the run's rounds.
func (r *trimRun) mcts() []int64 {
	var out []int64
	for _, rd := range r.rounds {
		out = append(out, rd.mct...)
	}
	return out
}

// ratios returns each round's completion over the ideal.
func (r *trimRun) ratios() Runs {
	return over(r.rounds, func(rd *trimRound) float64 { return float64(rd.last()) / float64(trimIdeal(r.n, r.rate)) })
}

// busies returns each round's busy fraction.
func (r *trimRun) busies() []float64 {
	var b []float64
	for _, rd := range r.rounds {
		b = append(b, rd.busy)
	}
	return b
}

// sum adds f of every round.
func (r *trimRun) sum(f func(*trimRound) uint64) uint64 {
	var s uint64
	for _, rd := range r.rounds {
		s += f(rd)
	}
	return s
}

func runTrimIncast(ctx context.Context, env Env) (*Report, error) {
	o := demo.Options{
		Classes:  []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, // the demo's flows are not used
		Coalesce: trimCoalesce,
		WorkerRX: true, // the endpoints' UDP receive is light: it stays on the worker's CPU
	}
	rounds := trimRounds
	if env.Short {
		rounds = 3
	}
	m0 := readMachine()
	var runs []*trimRun
	o, err := env.withBed(ctx, o, func(b *bed) error {
		for _, v := range trimVariants() {
			env.say("trim-incast: %s", v.name)
			rs, err := runTrimVariant(ctx, env, b, v, trimSenders, rounds)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			runs = append(runs, rs...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("trim-incast: %w", err)
	}
	return trimReport(env, o, runs, m0.to(readMachine()))
}

// trimConfig is the switch of variant v on the bed's ports: two queues a
// port, data in 0 (the senders' DSCP) and a strict queue 1 with a reserve
// (trimmed headers, DSCP 46); every port's buffer a pool of its own, the
// data queue capped at it (or at v.data); at the bottleneck, v's trimming
// or marking.
func trimConfig(o demo.Options, ifaces []string, v trimVariant) (dataplane.Config, error) {
	if len(ifaces) != demo.Hosts {
		return dataplane.Config{}, fmt.Errorf("%d ports, want %d", len(ifaces), demo.Hosts)
	}
	data := o.Buffer
	if v.data > 0 {
		data = v.data
	}
	cfg := dataplane.Config{
		Workers: 1, Spin: dataplane.DefaultSpin, CPUs: o.WorkerCPUs,
		Classifier: dataplane.Classifier{DSCP: map[uint8]int{demo.DSCP(0): 0, trimDSCP: 1}},
	}
	for i, name := range ifaces {
		cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: o.Buffer})
		pc := dataplane.PortConfig{
			Name: name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, Queues: []scheduler.QueueConfig{{}, {Strict: true}},
				Overhead: scheduler.OverheadEthernet, LineRate: o.Rate},
			Shaper:   scheduler.ShaperConfig{Rate: o.Rate, Bucket: o.Bucket, Overhead: scheduler.OverheadEthernet},
			Pool:     i,
			Queues:   []buffer.QueueConfig{{Cap: o.Buffer}, {Alpha: 1, Reserve: trimReserve}},
			Coalesce: o.Coalesce,
		}
		if i == demo.Bottleneck {
			pc.Queues[0].Cap = data
			if v.trim {
				pc.Trim = &dataplane.Trim{Queue: 1, DSCP: trimDSCP}
			}
			if v.mark {
				k := marking.CutOff(marking.MeasureQueue, marking.Bytes(o.K))
				pc.Enqueue = []dataplane.MarkerSpec{{Name: marking.SchemeDCTCP, New: func(nq int) (marking.Marker, error) {
					return marking.NewRED(k, marking.Enqueue, nq)
				}}}
			}
		}
		cfg.Ports = append(cfg.Ports, pc)
	}
	return cfg, cfg.Validate()
}

// trimRig is a variant's switch, its tap on the bottleneck and its
// receiver on h5.
type trimRig struct {
	v    trimVariant
	rate int64
	sw   demo.Switch
	tap  *trimTap
	ndp  *udp.NDPReceiver
	win  *udp.Receiver
	dst  netip.AddrPort
	flow uint32 // the last flow number used
}

// runTrimVariant starts v's switch and receiver and runs every count of
// senders, rounds incasts each.
func runTrimVariant(ctx context.Context, env Env, b *bed, v trimVariant, senders []int, rounds int) ([]*trimRun, error) {
	cfg, err := trimConfig(b.options(), b.ifaces(), v)
	if err != nil {
		return nil, err
	}
	var runs []*trimRun
	err = b.withConfig(cfg, func(sw demo.Switch) (err error) {
		g := &trimRig{v: v, rate: b.options().Rate, sw: sw, tap: &trimTap{recs: make([]trimRecord, trimTapRecords)}}
		tp, ok := sw.(tapper)
		if !ok {
			return errors.New("the switch takes no tap")
		}
		if err := tp.AddTap(demo.Bottleneck, g.tap); err != nil {
			return err
		}
		rh := b.hosts()[demo.Bottleneck]
		rc, err := rh.ListenUDP(0)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rc.Close()) }()
		rconn, err := udp.Prepare(rc, udp.NotECT)
		if err != nil {
			return err
		}
		g.dst = netip.AddrPortFrom(rh.IPv4, udpPort(rc))
		var run func(ctx context.Context) error
		if v.ndp {
			if g.ndp, err = udp.NewNDPReceiver(rconn, udp.NDPReceiverConfig{Rate: g.rate, Burst: trimPullBurst}); err != nil {
				return err
			}
			run = g.ndp.Run
		} else {
			if g.win, err = udp.NewReceiver(rconn, udp.ReceiverConfig{}); err != nil {
				return err
			}
			run = g.win.Run
		}
		rctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var rerr error
		wg.Go(func() { rerr = run(rctx) })
		defer func() {
			stop()
			wg.Wait()
			err = errors.Join(err, rerr)
		}()
		for _, n := range senders {
			r, err := g.sweep(ctx, b, n, rounds)
			if err != nil {
				return fmt.Errorf("%d senders: %w", n, err)
			}
			ratios := r.ratios()
			env.say("trim-incast: %s, %d senders: median MCT %.2f ms, p99 %.2f ms, completion %s× the ideal, %d timeouts, busy %.1f%%",
				v.name, n, median(r.mcts())/1e6, float64(quantile(r.mcts(), 0.99))/1e6, ratios.Format(func(x float64) string { return fmt.Sprintf("%.2f", x) }),
				r.sum(func(rd *trimRound) uint64 { return rd.timeouts }), 100*median(r.busies()))
			runs = append(runs, r)
		}
		return nil
	})
	return runs, err
}

// sweep opens n sender sockets, dealt out to h1–h4, and runs rounds
// incasts through them.
func (g *trimRig) sweep(ctx context.Context, b *bed, n, rounds int) (*trimRun, error) {
	hosts := b.hosts()
	var conns []*net.UDPConn
	var pconns []udp.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := hosts[i%demo.Bottleneck].DialUDP(ctx, g.dst, demo.DSCP(0), packet.ECT0)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		pc, err := udp.Prepare(c, udp.ECT0)
		if err != nil {
			return nil, err
		}
		pconns = append(pconns, pc)
	}
	r := &trimRun{v: g.v, n: n, rate: g.rate}
	// A first incast warms the path up (ARP, the switch's learning): not measured.
	for i := range rounds + 1 {
		if err := sleep(ctx, trimGap); err != nil {
			return nil, err
		}
		rd, err := g.round(ctx, pconns)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i, err)
		}
		if i > 0 {
			r.rounds = append(r.rounds, rd)
		}
	}
	return r, nil
}

// incastSender is what a round needs of a sender of either kind.
type incastSender interface {
	Run(ctx context.Context) error
}

// round runs one incast: a message from every connection at once.
func (g *trimRig) round(ctx context.Context, conns []udp.Conn) (*trimRound, error) {
	n := len(conns)
	rd := &trimRound{n: n}
	first := g.flow + 1
	senders := make([]incastSender, n)
	for i, c := range conns {
		g.flow++
		var err error
		if g.v.ndp {
			senders[i], err = udp.NewNDPSender(c, nil, udp.NDPConfig{Flow: g.flow, Packets: trimMsgPackets, Rate: trimHostRate})
		} else {
			senders[i], err = udp.NewSender(c, nil, udp.Config{Flow: g.flow, CC: g.v.cc, Packets: trimMsgPackets, Rate: trimHostRate, LogEvery: -1})
		}
		if err != nil {
			return nil, err
		}
	}
	st0 := g.sw.Stats().Ports[demo.Bottleneck]
	g.tap.reset()
	g.tap.on.Store(true)
	rctx, cancel := context.WithTimeout(ctx, trimRoundTimeout)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range senders {
		wg.Go(func() {
			<-start
			errs[i] = s.Run(rctx)
		})
	}
	t0 := time.Now().UnixNano()
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := sleep(ctx, 2*time.Millisecond); err != nil { // the last packets reach the receiver and the tap
		return nil, err
	}
	g.tap.on.Store(false)
	st1 := g.sw.Stats().Ports[demo.Bottleneck]
	for _, s := range senders {
		switch s := s.(type) {
		case *udp.NDPSender:
			st := s.Stats()
			rd.sent, rd.retrans, rd.timeouts = rd.sent+st.Sent, rd.retrans+st.Retrans, rd.timeouts+st.Timeouts
			rd.idle += st.Idle
			rd.ndp = append(rd.ndp, st)
		case *udp.Sender:
			st := s.Stats()
			rd.sent, rd.retrans, rd.timeouts = rd.sent+st.Sent, rd.retrans+st.Retrans, rd.timeouts+st.Timeouts
		}
	}
	done := map[uint32]int64{}
	if g.ndp != nil {
		for _, f := range g.ndp.Flows() {
			if f.Flow >= first && f.Flow <= g.flow {
				rd.whole += f.Received + f.Duplicates
				rd.headers += f.Trimmed
				if f.Done > 0 {
					done[f.Flow] = f.Done
				}
			}
		}
	} else {
		for _, f := range g.win.Flows() {
			if f.Flow >= first && f.Flow <= g.flow {
				rd.whole += f.Packets + f.Duplicates + f.OutOfOrder
				if f.Packets == trimMsgPackets {
					done[f.Flow] = f.Last
				}
			}
		}
	}
	for fl := first; fl <= g.flow; fl++ {
		at, ok := done[fl]
		if !ok {
			rd.failed++
			at = t0 + int64(trimRoundTimeout)
		}
		rd.mct = append(rd.mct, at-t0)
	}
	rd.trimmed = st1.Trimmed - st0.Trimmed
	for reason, v := range st1.Drops {
		rd.drops += v - st0.Drops[reason]
	}
	rd.wire = st1.TxBytes - st0.TxBytes + 24*(st1.TxPackets-st0.TxPackets)
	rd.busy = float64(rd.wire) * 8 / (float64(g.rate) * float64(rd.last()) / 1e9)
	for _, rec := range g.tap.records() {
		if rec.trimmed {
			rd.hdrSojourn = append(rd.hdrSojourn, rec.sojourn)
		} else {
			rd.sojourn = append(rd.sojourn, rec.sojourn)
		}
	}
	return rd, nil
}

// trimTap keeps the bottleneck's queueing delay of every packet it sends
// while on is set, and whether the packet was a trimmed header; it runs
// on the worker, so it neither allocates nor locks, and drops what does
// not fit.
type trimTap struct {
	on   atomic.Bool
	n    atomic.Int64
	recs []trimRecord
}

type trimRecord struct {
	sojourn int64
	trimmed bool
}

// Record implements dataplane.Tap.
func (t *trimTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventEgress || !t.on.Load() {
		return
	}
	if i := t.n.Add(1) - 1; i < int64(len(t.recs)) {
		t.recs[i] = trimRecord{sojourn: ev.Sojourn, trimmed: ev.Trimmed}
	}
}

// reset empties the tap; call it while it is off.
func (t *trimTap) reset() { t.n.Store(0) }

// records returns what the tap kept; call it while it is off.
func (t *trimTap) records() []trimRecord { return t.recs[:min(t.n.Load(), int64(len(t.recs)))] }

// trimGet returns the run of the variant named name with n senders.
func trimGet(runs []*trimRun, name string, n int) *trimRun {
	for _, r := range runs {
		if r.v.name == name && r.n == n {
			return r
		}
	}
	return nil
}

// trimReport renders the runs, in the order runTrimIncast makes them.
func trimReport(env Env, o demo.Options, runs []*trimRun, m machine) (*Report, error) {
	if want := len(trimVariants()) * len(trimSenders); len(runs) != want {
		return nil, fmt.Errorf("trim-incast: %d runs, want %d", len(runs), want)
	}
	rep := env.report(trimIncast(), "Packet trimming and NDP against drop-tail and DCTCP in an incast")
	rep.Setup = []string{
		fmt.Sprintf("The demo's five-host testbed; ecnswitch on AF_XDP ports, every port shaped to %.0f Mbit/s with two queues: "+
			"data in queue 0 (capped at the port's %d KB buffer, a pool of its own), and a strict-priority queue 1 with a "+
			"%d KB reserve outside the pool. h1–h4 send, h5 receives: its port is the bottleneck. "+
			"Each incast starts N senders at once (sockets dealt out to h1–h4; N = %v), each with one message of %d datagrams of "+
			"%d bytes (%.1f KB), paced at %.0f Gbit/s, their host link's rate; %d incasts per N after one to warm up, %v apart.",
			float64(o.Rate)/1e6, o.Buffer>>10, trimReserve>>10, trimSenders, trimMsgPackets, udp.DefaultSize,
			float64(trimMsgPackets*udp.DefaultSize)/1000, trimHostRate/1e9, len(runs[0].rounds), trimGap),
		fmt.Sprintf("Five transports over the bottleneck: NDP (transport/udp's NDPSender and NDPReceiver: a first window of %d "+
			"packets unasked, an ACK per packet, a NACK per trimmed header at once, one pull per arrival paced at C, "+
			"pulls back to back ≤ %d after a pause) over a port that trims (dataplane.Trim: cut to the headers + %d B, DSCP %d, "+
			"to queue 1), the same over NDP's own 8-packet data queue (%d B), and over the same port without trimming (drop-tail); "+
			"transport/udp's window transport (ECN*'s law, which with no marks is loss-based AIMD; go-back-N) over drop-tail; "+
			"and DCTCP (g = 1/16) over RED cut-off marking of the data queue at K = %d KB. Every sender starts with %d packets "+
			"and waits out a %v retransmission timeout.",
			udp.DefaultNDPWindow, trimPullBurst, packet.DefaultTrimPayload, trimDSCP, trimShallow, o.K>>10,
			int(transport.InitWindow), udp.DefaultMinRTO),
		fmt.Sprintf("A message's completion time (MCT) runs from the incast's start to the receiver's kernel stamp of the packet "+
			"that completed it (the hosts share one clock); a message not complete within %v counts as that. The ideal of an incast "+
			"is N·M·(1538 B wire frames)/C, the bottleneck carrying nothing but data back to back. Queueing delays are the "+
			"switch's own (a tap on the bottleneck), of whole data packets; \"busy\" is the bottleneck's wire bytes (trimmed "+
			"headers included) over C times the incast's completion.", trimRoundTimeout),
	}
	busy := fmt.Sprintf("The machine's load average (1 min) was %.2f when the run began and %.2f at its end", m.load0, m.load1)
	if m.pressure >= 0 {
		busy += fmt.Sprintf(", and some task waited for a CPU %.0f%% of the run's time (PSI, /proc/pressure/cpu; near 0%% on a quiet machine)", 100*m.pressure)
	}
	rep.Setup = append(rep.Setup, busy+". The claims carry no port-busy verdict: in an incast the port idles "+
		"while senders recover, which is what is measured, so the 95% rule of the other experiments would judge the "+
		"transport, not the machine; each claim states the port-busy fraction of its runs instead, and the tables every run's.")
	rep.Scaling = "None: NDP's claim is about the ideal at whatever rate; the message size and the first window are the " +
		"testbed's (about one bandwidth-delay product of its 1 Gbit/s links, as NDP sizes its first window)."
	nmax := trimSenders[len(trimSenders)-1]
	ndp, shallow, ndpTail := "NDP, trimming", "NDP, trimming, 8-packet queue", "NDP, drop-tail"
	tail, dctcp := "window (ECN*), drop-tail", "DCTCP, marking at K"
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	for _, n := range trimSenders {
		r := trimGet(runs, ndp, n)
		rs := r.ratios()
		rep.Claims = append(rep.Claims, Claim{
			Source: "NDP, abstract", What: fmt.Sprintf("NDP over trimming, %d senders: incast completion over the ideal N·M/C", n),
			Paper: "near-optimal", Ours: rs.Format(f2) + "× " + busyNote(r),
			Rule: atMost("completion / ideal", rs.Median(), 1.5, "×").because("NDP: near-optimal, here within 1.5×"),
		})
	}
	sh := trimGet(runs, shallow, nmax)
	rep.Claims = append(rep.Claims, Claim{
		Source: "NDP, switch design", What: fmt.Sprintf("NDP over trimming with NDP's 8-packet data queue, %d senders: completion over the ideal", nmax),
		Paper: "an 8-packet queue suffices", Ours: sh.ratios().Format(f2) + "× " + busyNote(sh),
		Rule: atMost("completion / ideal", sh.ratios().Median(), 1.5, "×"),
	})
	nt, nd := trimGet(runs, ndp, nmax), trimGet(runs, ndpTail, nmax)
	var ntTimeouts uint64
	for _, n := range trimSenders {
		ntTimeouts += trimGet(runs, ndp, n).sum(func(rd *trimRound) uint64 { return rd.timeouts })
	}
	ndTimeouts := nd.sum(func(rd *trimRound) uint64 { return rd.timeouts })
	rep.Claims = append(rep.Claims, Claim{
		Source: "NDP, transport design", What: fmt.Sprintf("timeouts: NDP over trimming (every N) against NDP over drop-tail (%d senders)", nmax),
		Paper: "a trimmed header tells the receiver of every loss: no timeout", Ours: fmt.Sprintf("%d against %d", ntTimeouts, ndTimeouts),
		Rule: atMost("timeouts with trimming", float64(ntTimeouts), 0, "").and(above("without", float64(ndTimeouts), 0, "none")),
	})
	for _, other := range []string{tail, dctcp} {
		o := trimGet(runs, other, nmax)
		a, b := float64(quantile(nt.mcts(), 0.99)), float64(quantile(o.mcts(), 0.99))
		rep.Claims = append(rep.Claims, Claim{
			Source: "NDP, abstract (incast)", What: fmt.Sprintf("p99 MCT, %d senders: NDP over trimming against %s", nmax, other),
			Paper: "near-optimal for NDP; a window transport waits out timeouts", Ours: fmt.Sprintf("%.2f against %.2f ms %s", a/1e6, b/1e6, busyNote(nt)),
			Rule: lower("NDP's p99", b, a, 0.5, 1),
		})
	}
	rep.Tables = trimTables(runs)
	rep.Plots = trimPlots(runs)
	rep.Limits = []string{
		"The switch model keeps NDP's trimming and its priority for headers, not the rest of NDP's switch: strict priority " +
			"rather than NDP's 10:1 weighted round robin between headers and data, no random choice between trimming the " +
			"arrival and the queue's tail, no return-to-sender when the header queue overflows (here the reserve).",
		"The endpoints are Go programs on UDP sockets sharing the machine's two CPUs with the switch worker and the hosts' " +
			"stacks: a pull leaves when the receiver's goroutine runs, not at the exact instant, and a sender answers a pull " +
			"as late as its goroutine is scheduled. The busy fraction beside each number says how well the bottleneck was kept full.",
		"Drop-tail and DCTCP use transport/udp's window transport: go-back-N on three duplicate ACKs, no SACK, a 10 ms " +
			"minimum RTO; kernel TCP would recover some losses by SACK that it resends whole windows for.",
	}
	if m.pressure > 0.2 {
		rep.Limits = append(rep.Limits, fmt.Sprintf("Some task waited for a CPU %.0f%% of this run's time: the endpoints' goroutines, "+
			"the receiver's pull pacing and the switch's worker ran late by milliseconds, and spurious timeouts followed; the "+
			"numbers describe the machine's contention as much as the transports. Rerun on a quiet machine before comparing "+
			"them with the paper.", 100*m.pressure))
	}
	return rep, nil
}

// busyNote states the median port-busy fraction of r's incasts:
// "(port busy 71.3%)".
func busyNote(r *trimRun) string { return fmt.Sprintf("(port busy %.1f%%)", 100*median(r.busies())) }

// trimTables are the report's tables: per variant and count of senders,
// and NDP's accounting.
func trimTables(runs []*trimRun) []Table {
	var rows [][]string
	for _, r := range runs {
		ms := r.mcts()
		var sj, hs []int64
		for _, rd := range r.rounds {
			sj, hs = append(sj, rd.sojourn...), append(hs, rd.hdrSojourn...)
		}
		per := func(f func(*trimRound) uint64) string {
			return fmt.Sprintf("%.1f", float64(r.sum(f))/float64(len(r.rounds)))
		}
		failed := 0
		for _, rd := range r.rounds {
			failed += rd.failed
		}
		rows = append(rows, []string{
			r.v.name, fmt.Sprint(r.n),
			fmt.Sprintf("%.2f", float64(trimIdeal(r.n, r.rate))/1e6),
			fmt.Sprintf("%.2f", median(ms)/1e6), fmt.Sprintf("%.2f", float64(quantile(ms, 0.99))/1e6),
			r.ratios().Format(func(x float64) string { return fmt.Sprintf("%.2f", x) }),
			fmt.Sprintf("%.1f%%", 100*median(r.busies())),
			per(func(rd *trimRound) uint64 { return rd.retrans }), per(func(rd *trimRound) uint64 { return rd.timeouts }),
			per(func(rd *trimRound) uint64 { return rd.trimmed }), per(func(rd *trimRound) uint64 { return rd.drops }),
			fmt.Sprintf("%.0f / %.0f / %.0f", float64(quantile(sj, 0.5))/1e3, float64(quantile(sj, 0.99))/1e3, float64(slices.Max(append(sj, 0)))/1e3),
			fmt.Sprintf("%.1f", float64(quantile(hs, 0.99))/1e3),
			fmt.Sprint(failed),
		})
	}
	ts := []Table{{
		Title: "Per transport and count of senders",
		Header: []string{"transport", "N", "ideal (ms)", "median MCT (ms)", "p99 MCT (ms)", "completion / ideal", "busy",
			"resent / incast", "timeouts / incast", "trimmed / incast", "dropped / incast", "queueing delay p50 / p99 / max (µs)",
			"header delay p99 (µs)", "incomplete"},
		Rows: rows,
		Note: "MCTs over every message of every incast; completion / ideal is the median over incasts (spread and count beside it); " +
			"busy is the median incast's. Queueing delays are of whole data packets at the bottleneck, header delays of trimmed " +
			"headers in the strict queue.",
	}}
	var arows [][]string
	for _, r := range runs {
		if !r.v.ndp {
			continue
		}
		sent := r.sum(func(rd *trimRound) uint64 { return rd.sent })
		whole := r.sum(func(rd *trimRound) uint64 { return rd.whole })
		hdrs := r.sum(func(rd *trimRound) uint64 { return rd.headers })
		drops := r.sum(func(rd *trimRound) uint64 { return rd.drops })
		trimmed := r.sum(func(rd *trimRound) uint64 { return rd.trimmed })
		idle := r.sum(func(rd *trimRound) uint64 { return rd.idle })
		arows = append(arows, []string{
			r.v.name, fmt.Sprint(r.n), fmt.Sprint(sent), fmt.Sprint(whole), fmt.Sprint(hdrs), fmt.Sprint(drops),
			fmt.Sprint(int64(sent) - int64(whole+hdrs+drops)), fmt.Sprint(trimmed), fmt.Sprint(idle),
		})
	}
	ts = append(ts, Table{
		Title:  "NDP's packets: sent = received whole + received trimmed + dropped",
		Header: []string{"transport", "N", "sent", "received whole", "received trimmed", "dropped at the switch", "unaccounted", "trimmed at the switch", "pulls that found nothing"},
		Rows:   arows,
		Note: "Summed over the incasts. Unaccounted are packets neither received nor dropped by the switch: lost between " +
			"the switch and the receiver's socket (its receive buffer), or still in flight when the incast was counted.",
	})
	return ts
}

// trimPlots are the report's plots: the MCT CDF per transport at every
// N, and the completion over the ideal against N.
func trimPlots(runs []*trimRun) []Plot {
	return []Plot{
		{File: "mct-cdf.png", Caption: "CDF of the messages' completion times, per transport, at each count of senders.", Draw: func(path string) error {
			var ps []*plot.Plot
			for _, n := range trimSenders {
				var lines []Line
				for _, v := range trimVariants() {
					r := trimGet(runs, v.name, n)
					ds := make([]time.Duration, 0, len(r.mcts()))
					for _, m := range r.mcts() {
						ds = append(ds, time.Duration(m))
					}
					l := cdf(v.name, ds)
					l.Dashed = !v.ndp
					lines = append(lines, l)
				}
				p, err := newPlot(fmt.Sprintf("%d senders", n), "MCT (µs)", "CDF", lines)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			return saveTiles(path, 1, ps, 16*vg.Centimeter, 9*vg.Centimeter)
		}},
		{File: "completion.png", Caption: "An incast's completion over the ideal N·M/C (median over incasts), against N.", Draw: func(path string) error {
			var lines []Line
			for _, v := range trimVariants() {
				var xy plotter.XYs
				for _, n := range trimSenders {
					xy = append(xy, plotter.XY{X: float64(n), Y: trimGet(runs, v.name, n).ratios().Median()})
				}
				lines = append(lines, Line{Label: v.name, XY: xy, Dashed: !v.ndp})
			}
			p, err := newPlot("incast completion / ideal", "senders", "×", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 14*vg.Centimeter, 9*vg.Centimeter)
		}},
	}
}
