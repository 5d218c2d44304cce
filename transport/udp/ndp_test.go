package udp

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// pops pops what s lets leave now.
func pops(s *ndpSender) (seqs []uint64, again []bool) {
	for {
		q, a, ok := s.pop()
		if !ok {
			return seqs, again
		}
		seqs, again = append(seqs, q), append(again, a)
	}
}

func equalSeqs(a []uint64, b ...uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNDPSender: the first window leaves unpulled; then one packet a
// pull, NACKed ones first; a lost pull is made up for by the next
// counter, a stale counter gives nothing, a pull with nothing to send is
// lost; a packet ACKed after its NACK is not sent again.
func TestNDPSender(t *testing.T) {
	s := newNDPSender(6, 3, 0)
	if got, _ := pops(s); !equalSeqs(got, 0, 1, 2) || s.ready() {
		t.Fatalf("first window %v (ready %v), want 0 1 2 and no more", got, s.ready())
	}
	s.onAck(0, 10)
	s.onNack(1, 10)
	s.onNack(1, 10) // a second NACK queues it once
	s.onPull(1, 11)
	if got, again := pops(s); !equalSeqs(got, 1) || !again[0] {
		t.Fatalf("pull 1 sent %v (again %v), want 1 again", got, again)
	}
	s.onPull(3, 12) // pull 2 was lost: two packets
	if got, again := pops(s); !equalSeqs(got, 3, 4) || again[0] || again[1] {
		t.Fatalf("pull 3 sent %v (again %v), want new 3 4", got, again)
	}
	s.onPull(2, 13) // stale
	if s.ready() {
		t.Fatal("a stale pull counter gave credit")
	}
	s.onNack(2, 14)
	s.onAck(2, 15) // a copy arrived whole before the pull
	s.onPull(4, 16)
	if got, _ := pops(s); !equalSeqs(got, 5) {
		t.Fatalf("pull 4 sent %v, want 5: 2 was ACKed since its NACK", got)
	}
	s.onPull(5, 17) // nothing left to send
	if got, _ := pops(s); len(got) != 0 || s.idle != 1 || s.credit != 0 {
		t.Fatalf("pull 5 sent %v, idle %d, credit %d; want nothing, 1 idle, none kept", got, s.idle, s.credit)
	}
	for _, q := range []uint64{1, 3, 4, 5} {
		s.onAck(q, 18)
	}
	if !s.done() || s.nacks != 3 || s.pulls != 5 {
		t.Fatalf("done %v, %d NACKs, %d pulls; want done, 3, 5", s.done(), s.nacks, s.pulls)
	}
	s.onAck(99, 19) // never sent: ignored
	if s.nAcked != 6 {
		t.Fatalf("acked %d", s.nAcked)
	}
}

// TestNDPSenderTimeout: with nothing heard for an RTO while packets are
// out with no news of them (neither ACKed nor NACKed), they are queued
// again and one packet leaves unpulled; not before the RTO, which doubles
// until a new ACK, and not once done. NACKed packets wait for their pulls, past the RTO; only after
// ndpStall RTOs of silence does one of them leave unpulled.
func TestNDPSenderTimeout(t *testing.T) {
	const rto = 1000
	s := newNDPSender(6, 2, 0)
	pops(s)         // 0, 1
	s.onAck(0, 100) // heard at 100
	if s.timeout(100+rto-1, rto) || s.deadline(rto) != 100+rto {
		t.Fatalf("fired before the RTO, or deadline %d", s.deadline(rto))
	}
	if !s.timeout(100+rto, rto) || s.timeouts != 1 {
		t.Fatal("did not fire at the RTO")
	}
	if got, again := pops(s); !equalSeqs(got, 1) || !again[0] {
		t.Fatalf("after the timeout %v, want 1 again", got)
	}
	if s.timeout(100+rto+1, rto) || s.timeout(100+2*rto, rto) || s.deadline(rto) != 100+3*rto {
		t.Fatalf("fired again within the doubled RTO, or deadline %d, want %d", s.deadline(rto), 100+3*rto)
	}
	// 2 and 3 NACKed, 4 silent: the RTO queues 4 behind them and lets
	// one packet of the queue leave unpulled, 2; 3 and 4 wait for pulls.
	s.onAck(1, 2000)
	s.onPull(3, 2000)
	pops(s) // 2, 3, 4
	s.onNack(2, 2100)
	s.onNack(3, 2100)
	if s.silent() != 1 || s.deadline(rto) != 2100+rto {
		t.Fatalf("silent %d, deadline %d; want 1, %d", s.silent(), s.deadline(rto), 2100+rto)
	}
	if !s.timeout(2100+rto, rto) {
		t.Fatal("a silent packet did not time out")
	}
	if got, _ := pops(s); !equalSeqs(got, 2) {
		t.Fatalf("after the timeout %v, want 2 alone", got)
	}
	s.onPull(5, 3200)
	if got, _ := pops(s); !equalSeqs(got, 3, 4) {
		t.Fatalf("pulls 4 and 5 sent %v, want 3 4", got)
	}
	// Only NACKed packets missing: no timeout at the RTO, one probe after
	// ndpStall RTOs.
	s.onAck(2, 3300)
	s.onAck(4, 3300)
	s.onNack(3, 3300)
	if s.silent() != 0 || s.deadline(rto) != 3300+ndpStall*rto || s.timeout(3300+rto, rto) {
		t.Fatalf("silent %d, deadline %d: a NACKed packet timed out at the RTO", s.silent(), s.deadline(rto))
	}
	if !s.timeout(3300+ndpStall*rto, rto) {
		t.Fatal("no probe after the stall")
	}
	if got, _ := pops(s); !equalSeqs(got, 3) || s.ready() {
		t.Fatalf("the probe sent %v (ready %v), want 3 alone", got, s.ready())
	}
	// Only an unsent packet left, and its pull lost: a probe after the
	// stall sends it.
	s.onAck(3, 8000)
	if s.timeout(8000+ndpStall*rto-1, rto) || !s.timeout(8000+ndpStall*rto, rto) {
		t.Fatal("no probe for the unsent packet after the stall")
	}
	if got, again := pops(s); !equalSeqs(got, 5) || again[0] {
		t.Fatalf("the probe sent %v, want new 5", got)
	}
	s.onAck(5, 13000)
	if !s.done() || s.timeout(1<<40, rto) {
		t.Fatal("a done sender timed out")
	}
}

// TestNDPReceiver: a whole packet is ACKed, a trimmed header NACKed, each
// arrival queues a pull; the message completes at its last packet's
// stamp; pulls leave one interval apart, at most burst at once after a
// pause, and a completed flow's are dropped; malformed data is counted.
func TestNDPReceiver(t *testing.T) {
	const interval, size = 100, 1000
	r := newNDPReceiver(interval, size+wireOverhead, 2)
	data := func(flow uint32, seq, n uint64) Header { return Header{Type: TypeData, Flow: flow, Seq: seq, Cum: n} }
	for _, c := range []struct {
		h       Header
		trimmed bool
		want    Header
		ok      bool
	}{
		{data(1, 0, 3), false, Header{Type: TypeAck, Flow: 1, Seq: 0, Cum: 1}, true},
		{data(1, 1, 3), true, Header{Type: TypeNack, Flow: 1, Seq: 1, Cum: 1}, true},
		{data(1, 0, 3), true, Header{}, false}, // a stale trimmed copy
		{data(1, 0, 3), false, Header{Type: TypeAck, Flow: 1, Seq: 0, Cum: 1}, true},
		{data(2, 0, 1), false, Header{Type: TypeAck, Flow: 2, Seq: 0, Cum: 1}, true}, // complete at once
	} {
		got, ok := r.onData(c.h, c.trimmed, size, nil, 50)
		if got != c.want || ok != c.ok {
			t.Fatalf("onData(%+v, trimmed %v) = %+v, %v; want %+v, %v", c.h, c.trimmed, got, ok, c.want, c.ok)
		}
	}
	f1, f2 := r.flows[1], r.flows[2]
	if f1.Received != 1 || f1.Trimmed != 2 || f1.Duplicates != 1 || f1.Acks != 2 || f1.Nacks != 1 || f2.Done != 50 || f1.Done != 0 {
		t.Fatalf("flow 1 %+v, flow 2 %+v", f1.NDPFlowStats, f2.NDPFlowStats)
	}
	for _, bad := range []Header{data(3, 0, 0), data(1, 5, 3), data(1, 0, 4)} {
		if _, ok := r.onData(bad, false, size, nil, 60); ok {
			t.Fatalf("malformed %+v answered", bad)
		}
	}
	if r.malformed != 3 {
		t.Fatalf("malformed %d, want 3", r.malformed)
	}
	// Four arrivals of flow 1 queued four pulls (flow 2 completed at its
	// arrival). At t = 1000, after a pause, two leave at once (the
	// bucket), then one every interval.
	var at []int64
	for tt := int64(1000); tt < 2000; tt += 10 {
		for {
			h, _, ok := r.popPull(tt)
			if !ok {
				break
			}
			if h.Type != TypePull || h.Flow != 1 || h.Seq != uint64(len(at)+1) {
				t.Fatalf("pull %+v, want flow 1's number %d", h, len(at)+1)
			}
			at = append(at, tt)
		}
	}
	if len(at) != 4 || at[0] != 1000 || at[1] != 1000 || at[2] != 1000+interval || at[3] != 1000+2*interval {
		t.Fatalf("pulls at %v, want 1000 1000 1100 1200", at)
	}
	// The flow completes; its queued pull is dropped.
	r.onData(data(1, 2, 3), false, size, nil, 3000)
	r.onData(data(1, 1, 3), false, size, nil, 3001)
	if f1.Done != 3001 || f1.Received != 3 || f1.Bytes != 3*size {
		t.Fatalf("flow 1 %+v: want done at 3001 with 3 packets", f1.NDPFlowStats)
	}
	if h, _, ok := r.popPull(5000); ok {
		t.Fatalf("pulled %+v for a complete flow", h)
	}
	if _, ok := r.pullAt(); ok {
		t.Fatal("a pull still queued")
	}
	// With a bucket of 8, pulls leave in groups of 4: the receiver wakes
	// when the fourth is due (fewer when fewer are queued).
	g := newNDPReceiver(interval, size+wireOverhead, 8)
	for i := range 5 {
		g.onData(data(7, uint64(i), 10), true, size, nil, 0)
	}
	g.next = 10_000
	if at, ok := g.pullAt(); !ok || at != 10_000+3*interval {
		t.Fatalf("pullAt = %d, %v; want %d", at, ok, 10_000+3*interval)
	}
	for range 4 {
		if _, _, ok := g.popPull(10_000 + 3*interval); !ok {
			t.Fatal("a pull of the group did not leave")
		}
	}
	if at, _ := g.pullAt(); at != 10_000+4*interval {
		t.Fatalf("the last pull at %d, want %d", at, 10_000+4*interval)
	}
}

// incastModel runs NDP's state machines through a model switch in
// virtual time: n senders, each with a link at the bottleneck's rate,
// send a message of m packets at once to one receiver behind a port of
// rate C whose data queue holds q packets. With trim, what the data
// queue cannot take is trimmed to a header and queued ahead of the data
// (dataplane.Trim); without, it is dropped. Propagation delay d each way.
type incastModel struct {
	n, m, window, q int
	trim            bool
	tx, htx, d, rto int64 // full packet and header times on a link, one-way delay, RTO

	events  eventHeap
	seq     int
	senders []*ndpSender
	free    []int64 // when each sender's link is free
	rcv     *ndpReceiver
	dq, hq  []pkt
	busy    bool
	pulling bool // a pull event is pending

	sent, trims, drops, timeouts uint64
}

type pkt struct {
	flow    int
	seq     uint64
	trimmed bool
}

type event struct {
	t, order int64
	do       func(t int64)
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].order < h[j].order
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (x *incastModel) at(t int64, do func(t int64)) {
	x.seq++
	heap.Push(&x.events, event{t, int64(x.seq), do})
}

// run runs the incast to its end and returns each message's completion
// time at the receiver.
func (x *incastModel) run(t *testing.T) []int64 {
	x.rcv = newNDPReceiver(x.tx, 1538, 1) // tx is a 1538-byte wire frame's time
	for i := range x.n {
		x.senders = append(x.senders, newNDPSender(uint64(x.m), x.window, 0))
		x.free = append(x.free, 0)
		x.pump(i, 0)
		x.at(x.rto, func(t int64) { x.tick(i, t) })
	}
	for x.events.Len() > 0 {
		e := heap.Pop(&x.events).(event)
		if e.t > 200*x.rto*int64(x.m) { // a timeout backs off up to 64 RTOs
			t.Fatal("the incast did not end")
		}
		e.do(e.t)
	}
	var done []int64
	for i := range x.n {
		f := x.rcv.flows[uint32(i)]
		if f == nil || f.Received != uint64(x.m) {
			t.Fatalf("flow %d incomplete: %+v", i, f)
		}
		done = append(done, f.Done)
	}
	return done
}

// pump sends what sender i may send at t, back to back on its link.
func (x *incastModel) pump(i int, t int64) {
	s := x.senders[i]
	for {
		q, _, ok := s.pop()
		if !ok {
			return
		}
		e := max(t, x.free[i])
		x.free[i] = e + x.tx
		x.sent++
		p := pkt{flow: i, seq: q}
		x.at(e+x.tx+x.d, func(t int64) { x.arrive(p, t) })
	}
}

// tick runs sender i's retransmission timer.
func (x *incastModel) tick(i int, t int64) {
	s := x.senders[i]
	if s.done() {
		return
	}
	if s.timeout(t, x.rto) {
		x.timeouts++
		x.pump(i, t)
	}
	x.at(max(s.deadline(x.rto), t+1), func(t int64) { x.tick(i, t) })
}

// arrive queues a packet at the port, trimming or dropping it when the
// data queue is full.
func (x *incastModel) arrive(p pkt, t int64) {
	switch {
	case len(x.dq) < x.q:
		x.dq = append(x.dq, p)
	case x.trim:
		p.trimmed = true
		x.trims++
		x.hq = append(x.hq, p)
	default:
		x.drops++
	}
	if !x.busy {
		x.serve(t)
	}
}

// serve starts the port's next departure: headers first.
func (x *incastModel) serve(t int64) {
	var p pkt
	dur := x.tx
	switch {
	case len(x.hq) > 0:
		p, x.hq, dur = x.hq[0], x.hq[1:], x.htx
	case len(x.dq) > 0:
		p, x.dq = x.dq[0], x.dq[1:]
	default:
		x.busy = false
		return
	}
	x.busy = true
	x.at(t+dur, func(t int64) {
		x.at(t+x.d, func(t int64) { x.deliver(p, t) })
		x.serve(t)
	})
}

// deliver hands a packet to the receiver, which answers at once and
// pulls as its pacer lets it.
func (x *incastModel) deliver(p pkt, t int64) {
	h := Header{Type: TypeData, Flow: uint32(p.flow), Seq: p.seq, Cum: uint64(x.m)}
	size := 1538 - wireOverhead // a full data packet's UDP payload
	if p.trimmed {
		size = 130 - wireOverhead // a trimmed header's: htx's 130 bytes on the wire
	}
	if reply, ok := x.rcv.onData(h, p.trimmed, size, nil, t); ok {
		x.at(t+x.d, func(t int64) { x.control(p.flow, reply, t) })
	}
	x.pull(t)
}

// pull sends the pulls the receiver's pacer lets leave at t, and wakes
// it for the next, once.
func (x *incastModel) pull(t int64) {
	for {
		h, _, ok := x.rcv.popPull(t)
		if !ok {
			break
		}
		x.at(t+x.d, func(t int64) { x.control(int(h.Flow), h, t) })
	}
	if at, ok := x.rcv.pullAt(); ok && !x.pulling {
		x.pulling = true
		x.at(max(at, t+1), func(t int64) { x.pulling = false; x.pull(t) })
	}
}

// control hands sender i an ACK, NACK or PULL.
func (x *incastModel) control(i int, h Header, t int64) {
	s := x.senders[i]
	switch h.Type {
	case TypeAck:
		s.onAck(h.Seq, t)
	case TypeNack:
		s.onNack(h.Seq, t)
	case TypePull:
		s.onPull(h.Seq, t)
	}
	x.pump(i, t)
}

// TestNDPIncast is NDP's incast claim (SIGCOMM 2017, abstract:
// near-optimal completion times, incast included) on the state machines:
// n senders each send 20 packets at once, a first window of 10, into a
// port whose data queue holds 8 (NDP's). With trimming every message
// completes, the last within 5% of the ideal N·M packet times plus the
// headers' time on the port and two round trips; every loss is learnt
// from a header (no timeout), every packet resent was trimmed, and only
// the first windows overflow the queue — also with 128 senders, where a
// sender waits longer than its RTO between pulls: NACKed packets wait for
// their pulls. Without trimming, the same incast waits out
// retransmission timeouts.
func TestNDPIncast(t *testing.T) {
	const m, d = 20, 5_000                      // packets each, ns one way
	tx, htx := int64(12_304), int64((106+24)*8) // a 1538-byte wire frame and a 130-byte header at 1 Gbit/s
	for _, c := range []struct{ n, rto int64 }{{32, 2_000_000}, {128, 1_000_000}} {
		base := func(trim bool) *incastModel {
			return &incastModel{n: int(c.n), m: m, window: 10, q: 8, trim: trim, tx: tx, htx: htx, d: d, rto: c.rto}
		}
		x := base(true)
		last := slices.Max(x.run(t))
		rtt := 2*d + tx
		ideal := c.n*m*tx + int64(x.trims)*htx + 2*rtt
		if float64(last) > 1.05*float64(ideal) || last < c.n*m*tx {
			t.Errorf("%d senders: the last message completed at %d ns; ideal %d (N·M·tx %d + %d headers + 2 RTT)", c.n, last, ideal, c.n*m*tx, x.trims)
		}
		retrans := x.sent - uint64(c.n*m)
		if x.timeouts != 0 || x.trims == 0 || retrans != x.trims || x.drops != 0 {
			t.Errorf("%d senders: %d timeouts, %d trims, %d resent, %d dropped; want none, some, one resent per trim, none", c.n, x.timeouts, x.trims, retrans, x.drops)
		}
		// Only the first windows overflow the queue: after them, pulls
		// (delayed by the headers' time on the link) keep arrivals at C.
		if want := uint64(int(c.n)*x.window - x.q); x.trims != want {
			t.Errorf("%d senders: %d trims, want the first windows' overflow, %d", c.n, x.trims, want)
		}
		t.Logf("%d senders: last completion %.3f ms (ideal %.3f), %d trims", c.n, float64(last)/1e6, float64(ideal)/1e6, x.trims)

		y := base(false)
		lastTail := slices.Max(y.run(t))
		if y.timeouts == 0 || y.drops == 0 || lastTail < y.rto {
			t.Errorf("%d senders, drop-tail: %d timeouts, %d drops, last completion %d ns; want timeouts and a completion past the RTO %d", c.n, y.timeouts, y.drops, lastTail, y.rto)
		}
		t.Logf("%d senders, drop-tail: last completion %.3f ms, %d drops, %d timeouts", c.n, float64(lastTail)/1e6, y.drops, y.timeouts)
	}
}

// TestNDPOverSockets runs NDPSender and NDPReceiver over the in-memory
// pipe, whose data direction trims the first copies of packets 2, 5 and
// 7 to 64 bytes (as a trimming switch would) and loses 7's header: 2 and
// 5 come back by NACK and pull, 7 by a retransmission timeout. Every data
// datagram sent is accounted for: received whole, trimmed, or lost.
func TestNDPOverSockets(t *testing.T) {
	a, b := newPipe(ECT0, NotECT)
	seen := map[uint64]bool{}
	var lost uint64
	a.filter = func(d *datagram) bool {
		h, err := Parse(d.b)
		if err != nil || h.Type != TypeData || seen[h.Seq] {
			return true
		}
		seen[h.Seq] = true
		switch h.Seq {
		case 2, 5, 7:
			d.b = d.b[:64]
			d.rx.TOS = 46 << 2
			if h.Seq == 7 {
				lost++
				return false
			}
		}
		return true
	}
	const packets = 12
	s, err := NewNDPSender(a, nil, NDPConfig{Flow: 9, Packets: packets, Window: 4, RTO: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewNDPReceiver(b, NDPReceiverConfig{Rate: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.Run(rctx) })
	serr := s.Run(ctx)
	stop()
	wg.Wait()
	if serr != nil || rerr != nil || ctx.Err() != nil {
		t.Fatalf("sender: %v, receiver: %v, timed out: %v", serr, rerr, ctx.Err())
	}
	st := s.Stats()
	fs := r.Flows()
	if len(fs) != 1 {
		t.Fatalf("receiver flows %+v", fs)
	}
	f := fs[0]
	if f.Flow != 9 || f.Received != packets || f.Done == 0 || f.Bytes != packets*DefaultSize || f.Trimmed != 2 || f.Nacks != 2 {
		t.Errorf("receiver: %+v; want all %d packets, 2 trimmed and NACKed", f, packets)
	}
	if st.Acked != packets || st.Retrans != 3 || st.Timeouts != 1 || st.Nacks != 2 || st.Done == 0 || st.Malformed != 0 {
		t.Errorf("sender: %+v; want %d acked, 3 resent, 1 timeout, 2 NACKs", st, packets)
	}
	if got := f.Received + f.Duplicates + f.Trimmed + lost; got != st.Sent {
		t.Errorf("sent %d = received %d + duplicates %d + trimmed %d + lost %d = %d", st.Sent, f.Received, f.Duplicates, f.Trimmed, lost, got)
	}
}

// TestNDPConfig: the limits name the key and the range.
func TestNDPConfig(t *testing.T) {
	for _, c := range []NDPConfig{{}, {Packets: 1, Size: 10}, {Packets: 1, Window: -1}, {Packets: 1, Rate: -1}, {Packets: MaxNDPPackets + 1}} {
		if _, err := NewNDPSender(nil, nil, c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	for _, c := range []NDPReceiverConfig{{}, {Rate: 1e9, Size: 10}, {Rate: 1e9, Burst: -1}} {
		if _, err := NewNDPReceiver(nil, c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestReadWaiting: readWaiting takes every datagram waiting, batch after
// batch, though the read deadline has passed (a goroutine that ran late),
// and returns at once when none waits.
func TestReadWaiting(t *testing.T) {
	a, b := newPipe(NotECT, NotECT)
	for i := range 3 {
		d := make([]byte, HeaderLen)
		(&Header{Type: TypeAck, Flow: 1, Seq: uint64(i)}).Put(d)
		if _, err := a.WriteBatch([]ipv4.Message{{Buffers: [][]byte{d}}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	ms := make([]ipv4.Message, 2)
	for i := range ms {
		ms[i].Buffers, ms[i].OOB = [][]byte{make([]byte, 2*HeaderLen)}, make([]byte, controlLen+64)
	}
	var batches []int
	if err := readWaiting(b, ms, func(n int) { batches = append(batches, n) }); err != nil || len(batches) != 2 || batches[0] != 2 || batches[1] != 1 {
		t.Fatalf("readWaiting: %v, batches %v; want 2 then 1", err, batches)
	}
	start := time.Now()
	batches = nil
	if err := readWaiting(b, ms, func(n int) { batches = append(batches, n) }); err != nil || len(batches) != 0 || time.Since(start) > time.Second {
		t.Fatalf("readWaiting of nothing: %v, batches %v, %v", err, batches, time.Since(start))
	}
}

// TestNDPRTO: the receiver echoes a data packet's send stamp in its ACK
// or NACK; the sender's RTO is srtt + 4·rttvar from those echoes (RFC
// 6298), across the stamp's 32-bit wrap, and never below NDPConfig.RTO.
func TestNDPRTO(t *testing.T) {
	r := newNDPReceiver(100, 1000+wireOverhead, 1)
	for seq, trimmed := range []bool{false, true} {
		reply, ok := r.onData(Header{Type: TypeData, Flow: 1, Seq: uint64(seq), Cum: 3, DX: timestamp.Option{Stamp: 0xfffffff0}}, trimmed, 1000, nil, 0)
		if !ok || reply.DX.Stamp != 0xfffffff0 {
			t.Fatalf("trimmed %v: reply %+v does not echo the stamp", trimmed, reply)
		}
	}
	s, err := NewNDPSender(nil, nil, NDPConfig{Packets: 1, RTO: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.rto() != int64(time.Millisecond) {
		t.Fatalf("rto %d before any sample, want the least", s.rto())
	}
	// Sent at 2³² − 16 ns, answered at 2³² + 4 ms − 16: 4 ms across the wrap.
	s.rttSample(0xfffffff0, 1<<32+4_000_000-16)
	if s.srtt != 4_000_000 || s.rto() != 4_000_000+4*2_000_000 {
		t.Fatalf("srtt %d, rto %d; want 4 ms and 12 ms", s.srtt, s.rto())
	}
	for range 50 {
		s.rttSample(0, 100_000) // 100 µs
	}
	if s.rto() != int64(time.Millisecond) {
		t.Fatalf("rto %d after short RTTs, want the least, 1 ms", s.rto())
	}
}
