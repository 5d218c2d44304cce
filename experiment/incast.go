package experiment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// ecnsharpIncast is the ECN♯ paper's incast experiment (000 §5.4, Fig. 16
// and 17) on real TCP: long-lived background flows of 3× RTT variation
// hold each scheme's standing queue at h5's port, and a query makes N
// senders answer at once, each with 3–60 KB, through that port. The paper
// finds CoDel dropping and timing out from 100 concurrent senders and ECN♯
// only from 175, with query completion times like DCTCP-RED-Tail's.
func ecnsharpIncast() Experiment {
	return Experiment{
		Name:    "ecnsharp-incast",
		Paper:   "the ECN♯ paper's incast experiment (000 §5.4, Fig. 16 and 17): query completion with 25 to 200 concurrent senders",
		Summary: "queries answered by 25 to 200 TCP senders at once over background flows of 3× RTT variation: completion time, timeouts and drops per scheme",
		Run:     runIncast,
	}
}

// The experiment's constants: 000 §5.4's response sizes (uniform, kept in
// bytes as ecnsharp-rtt keeps its thresholds), the queries per sender
// count and scheme, the time between them, and the hosts' least RTO.
const (
	incastMinSize, incastMaxSize = 3_000, 60_000 // bytes
	incastQueries                = 10
	incastGap                    = 100 * time.Millisecond
	incastQueryTimeout           = 10 * time.Second
	incastDefault                = 2 * time.Second // the background's warm-up
	// 000 §5.4 runs CoDel with target 10 µs and interval 240 µs, not
	// §5.2's testbed values.
	incastCoDelTarget, incastCoDelInterval = 10 * time.Microsecond, 240 * time.Microsecond
	// incastQueryDSCP marks the query connections' packets, which go to
	// the same queue as the background's (DSCP 0), so that the drop tap
	// tells their drops apart.
	incastQueryDSCP = 8
	// incastCalibrationBuffer is the calibration run's port buffer, bytes:
	// more than any query here puts into the port.
	incastCalibrationBuffer = 8 << 20
	// incastCalibrationSenders is where the paper's DCTCP-RED-Tail is
	// loss-free (000 Fig. 16), and incastMargin the room the calibrated
	// buffer leaves above the calibration's peak.
	incastCalibrationSenders = 100
	incastMargin             = 1.25
)

// incastHosts cites what the paper's hosts ran.
const incastHosts = "000 §5.1: \"We use DCTCP at the end host by default … All endhosts in our evaluation are running DCTCP\"; " +
	"§5.4 (a simulation, \"other settings are similar to §5.3\") states no RTO_min, so the hosts take the DCTCP testbed's 10 ms of 001 §5.1. " +
	"Every query's responses leave on new connections, so each starts from the kernel's initial window of 10 segments, as §5.4's query flows " +
	"start afresh at 4 s; the table gives every response's congestion window at its start (TCP_INFO)."

// incastSenders are the concurrent senders of a query (000 Fig. 17).
var incastSenders = []int{25, 50, 100, 150, 200}

// incastCoDel is CoDel as 000 §5.4 sets it, scaled by sc.
func incastCoDel(sc Scaling) marking.CoDelConfig {
	return marking.CoDelConfig{Target: int64(sc.Time(incastCoDelTarget)), Interval: int64(sc.Time(incastCoDelInterval))}
}

// incastScheme is one marking scheme of the experiment.
type incastScheme struct {
	title  string
	scheme string // demo's
	k      int64  // the port's K, bytes
}

func incastSchemes() []incastScheme {
	return []incastScheme{
		{fmt.Sprintf("DCTCP-RED-Tail (K = %d KB)", sharpKTail/1000), demo.PerQueue, sharpKTail},
		{fmt.Sprintf("DCTCP-RED-AVG (K = %d KB)", sharpKAvg/1000), demo.PerQueue, sharpKAvg},
		{"CoDel", demo.CoDel, sharpKTail},
		{"ECN♯", demo.ECNSharp, sharpKTail},
	}
}

