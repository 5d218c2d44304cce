package experiment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
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
// count and scheme, the time between them, and the least retransmission
// timeout of Linux TCP, which a query that lost a packet its senders
// could not recover by fast retransmit waits out.
const (
	incastMinSize, incastMaxSize = 3_000, 60_000 // bytes
	incastQueries                = 10
	incastGap                    = 100 * time.Millisecond
	incastQueryTimeout           = 10 * time.Second
	incastMinRTO                 = 200 * time.Millisecond
	incastDefault                = 2 * time.Second // the background's warm-up
	// 000 §5.4 runs CoDel with target 10 µs and interval 240 µs, not
	// §5.2's testbed values.
	incastCoDelTarget, incastCoDelInterval = 10 * time.Microsecond, 240 * time.Microsecond
)

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

// incastRun is one scheme with one count of senders.
type incastRun struct {
	scheme  string // title
	senders int
	// fct are the responses' completion times, from the query's start to
	// the response's last byte at the aggregator; qct the queries'.
	fct, qct []time.Duration
	drops    uint64 // at the bottleneck, during the queries
	busy     float64
	// failed says why the queries stopped, when they did.
	failed string
}

// timeouts returns how many of the run's queries took at least the least
// retransmission timeout: a sender of theirs lost a packet it could only
// resend after a timeout.
func (r *incastRun) timeouts() int {
	n := 0
	for _, q := range r.qct {
		if q >= incastMinRTO {
			n++
		}
	}
	return n
}

func runIncast(ctx context.Context, env Env) (*Report, error) {
	warmup, _ := env.times(incastDefault)
	sc := ecnsharpScaling(demo.DefaultRate)
	ecn, _ := sharpMarkers(sc)
	codel := incastCoDel(sc)
	var runs []*incastRun
	var o demo.Options
	for _, k := range []int64{sharpKTail, sharpKAvg} {
		var err error
		o, err = env.withBed(ctx, demo.Options{
			Classes: []demo.Class{{Flows: 1, Senders: []int{0, 1, 2, 3}}}, // one queue; the demo's flows are not used
			K:       k, Buffer: sharpBuffer, HostDelay: sharpHostDelays(sc),
			ECNSharp: ecn, CoDel: codel,
		}, func(b *bed) error {
			for _, s := range incastSchemes() {
				if s.k != k {
					continue
				}
				for _, n := range incastSenders {
					env.say("ecnsharp-incast: %s, %d senders", s.title, n)
					r, err := runQueries(ctx, b, s, n, warmup)
					if err != nil {
						return fmt.Errorf("%s, %d senders: %w", s.title, n, err)
					}
					env.say("ecnsharp-incast: %s, %d senders: mean QCT %v, %d of %d queries ≥ %v, %d drops %s",
						s.title, n, meanDuration(r.qct).Round(time.Microsecond), r.timeouts(), len(r.qct), incastMinRTO, r.drops, r.failed)
					runs = append(runs, r)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ecnsharp-incast: %w", err)
		}
	}
	return incastReport(env, o, warmup, runs), nil
}

// runQueries starts the switch of s, four long-lived background flows
// (one from each of h1–h4) and n query connections dealt out to h1–h4,
// and after warmup runs incastQueries queries, each answered by all n
// senders at once.
func runQueries(ctx context.Context, b *bed, s incastScheme, n int, warmup time.Duration) (*incastRun, error) {
	r := &incastRun{scheme: s.title, senders: n}
	if err := b.withSwitch(s.scheme, func(sw demo.Switch) error { return r.run(ctx, b, sw, warmup) }); err != nil {
		return nil, err
	}
	return r, nil
}

// run runs the queries of r on the switch sw; a sweep point that stops
// short says why in r.failed and returns no error.
func (r *incastRun) run(ctx context.Context, b *bed, sw demo.Switch, warmup time.Duration) error {
	n := r.senders
	hosts := b.hosts()
	agg := hosts[demo.Bottleneck]
	ln, err := agg.ListenTCP(0)
	if err != nil {
		return err
	}
	dst := netip.AddrPortFrom(agg.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))

	// Every connection opens with its index, 4 bytes: -1 for background.
	var mu sync.Mutex
	conns := make([]net.Conn, n) // the aggregator's ends of the query connections
	var accepted, bg sync.WaitGroup
	bg.Go(func() { // ends when ln closes
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
				bg.Go(func() { defer c.Close(); io.Copy(io.Discard, c) })
				continue
			}
			if int(i) >= n {
				c.Close()
				continue
			}
			mu.Lock()
			conns[i] = c
			mu.Unlock()
			accepted.Done()
		}
	})
	defer func() {
		ln.Close()
		bg.Wait()
	}()
	dial := func(h int, idx int32) (net.Conn, error) {
		c, err := hosts[h].DialTCP(ctx, dst, demo.DSCP(0))
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
	for h := range demo.Bottleneck {
		c, err := dial(h, -1)
		if err != nil {
			return fmt.Errorf("background flow from %s: %w", hosts[h].Name, err)
		}
		stop := context.AfterFunc(bctx, func() { c.Close() })
		senders.Go(func() { defer stop(); io.Copy(c, zeros{}) })
	}
	out := make([]net.Conn, n) // the senders' ends
	accepted.Add(n)
	for i := range n {
		if out[i], err = dial(i%demo.Bottleneck, int32(i)); err != nil {
			r.failed = fmt.Sprintf("stopped: connection %d of %d: %v", i+1, n, err)
			for _, c := range out[:i] {
				c.Close()
			}
			return nil
		}
	}
	defer func() {
		for _, c := range out {
			c.Close()
		}
		mu.Lock()
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		mu.Unlock()
	}()
	if err := waitGroup(ctx, &accepted, 10*time.Second); err != nil {
		r.failed = fmt.Sprintf("stopped: the aggregator accepted fewer than %d connections in 10 s", n)
		return nil
	}
	if err := sleep(ctx, warmup); err != nil {
		return err
	}

	st0 := sw.Stats().Ports[demo.Bottleneck]
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(n), 17)) // every scheme answers the same queries
	buf := make([]byte, incastMaxSize)
	for q := range incastQueries {
		if q > 0 {
			if err := sleep(ctx, incastGap); err != nil {
				return err
			}
		}
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = incastMinSize + rng.IntN(incastMaxSize-incastMinSize+1)
		}
		fct, err := query(ctx, out, conns, sizes, buf)
		if err != nil {
			r.failed = fmt.Sprintf("stopped at query %d: %v", q+1, err)
			break
		}
		r.fct = append(r.fct, fct...)
		r.qct = append(r.qct, slices.Max(fct))
	}
	elapsed := time.Since(start)
	st1 := sw.Stats().Ports[demo.Bottleneck]
	r.busy = demo.PortBusy(st0, st1, b.options().Rate, elapsed)
	r.drops = queueDrops(st0, st1, 0)
	return nil
}

