package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// runScheme runs one scheme: switch up, receivers and flows up, warm-up,
// measurement, flows down, switch down.
func runScheme(ctx context.Context, bed *Bed, name string, say func(string, ...any)) (res SchemeResult, err error) {
	o, hosts := bed.o, bed.Hosts()
	res = SchemeResult{Scheme: name, Title: Title(name), Queues: make([]QueueResult, len(o.Classes))}
	sw, err := bed.Start(name)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, sw.Stop()) }()
	say("switch up on %d AF_XDP ports", len(hosts))
	drops := new(DropTap)
	if tp, ok := sw.(Tapper); ok {
		if err := TapEveryPort(tp, len(hosts), drops); err != nil {
			return res, err
		}
	}

	rcv, err := listen(hosts[bottleneck], len(o.Classes))
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, rcv.close()) }()
	fl, err := connect(ctx, o, hosts, rcv.dst)
	if err != nil {
		return res, err
	}
	run := fl.send(ctx)
	defer run.stop() // on an early return; a no-op after the one below
	say("%d flows up", len(fl.all()))

	w, err := measure(ctx, o, sw, rcv, fl, drops, say)
	if err != nil {
		return res, err
	}
	for q := range fl.byQueue {
		res.Queues[q].MinRTT, res.Queues[q].SRTT, _ = tcpInfo(fl.byQueue[q])
	}
	if err := run.stop(); err != nil {
		return res, err
	}
	if err := rcv.drain(10 * time.Second); err != nil {
		return res, err
	}
	res.fill(o, w)
	res.Series, res.RTTs = w.series, w.rtts
	var qs []string
	for q, qr := range res.Queues {
		qs = append(qs, fmt.Sprintf("queue %d %s (%.1f%%, %d CE marks)", q+1, mbit(qr.Goodput), 100*qr.Share, qr.Marks))
	}
	say("done: %s, port busy %.1f%%; worker busy %.0f%%, asleep %.0f%%",
		strings.Join(qs, ", "), 100*res.Busy, 100*res.Worker.Busy, 100*res.Worker.Sleep)
	say("where the time went: %s", res.Load)
	if n := res.Drops.Total() + res.WarmupDrops.Total(); n > 0 {
		say("drops: warm-up %s; window %s", res.WarmupDrops, res.Drops)
	}
	return res, nil
}

// receivers are the bottleneck host's listeners, one per queue, so that
// each flow's bytes count for its queue.
type receivers struct {
	r   []*bulk.Receiver
	dst []netip.AddrPort
}

// listen starts a receiver for each of n queues on host h.
func listen(h testbed.Host, n int) (*receivers, error) {
	rs := &receivers{r: make([]*bulk.Receiver, n), dst: make([]netip.AddrPort, n)}
	for q := range rs.r {
		ln, err := h.ListenTCP(0)
		if err != nil {
			return nil, errors.Join(err, rs.close())
		}
		rs.r[q] = bulk.Serve(ln)
		rs.dst[q] = netip.AddrPortFrom(h.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))
	}
	return rs, nil
}

// bytes returns the payload bytes each queue's receiver has read.
func (rs *receivers) bytes() []int64 {
	b := make([]int64, len(rs.r))
	for q, r := range rs.r {
		b[q] = r.Bytes()
	}
	return b
}