// incastRun is one scheme with one count of senders, in one run.
type incastRun struct {
	scheme  string // title
	senders int
	round   int // which of the runs, from 0
	// fct are the responses' completion times, from the query's start to
	// the response's last byte at the aggregator; qct the queries'.
	fct, qct []time.Duration
	// drops are the switch's, every port, over the queries.
	drops demo.Drops
	// rto counts the queries one of whose responses waited out a
	// retransmission timeout (TCP_INFO tcpi_total_rto).
	rto int
	// cwnd0 are the responses' congestion windows as they started,
	// segments.
	cwnd0 []uint32
	load  demo.Load // over the queries; the senders are the background's
	peak  int64     // the bottleneck's peak occupancy since its switch started, bytes
	// failed says why the queries stopped, when they did.
	failed string
}

// overflow returns the overflow drops of query packets: what a buffer too
// small for the burst lost of the responses, whatever the marker did.
func (r *incastRun) overflow() uint64 { return r.drops.Overflow(incastQueryDSCP) }

// lost reports whether the run lost query packets to overflow, or stopped.
func (r *incastRun) lost() bool { return r.overflow() > 0 || r.failed != "" }

func runIncast(ctx context.Context, env Env) (*Report, error) {
	warmup, _ := env.times(incastDefault)
	sc := ecnsharpScaling(demo.DefaultRate)
	ecn, _ := sharpMarkers(sc)
	codel := incastCoDel(sc)
	base := demo.Options{
		Classes:   []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, // one queue; the demo's flows are not used
		HostDelay: sharpHostDelays(sc), ECNSharp: ecn, CoDel: codel, RTOMin: sharpRTO,
	}
	// The buffer: Tail's peak at 100 senders in a port that never
	// overflows, with room to spare (000 Fig. 16: Tail drops nothing there).
	cal := base
	cal.K, cal.Buffer = sharpKTail, incastCalibrationBuffer
	tail := incastSchemes()[0]
	var calRun *incastRun
	if _, err := env.withBed(ctx, cal, func(b *bed) error {
		env.say("ecnsharp-incast: calibrating the buffer: %s, %d senders, %d KB", tail.title, incastCalibrationSenders, incastCalibrationBuffer>>10)
		var err error
		calRun, err = runQueries(ctx, b, tail, incastCalibrationSenders, warmup, 0)
		return err
	}); err != nil {
		return nil, fmt.Errorf("ecnsharp-incast: calibration: %w", err)
	}
	buffer := calibratedBuffer(calRun.peak)
	env.say("ecnsharp-incast: Tail's peak %d KB at %d senders: buffer %d KB", calRun.peak>>10, incastCalibrationSenders, buffer>>10)

	var runs []*incastRun
	var o demo.Options
	for _, k := range []int64{sharpKTail, sharpKAvg} {
		var err error
		x := base
		x.K, x.Buffer = k, buffer
		o, err = env.withBed(ctx, x, func(b *bed) error {
			for run := range env.runs() {
				for _, s := range incastSchemes() {
					if s.k != k {
						continue
					}
					for _, n := range incastSenders {
						r, err := runQueries(ctx, b, s, n, warmup, run)
						if err != nil {
							return fmt.Errorf("%s, %d senders: %w", s.title, n, err)
						}
						env.say("ecnsharp-incast: run %d, %s, %d senders: mean QCT %v, %d of %d queries with an RTO, %d query packets overflowed; drops %s %s",
							run+1, s.title, n, meanDuration(r.qct).Round(time.Microsecond), r.rto, len(r.qct), r.overflow(), r.drops, r.failed)
						runs = append(runs, r)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ecnsharp-incast: %w", err)
		}
	}
	return incastReport(env, o, warmup, calRun, runs), nil
}

// calibratedBuffer returns the port buffer for a calibration peak:
// incastMargin above it, rounded up to 64 KB.
func calibratedBuffer(peak int64) int64 {
	const unit = 64 << 10
	b := int64(float64(peak) * incastMargin)
	return (b + unit - 1) / unit * unit
}

// runQueries starts the switch of s and four long-lived background flows
// (one from each of h1–h4), and after warmup runs incastQueries queries,
// each answered at once by n senders on connections of their own, dealt
// out to h1–h4.
func runQueries(ctx context.Context, b *bed, s incastScheme, n int, warmup time.Duration, run int) (*incastRun, error) {
	r := &incastRun{scheme: s.title, senders: n, round: run}
	if err := b.withSwitch(s.scheme, func(sw demo.Switch) error { return r.run(ctx, b, sw, warmup) }); err != nil {
		return nil, err
	}
	return r, nil
}

// aggregator is h5's end of the queries: it accepts connections, each of
// which opens with its index, 4 bytes (-1 for a background flow, which it
// reads to its end), and hands the query connections to the query that
// waits for them.
type aggregator struct {
	ln    net.Listener
	dst   netip.AddrPort
	conns chan indexed
	bg    sync.WaitGroup
}

// indexed is an accepted query connection and its index.
type indexed struct {
	i int
	c net.Conn
}

func listenAggregator(h testbed.Host) (*aggregator, error) {
	ln, err := h.ListenTCP(0)
	if err != nil {
		return nil, err
	}
	a := &aggregator{ln: ln, dst: netip.AddrPortFrom(h.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port)), conns: make(chan indexed, 256)}
	a.bg.Go(func() { // ends when ln closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var hdr [4]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				c.Close()
				continue
			}
			i := int32(binary.BigEndian.Uint32(hdr[:]))
			if i < 0 {
				a.bg.Go(func() { defer c.Close(); io.Copy(io.Discard, c) })
				continue
			}
			a.conns <- indexed{int(i), c}
		}
	})
	return a, nil
}

func (a *aggregator) close() {
	a.ln.Close()
	a.bg.Wait()
	for {
		select {
		case x := <-a.conns:
			x.c.Close()
		default:
			return
		}
	}
}

// run runs the queries of r on the switch sw; a sweep point that stops
// short says why in r.failed and returns no error.
func (r *incastRun) run(ctx context.Context, b *bed, sw demo.Switch, warmup time.Duration) error {
	hosts := b.hosts()
	agg, err := listenAggregator(hosts[demo.Bottleneck])
	if err != nil {
		return err
	}
	defer agg.close()
	dial := func(h int, idx int32, dscp uint8) (net.Conn, error) {
		c, err := hosts[h].DialTCP(ctx, agg.dst, dscp)
		if err != nil {
			return nil, err
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(idx))
		if _, err := c.Write(hdr[:]); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}

	bctx, stopBG := context.WithCancel(ctx)
	var senders sync.WaitGroup
	defer func() {
		stopBG()
		senders.Wait()
	}()
	// Every background flow connects before any sends; each is closed
	// when bctx ends, which ends its sender.
	var background []net.Conn
	for h := range demo.Bottleneck {
		c, err := dial(h, -1, 0)
		if err != nil {
			for _, c := range background {
				c.Close()
			}
			return fmt.Errorf("background flow from %s: %w", hosts[h].Name, err)
		}
		background = append(background, c)
	}
	for _, c := range background {
		stop := context.AfterFunc(bctx, func() { c.Close() })
		senders.Go(func() { defer stop(); io.Copy(c, zeros{}) })
	}
	if err := sleep(ctx, warmup); err != nil {
		return err
	}

	st0 := sw.Stats()
	drops0 := switchDrops(sw)
	meter := demo.StartMeter(st0, background)
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(r.senders), 17)) // every scheme answers the same queries
	buf := make([]byte, incastMaxSize)
	for q := range incastQueries {
		if q > 0 {
			if err := sleep(ctx, incastGap); err != nil {
				return err
			}
		}
		sizes := make([]int, r.senders)
		for i := range sizes {
			sizes[i] = incastMinSize + rng.IntN(incastMaxSize-incastMinSize+1)
		}
		if why := r.query(ctx, agg, dial, sizes, buf); why != "" {
			r.failed = fmt.Sprintf("stopped at query %d: %s", q+1, why)
			break
		}
	}
	elapsed := time.Since(start)
	st1 := sw.Stats()
	r.drops = switchDrops(sw).Sub(drops0)
	r.load = meter.Stop(st1, demo.PortBusy(st0.Ports[demo.Bottleneck], st1.Ports[demo.Bottleneck], b.options().Rate, elapsed))
	r.peak = st1.Ports[demo.Bottleneck].Peak
	return nil
}