// query has every sender i write sizes[i] bytes at once and returns each
// response's completion time at the aggregator.
func query(ctx context.Context, out, in []net.Conn, sizes []int, buf []byte) ([]time.Duration, error) {
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

// incastReport renders the runs.
func incastReport(env Env, o demo.Options, warmup time.Duration, runs []*incastRun) *Report {
	sc := ecnsharpScaling(o.Rate)
	rep := env.report(ecnsharpIncast(), "ecnsharp-incast: query completion under incast (000 §5.4)")
	rep.Setup = []string{
		fmt.Sprintf("ecnsharp-rtt's testbed: five hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d KB buffer "+
			"and one queue; the switch holds the packets towards h1–h4 so that their base RTTs spread over 70–210 µs scaled. One long-lived "+
			"cubic flow with ECN from each of h1–h4 to h5 holds the scheme's standing queue (000 §5.4 runs background data-mining traffic).",
			rate(o.Rate), o.Buffer>>10),
		fmt.Sprintf("Queries: after %v of warm-up, %d queries %v apart; in each, N persistent TCP connections from h1–h4 (dealt out in turn) "+
			"to an aggregator on h5 each write one response of 3–60 KB, uniform (000 §5.4), all at once. A response completes when the "+
			"aggregator has read its last byte; a query when its last response does. N is %v. The senders are connections, not "+
			"machines: four hosts' TCP stacks share one CPU, so N senders start within the time the CPU takes to write N responses, "+
			"where the paper's N machines start together.",
			warmup, incastQueries, incastGap, incastSenders),
		fmt.Sprintf("Schemes as in ecnsharp-rtt: DCTCP-RED-Tail at K = %d KB, DCTCP-RED-AVG at K = %d KB, CoDel with 000 §5.4's "+
			"target 10 µs and interval 240 µs, scaled (%v, %v), and "+
			"ECN♯ (ins_target %v, pst_target %v, pst_interval %v). A query that took %v or more counts as timed out: Linux TCP's least "+
			"retransmission timeout is %v, and only a packet lost beyond fast retransmit makes a response wait it out.",
			sharpKTail/1000, sharpKAvg/1000, sc.Time(incastCoDelTarget), sc.Time(incastCoDelInterval), sc.Time(sharpInterval), sc.Time(sharpTarget),
			sc.Time(sharpInterval), incastMinRTO, incastMinRTO),
	}
	rep.Scaling = sc.String() + " Response sizes and K stay in bytes, as ecnsharp-rtt keeps K: each is the same multiple of the " +
		"bandwidth-delay product as in the paper. The RTO does not scale: 200 ms is 20 ms of the paper's time."

	get := func(title string, n int) *incastRun {
		for _, r := range runs {
			if r.scheme == title && r.senders == n {
				return r
			}
		}
		return nil
	}
	ss := incastSchemes()
	tail, codel, sharp := ss[0].title, ss[2].title, ss[3].title
	// firstLoss returns the fewest senders at which the scheme dropped or
	// timed out, and whether it ever did.
	firstLoss := func(title string) (int, bool) {
		for _, n := range incastSenders {
			if r := get(title, n); r != nil && (r.drops > 0 || r.timeouts() > 0 || r.failed != "") {
				return n, true
			}
		}
		return 0, false
	}
	lossText := func(title string) string {
		if n, ok := firstLoss(title); ok {
			return fmt.Sprintf("from %d", n)
		}
		return fmt.Sprintf("none up to %d", incastSenders[len(incastSenders)-1])
	}
	busyOf := func(titles ...string) []float64 {
		var b []float64
		for _, t := range titles {
			for _, n := range incastSenders {
				if r := get(t, n); r != nil && len(r.qct) > 0 {
					b = append(b, r.busy)
				}
			}
		}
		return b
	}
	cl, clOK := firstLoss(codel)
	sl, slOK := firstLoss(sharp)
	rep.Claims = append(rep.Claims, Claim{
		Source: "000 Fig. 17", What: "concurrent senders before drops or timeouts, ECN♯ vs CoDel",
		Paper: "losses from 175 vs from 100 (1.75×)", Ours: fmt.Sprintf("%s vs %s", lossText(sharp), lossText(codel)),
		Busy: busyOf(sharp, codel),
		Rule: lossesLater("CoDel", cl, clOK, "ECN♯", sl, slOK),
	})
	if r100t, r100s, r100c := get(tail, 100), get(sharp, 100), get(codel, 100); r100t != nil && r100s != nil && r100c != nil {
		rep.Claims = append(rep.Claims, Claim{
			Source: "000 Fig. 16", What: "drops at the bottleneck with 100 concurrent senders: ECN♯, DCTCP-RED-Tail, CoDel",
			Paper: "0, 0, 125 packets", Ours: fmt.Sprintf("%d, %d, %d packets", r100s.drops, r100t.drops, r100c.drops),
			Busy: []float64{r100s.busy, r100t.busy, r100c.busy},
			Rule: atLeast("CoDel's drops", float64(r100c.drops), 1, "").and(notAbove("ECN♯'s", float64(r100s.drops), float64(r100c.drops), "CoDel's")),
		})
		ms, mt := meanDuration(r100s.qct), meanDuration(r100t.qct)
		rep.Claims = append(rep.Claims, Claim{
			Source: "000 Fig. 17", What: "mean query completion with 100 concurrent senders, ECN♯ vs DCTCP-RED-Tail",
			Paper: "comparable", Ours: fmt.Sprintf("%v vs %v", ms.Round(time.Microsecond), mt.Round(time.Microsecond)),
			Busy: []float64{r100s.busy, r100t.busy},
			Rule: atMostOf("ECN♯", float64(ms), float64(mt), 1.5, "DCTCP-RED-Tail's").given(mt > 0),
		})
	}

	var rows [][]string
	for _, r := range runs {
		fm, fp := meanP99(r.fct)
		qm, qp := meanP99(r.qct)
		state := r.failed
		if state == "" {
			state = "–"
		}
		rows = append(rows, []string{
			r.scheme, fmt.Sprint(r.senders), fmt.Sprintf("%d", len(r.qct)),
			millis(fm), millis(fp), millis(qm), millis(qp), fmt.Sprint(r.timeouts()), fmt.Sprint(r.drops), Busy(r.busy), state,
		})
	}
	rep.Tables = []Table{{
		Title:  "Per scheme and number of concurrent senders",
		Header: []string{"scheme", "senders", "queries", "response FCT mean", "p99", "query completion mean", "p99", "queries ≥ 200 ms", "drops", "busy", "stopped"},
		Rows:   rows,
		Note:   "Drops are the bottleneck port's over the queries, background included. Busy is the bottleneck's over the same window.",
	}}
	rep.Plots = []Plot{{
		File: "qct.png", Caption: "Mean query completion time against the number of concurrent senders.",
		Draw: func(path string) error {
			var lines []Line
			for _, s := range ss {
				var xy plotter.XYs
				for _, n := range incastSenders {
					if r := get(s.title, n); r != nil && len(r.qct) > 0 {
						xy = append(xy, plotter.XY{X: float64(n), Y: meanDuration(r.qct).Seconds() * 1e3})
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
			"long-lived flow per host, and DCTCP is not in this kernel: cubic with ECN stands in for it.",
		fmt.Sprintf("%d queries per scheme and sender count: a p99 of %d queries is their maximum.", incastQueries, incastQueries),
	}
	return rep
}

// lossesLater is 000 Fig. 17's rule: a loses (drops or times out) at
// some number of senders, aAt the fewest, and b only at more or never.
func lossesLater(a string, aAt int, aLost bool, b string, bAt int, bLost bool) Rule {
	return Rule{holds: aLost && (!bLost || bAt > aAt), text: a + " loses at some N, " + b + " only at a larger one or never"}
}