// drain waits, at most timeout, until every flow the receivers accepted
// has ended: the senders' sockets may still hold data when they close, and
// nothing of one scheme may be in flight when the next one starts.
func (rs *receivers) drain(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !flowsDone(rs.r) {
		if time.Now().After(deadline) {
			return fmt.Errorf("flows did not finish within %d s of their senders closing them", int(timeout.Seconds()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (rs *receivers) close() error {
	var errs []error
	for q, r := range rs.r {
		if r == nil {
			continue
		}
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("receiver of queue %d: %w", q+1, err))
		}
	}
	return errors.Join(errs...)
}

// flows are the demo's TCP connections, by queue and by sending host.
type flows struct {
	byQueue [][]net.Conn
	byHost  [][]net.Conn // the connections of one sending host, which one bulk.Sender drives
}

// connect connects every flow before any of them sends, so that no SYN
// meets a queue another flow has built: a marker drops Not-ECT packets it
// would mark (RED, RFC 3168 §7), and a lost SYN costs a 1 s timeout.
func connect(ctx context.Context, o Options, hosts []testbed.Host, dst []netip.AddrPort) (*flows, error) {
	fl := &flows{byQueue: make([][]net.Conn, len(o.Classes))}
	for q, class := range o.Classes {
		hs := make([]testbed.Host, len(class.Senders))
		for i, h := range class.Senders {
			hs[i] = hosts[h]
		}
		byHost := make([][]net.Conn, len(hs))
		for f := 0; f < class.Flows; f++ {
			c, err := dial(ctx, hs[f%len(hs)], dst[q], DSCP(q), o.CongestionControl, class.Rate)
			if err != nil {
				fl.close()
				return nil, err
			}
			byHost[f%len(hs)] = append(byHost[f%len(hs)], c)
			fl.byQueue[q] = append(fl.byQueue[q], c)
		}
		for _, cs := range byHost {
			if len(cs) > 0 {
				fl.byHost = append(fl.byHost, cs)
			}
		}
	}
	return fl, nil
}

// retransmits returns the segments each queue's flows have retransmitted
// so far (TCP_INFO).
func (fl *flows) retransmits() []uint64 {
	r := make([]uint64, len(fl.byQueue))
	for q, cs := range fl.byQueue {
		_, _, r[q] = tcpInfo(cs)
	}
	return r
}

// all returns every connection.
func (fl *flows) all() []net.Conn {
	var cs []net.Conn
	for _, q := range fl.byQueue {
		cs = append(cs, q...)
	}
	return cs
}

func (fl *flows) close() {
	for _, cs := range fl.byQueue {
		for _, c := range cs {
			c.Close()
		}
	}
}

// sending is the flows' senders at work, one goroutine per sending host.
type sending struct {
	cancel  context.CancelFunc
	results chan error
	pending int
}

// send starts a bulk.Sender per sending host over its connections.
func (fl *flows) send(ctx context.Context) *sending {
	ctx, cancel := context.WithCancel(ctx)
	s := &sending{cancel: cancel, results: make(chan error, len(fl.byHost)), pending: len(fl.byHost)}
	for _, conns := range fl.byHost {
		next := 0
		go func() {
			_, err := bulk.Sender{
				Dial: func(context.Context) (net.Conn, error) {
					c := conns[next]
					next++
					return c, nil
				},
				Flows: len(conns),
			}.Run(ctx)
			s.results <- err
		}()
	}
	return s
}

// stop stops the senders and waits for them, returning their errors.
func (s *sending) stop() error {
	s.cancel()
	var errs []error
	for ; s.pending > 0; s.pending-- {
		errs = append(errs, <-s.results)
	}
	return errors.Join(errs...)
}

// window is what the measurement saw at its two ends.
type window struct {
	bytes0, bytes1 []int64 // receivers' bytes per queue
	port0, port1   dataplane.PortStats
	wrk0, wrk1     dataplane.WorkerStats
	retx0, retx1   []uint64 // segments each queue's flows had retransmitted
	start, end     time.Time
	series         []Sample          // every o.Sample, if set
	rtts           [][]time.Duration // the flows' smoothed RTTs, every o.Sample
	load           Load              // the machine over the window
	drops0, drops1 Drops             // the switch's drops at the window's ends
}

// measure warms the flows up, then measures for o.Duration, printing the
// last second's goodput as it goes.
func measure(ctx context.Context, o Options, sw Switch, rcv *receivers, fl *flows, drops *DropTap, say func(string, ...any)) (window, error) {
	var w window
	p := progress{rcv: rcv, fl: fl, sw: sw, say: say, start: time.Now(), lastBytes: make([]int64, len(rcv.r))}
	p.last = p.start
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	if err := p.wait(ctx, tick.C, o.Warmup, "warm-up"); err != nil {
		return w, err
	}
	w.bytes0, w.retx0 = rcv.bytes(), fl.retransmits()
	sw.ResetSojourn() // delays describe the window, not the warm-up
	st := sw.Stats()
	w.drops0 = drops.Drops()
	meter := StartMeter(st, fl.all())
	w.port0, w.start = st.Ports[bottleneck], time.Now()
	if len(st.Workers) > 0 {
		w.wrk0 = st.Workers[0]
	}
	if o.Sample > 0 {
		p.sampling = &w
		p.sampleAt, p.sampleBytes = w.start, w.bytes0
		sample := time.NewTicker(o.Sample)
		defer sample.Stop()
		p.sample = sample.C
	}
	if err := p.wait(ctx, tick.C, o.Duration, ""); err != nil {
		return w, err
	}
	w.bytes1, w.retx1 = rcv.bytes(), fl.retransmits()
	st = sw.Stats()
	w.port1, w.end = st.Ports[bottleneck], time.Now()
	w.drops1 = drops.Drops()
	w.load = meter.Stop(st, PortBusy(w.port0, w.port1, o.Rate, w.end.Sub(w.start)))
	if len(st.Workers) > 0 {
		w.wrk1 = st.Workers[0]
	}
	return w, nil
}

// progress prints each queue's goodput over the last second and, while
// sampling is set, records the samples of Options.Sample in it.
type progress struct {
	rcv       *receivers
	fl        *flows
	sw        Switch
	say       func(string, ...any)
	start     time.Time
	last      time.Time
	lastBytes []int64

	sampling    *window
	sample      <-chan time.Time
	sampleAt    time.Time
	sampleBytes []int64
}

// record adds a sample of the goodput since the last one and of the
// flows' smoothed RTTs to p.sampling.
func (p *progress) record(now time.Time) {
	w := p.sampling
	b := p.rcv.bytes()
	dt := now.Sub(p.sampleAt).Seconds()
	s := Sample{At: now.Sub(w.start), Goodput: make([]float64, len(b)), PortBytes: p.sw.Stats().Ports[bottleneck].Bytes}
	if w.rtts == nil {
		w.rtts = make([][]time.Duration, len(b))
	}
	for q := range b {
		s.Goodput[q] = float64(b[q]-p.sampleBytes[q]) * 8 / dt
		w.rtts[q] = appendRTTs(w.rtts[q], p.fl.byQueue[q])
	}
	w.series = append(w.series, s)
	p.sampleAt, p.sampleBytes = now, b
}

func (p *progress) report(phase string) {
	now := time.Now()
	dt := now.Sub(p.last).Seconds()
	b := p.rcv.bytes()
	var line strings.Builder
	for q := range b {
		fmt.Fprintf(&line, "  queue %d %s", q+1, mbit(float64(b[q]-p.lastBytes[q])*8/dt))
	}
	p.lastBytes, p.last = b, now
	p.say("%5.1fs %-7s%s", now.Sub(p.start).Seconds(), phase, line.String())
}

// wait waits d, reporting at every tick that is not within 100 ms of the end.
func (p *progress) wait(ctx context.Context, tick <-chan time.Time, d time.Duration, phase string) error {
	end := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-tick:
			if time.Until(end) > 100*time.Millisecond {
				p.report(phase)
			}
		case now := <-p.sample:
			p.record(now)
		}
	}
}

// fill computes the scheme's result from the window.
func (res *SchemeResult) fill(o Options, w window) {
	res.Elapsed = w.end.Sub(w.start)
	s0, s1 := w.port0, w.port1
	res.Busy = PortBusy(s0, s1, o.Rate, res.Elapsed)
	res.Peak = s1.Peak
	res.Load = w.load
	res.Load.Busy = res.Busy
	res.WarmupDrops, res.Drops = w.drops0, w.drops1.Sub(w.drops0)
	busy, spin, sleep := float64(w.wrk1.Busy-w.wrk0.Busy), float64(w.wrk1.Spin-w.wrk0.Spin), float64(w.wrk1.Sleep-w.wrk0.Sleep)
	if t := busy + spin + sleep; t > 0 {
		res.Worker.Busy, res.Worker.Spin, res.Worker.Sleep = busy/t, spin/t, sleep/t
	}
	var total float64
	for q := range w.bytes1 {
		total += float64(w.bytes1[q] - w.bytes0[q])
	}
	for q := range res.Queues {
		qr := &res.Queues[q]
		got := w.bytes1[q] - w.bytes0[q]
		qr.Flows = o.Classes[q].Flows
		qr.Goodput = float64(got) * 8 / res.Elapsed.Seconds()
		if total > 0 {
			qr.Share = float64(got) / total
		}
		a, b := s0.Queues[q], s1.Queues[q]
		qr.Marks = b.MarkedEnq + b.MarkedDeq - a.MarkedEnq - a.MarkedDeq
		for r, n := range b.Drops {
			qr.Drops += n - a.Drops[r]
		}
		if n := b.Sojourn.Count - a.Sojourn.Count; n > 0 {
			sum := float64(b.Sojourn.Mean)*float64(b.Sojourn.Count) - float64(a.Sojourn.Mean)*float64(a.Sojourn.Count)
			qr.MeanDelay = time.Duration(max(sum, 0) / float64(n))
		}
		qr.P99Delay = time.Duration(b.Sojourn.P99)
		qr.Retrans = w.retx1[q] - min(w.retx0[q], w.retx1[q])
	}
}