// query opens one connection per response (their index header sent, all
// accepted), then has every sender i write sizes[i] bytes at once, and
// records each response's completion time at the aggregator and whether
// one waited out a retransmission timeout. It returns why the query
// failed, "" if it did not.
func (r *incastRun) query(ctx context.Context, agg *aggregator, dial func(int, int32, uint8) (net.Conn, error), sizes []int, buf []byte) string {
	n := len(sizes)
	out := make([]net.Conn, n) // the senders' ends
	in := make([]net.Conn, n)  // the aggregator's
	defer func() {
		for i := range n {
			for _, c := range []net.Conn{out[i], in[i]} {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	for i := range n {
		c, err := dial(i%demo.Bottleneck, int32(i), incastQueryDSCP)
		if err != nil {
			return fmt.Sprintf("connection %d of %d: %v", i+1, n, err)
		}
		out[i] = c
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for got := 0; got < n; got++ {
		select {
		case x := <-agg.conns:
			if x.i < 0 || x.i >= n || in[x.i] != nil {
				x.c.Close()
				got--
				continue
			}
			in[x.i] = x.c
		case <-timeout.C:
			return fmt.Sprintf("the aggregator accepted %d of %d connections in 10 s", got, n)
		case <-ctx.Done():
			return ctx.Err().Error()
		}
	}
	for _, c := range out {
		if ti, err := tcpInfoOf(c); err == nil {
			r.cwnd0 = append(r.cwnd0, ti.Snd_cwnd)
		}
	}
	fct, err := respond(ctx, out, in, sizes, buf)
	if err != nil {
		return err.Error()
	}
	r.fct = append(r.fct, fct...)
	r.qct = append(r.qct, slices.Max(fct))
	for _, c := range out {
		if ti, err := tcpInfoOf(c); err == nil && ti.Total_rto > 0 {
			r.rto++
			break
		}
	}
	return ""
}

// respond has every sender i write sizes[i] bytes at once and returns each
// response's completion time at the aggregator.
func respond(ctx context.Context, out, in []net.Conn, sizes []int, buf []byte) ([]time.Duration, error) {
	fct := make([]time.Duration, len(sizes))
	errs := make([]error, 2*len(sizes)) // the senders', then the aggregator's
	deadline := time.Now().Add(incastQueryTimeout)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range out {
		wg.Go(func() {
			c.SetWriteDeadline(deadline)
			if _, err := c.Write(buf[:sizes[i]]); err != nil {
				errs[i] = fmt.Errorf("sender %d: %w", i, err)
			}
		})
	}
	for i, c := range in {
		wg.Go(func() {
			c.SetReadDeadline(deadline)
			if _, err := io.CopyN(io.Discard, c, int64(sizes[i])); err != nil {
				errs[len(sizes)+i] = fmt.Errorf("response %d: %w", i, err)
				return
			}
			fct[i] = time.Since(start)
		})
	}
	wg.Wait()
	return fct, errors.Join(append(errs, ctx.Err())...)
}

// tcpInfoOf returns the TCP_INFO of connection c.
func tcpInfoOf(c net.Conn) (*unix.TCPInfo, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var ti *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { ti, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return nil, err
	}
	return ti, ierr
}

// incastReport renders the calibration and the runs.
func incastReport(env Env, o demo.Options, warmup time.Duration, cal *incastRun, runs []*incastRun) *Report {
	sc := ecnsharpScaling(o.Rate)
	nruns := 0
	for _, r := range runs {
		nruns = max(nruns, r.round+1)
	}
	rep := env.report(ecnsharpIncast(), "ecnsharp-incast: query completion under incast (000 §5.4)")
	rep.Setup = []string{
		fmt.Sprintf("ecnsharp-rtt's testbed: five hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with one queue; "+
			"the switch holds the packets towards h1–h4 so that their base RTTs spread over 70–210 µs scaled. One long-lived "+
			"%s flow with ECN from each of h1–h4 to h5 (DSCP 0) holds the scheme's standing queue (000 §5.4 runs background data-mining traffic).",
			rate(o.Rate), o.CongestionControl),
		fmt.Sprintf("The port buffer is calibrated so that DCTCP-RED-Tail is loss-free at %d senders, as the paper's is (000 Fig. 16): a calibration "+
			"run of Tail's %d-sender queries in a %d KB buffer peaked at %d KB, and the buffer is %.2f× that, rounded up to 64 KB: %d KB "+
			"(the calibration's query packets overflowed %d times).",
			incastCalibrationSenders, incastCalibrationSenders, incastCalibrationBuffer>>10, cal.peak>>10, incastMargin, o.Buffer>>10, cal.overflow()),
		fmt.Sprintf("Queries: after %v of warm-up, %d queries %v apart; for each, N new TCP connections (DSCP %d, the background's queue) from h1–h4 "+
			"(dealt out in turn) to an aggregator on h5 are opened, and once all are up each writes one response of 3–60 KB, uniform (000 §5.4), all at once. "+
			"A response completes when the aggregator has read its last byte; a query when its last response does. N is %v; every scheme and N runs %d times "+
			"(the schemes in turn). The senders are connections, not machines: four hosts' TCP stacks share one CPU, so N senders start within the time "+
			"the CPU takes to write N responses, where the paper's N machines start together.",
			warmup, incastQueries, incastGap, incastQueryDSCP, incastSenders, nruns),
		fmt.Sprintf("Schemes as in ecnsharp-rtt: DCTCP-RED-Tail at K = %d KB, DCTCP-RED-AVG at K = %d KB, CoDel with 000 §5.4's "+
			"target 10 µs and interval 240 µs, scaled (%v, %v), and "+
			"ECN♯ (ins_target %v, pst_target %v, pst_interval %v). A sweep point loses when query packets overflow the buffer (a full pool or queue: "+
			"the drop tap's overflow reasons, query DSCP only); the background's drops and Not-ECT packets' count apart.",
			sharpKTail/1000, sharpKAvg/1000, sc.Time(incastCoDelTarget), sc.Time(incastCoDelInterval), sc.Time(sharpInterval), sc.Time(sharpTarget),
			sc.Time(sharpInterval)),
	}
	rep.Transport = incastHosts
	if len(cal.cwnd0) > 0 {
		rep.Transport += fmt.Sprintf(" In the calibration, the responses' windows at their start were %d–%d segments.", slices.Min(cal.cwnd0), slices.Max(cal.cwnd0))
	}
	rep.NonECT = nonECTDrop
	rep.Scaling = sc.String() + " Response sizes and K stay in bytes, as ecnsharp-rtt keeps K: each is the same multiple of the " +
		"bandwidth-delay product as in the paper. The RTO does not scale: 10 ms is 1 ms of the paper's time."

	get := func(title string, n, run int) *incastRun {
		for _, r := range runs {
			if r.scheme == title && r.senders == n && r.round == run {
				return r
			}
		}
		return nil
	}
	all := func(title string, n int) []*incastRun {
		var out []*incastRun
		for run := range nruns {
			if r := get(title, n, run); r != nil {
				out = append(out, r)
			}
		}
		return out
	}
	ss := incastSchemes()
	tail, codel, sharp := ss[0].title, ss[2].title, ss[3].title
	// firstLoss returns, per run, the fewest senders at which the scheme
	// lost query packets to overflow, +Inf where it never did.
	firstLoss := func(title string) Runs {
		var out Runs
		for run := range nruns {
			at := math.Inf(1)
			for _, n := range incastSenders {
				if r := get(title, n, run); r != nil && r.lost() {
					at = float64(n)
					break
				}
			}
			out = append(out, at)
		}
		return out
	}
	lossText := func(r Runs) string {
		return r.Format(func(x float64) string {
			if math.IsInf(x, 1) {
				return fmt.Sprintf("none up to %d", incastSenders[len(incastSenders)-1])
			}
			return fmt.Sprintf("from %.0f", x)
		})
	}
	loadsOfRuns := func(rs ...[]*incastRun) []demo.Load {
		var ls []demo.Load
		for _, x := range rs {
			for _, r := range x {
				if len(r.qct) > 0 {
					ls = append(ls, r.load)
				}
			}
		}
		return ls
	}
	sweep := func(title string) []*incastRun {
		var out []*incastRun
		for _, n := range incastSenders {
			out = append(out, all(title, n)...)
		}
		return out
	}
	cl, sl := firstLoss(codel), firstLoss(sharp)
	clm, slm := cl.Median(), sl.Median()
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 Fig. 17", What: "concurrent senders before query packets overflow, ECN♯ vs CoDel",
		Paper: "losses from 175 vs from 100 (1.75×)", Ours: fmt.Sprintf("%s vs %s", lossText(sl), lossText(cl)),
		Loads: loadsOfRuns(sweep(sharp), sweep(codel)),
		Rule:  lossesLater("CoDel", int(min(clm, 1e9)), !math.IsInf(clm, 1), "ECN♯", int(min(slm, 1e9)), !math.IsInf(slm, 1)),
	})
	t100, s100, c100 := all(tail, 100), all(sharp, 100), all(codel, 100)
	if len(t100) > 0 && len(s100) > 0 && len(c100) > 0 {
		drops := func(rs []*incastRun) Runs {
			return over(rs, func(r *incastRun) float64 { return float64(r.overflow()) })
		}
		td, sd, cd := drops(t100), drops(s100), drops(c100)
		n := func(x float64) string { return fmt.Sprintf("%.0f", x) }
		rep.Claims = append(rep.Claims, Claim{
			Source: "000 Fig. 16", What: "query packets overflowing the buffer with 100 concurrent senders: ECN♯, DCTCP-RED-Tail, CoDel",
			Paper: "0, 0, 125 packets", Ours: fmt.Sprintf("%s, %s, %s packets", sd.Format(n), td.Format(n), cd.Format(n)),
			Loads: loadsOfRuns(s100, t100, c100),
			Rule:  atLeast("CoDel's", cd.Median(), 1, "").and(notAbove("ECN♯'s", sd.Median(), cd.Median(), "CoDel's")),
		}, Claim{
			Source: "000 Fig. 16", What: "DCTCP-RED-Tail with 100 concurrent senders, in the calibrated buffer: query packets overflowing",
			Paper: "0 (no packet drops)", Ours: fmt.Sprintf("%s packets", td.Format(n)),
			Loads: loadsOfRuns(t100), Rule: atMost("Tail's", td.Median(), 0, ""),
		})
		qct := func(rs []*incastRun) Runs {
			return over(rs, func(r *incastRun) float64 { return float64(meanDuration(r.qct)) })
		}
		ms, mt := qct(s100), qct(t100)
		d := func(x float64) string { return time.Duration(x).Round(time.Microsecond).String() }
		rep.Claims = append(rep.Claims, Claim{
			Source: "000 Fig. 17", What: "mean query completion with 100 concurrent senders, ECN♯ vs DCTCP-RED-Tail",
			Paper: "comparable", Ours: fmt.Sprintf("%s vs %s", ms.Format(d), mt.Format(d)),
			Loads: loadsOfRuns(s100, t100),
			Rule:  atMostOf("ECN♯", ms.Median(), mt.Median(), 1.5, "DCTCP-RED-Tail's").given(mt.Median() > 0),
		})
	}

	var rows [][]string
	var loads []loadRow
	for _, s := range ss {
		for _, n := range incastSenders {
			rs := all(s.title, n)
			if len(rs) == 0 {
				continue
			}
			m := func(f func(*incastRun) float64) float64 { return over(rs, f).Median() }
			dur := func(f func(*incastRun) time.Duration) string {
				return millis(time.Duration(m(func(r *incastRun) float64 { return float64(f(r)) })))
			}
			var cw []uint32
			var failed []string
			for _, r := range rs {
				cw = append(cw, r.cwnd0...)
				if r.failed != "" {
					failed = append(failed, fmt.Sprintf("run %d %s", r.round+1, r.failed))
				}
				loads = append(loads, loadRow{label: fmt.Sprintf("%s, %d senders, run %d", s.title, n, r.round+1), load: r.load, drops: r.drops})
			}
			window := "–"
			if len(cw) > 0 {
				window = fmt.Sprintf("%d–%d", slices.Min(cw), slices.Max(cw))
			}
			state := strings.Join(failed, "; ")
			if state == "" {
				state = "–"
			}
			rows = append(rows, []string{
				s.title, fmt.Sprint(n), fmt.Sprintf("%.0f", m(func(r *incastRun) float64 { return float64(len(r.qct)) })),
				dur(func(r *incastRun) time.Duration { x, _ := meanP99(r.fct); return x }), dur(func(r *incastRun) time.Duration { _, x := meanP99(r.fct); return x }),
				dur(func(r *incastRun) time.Duration { x, _ := meanP99(r.qct); return x }), dur(func(r *incastRun) time.Duration { _, x := meanP99(r.qct); return x }),
				fmt.Sprintf("%.0f", m(func(r *incastRun) float64 { return float64(r.rto) })),
				fmt.Sprintf("%.0f", m(func(r *incastRun) float64 { return float64(r.overflow()) })),
				fmt.Sprintf("%.0f", m(func(r *incastRun) float64 { return float64(r.drops.Total() - r.overflow()) })),
				window, state,
			})
		}
	}
	rep.Tables = []Table{{
		Title: "Per scheme and number of concurrent senders",
		Header: []string{"scheme", "senders", "queries", "response FCT mean", "p99", "query completion mean", "p99", "queries with an RTO",
			"query packets overflowed", "other drops", "cwnd at start (segments)", "stopped"},
		Rows: rows,
		Note: fmt.Sprintf("Medians of %d runs. Overflowed query packets are the drops of the queries' DSCP for want of room (pool, queue); "+
			"other drops are everything else on every port over the queries, the background's and markers' drops of Not-ECT packets among them "+
			"(the table below gives them by reason and kind). A query with an RTO had a response whose connection waited out a retransmission "+
			"timeout (TCP_INFO tcpi_total_rto).", nruns),
	}, loadTable(loads)}
	rep.Plots = []Plot{{
		File: "qct.png", Caption: "Mean query completion time against the number of concurrent senders (the median of the runs).",
		Draw: func(path string) error {
			var lines []Line
			for _, s := range ss {
				var xy plotter.XYs
				for _, n := range incastSenders {
					if rs := all(s.title, n); len(rs) > 0 {
						m := over(rs, func(r *incastRun) float64 { return meanDuration(r.qct).Seconds() * 1e3 }).Median()
						xy = append(xy, plotter.XY{X: float64(n), Y: m})
					}
				}
				lines = append(lines, Line{Label: s.title, XY: xy})
			}
			p, err := newPlot("query completion", "concurrent senders", "mean (ms)", lines)
			if err != nil {
				return err
			}
			return saveTiles(path, 1, []*plot.Plot{p}, 14*vg.Centimeter, 9*vg.Centimeter)
		},
	}}
	rep.Limits = []string{
		"The senders are TCP connections from four hosts whose stacks share one CPU, not N machines: a query's responses start over " +
			"the time that CPU takes to write them, which spreads the burst the paper's senders send at once.",
		"000 §5.4 is a simulation at 10 Gbit/s with 16 senders and data-mining background traffic; here the background is one " +
			"long-lived flow per host.",
		fmt.Sprintf("%d queries per scheme, sender count and run: a p99 of %d queries is their maximum.", incastQueries, incastQueries),
	}
	return rep
}

// lossesLater is 000 Fig. 17's rule: a loses (drops or times out) at
// some number of senders, aAt the fewest, and b only at more or never.
func lossesLater(a string, aAt int, aLost bool, b string, bAt int, bLost bool) Rule {
	return Rule{holds: aLost && (!bLost || bAt > aAt), text: a + " loses at some N, " + b + " only at a larger one or never"}
}
