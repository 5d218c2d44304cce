package udp

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/timestamp"
	"github.com/ecnswitch/ecnswitch/transport"
)

// run sends cfg's flow through a pipe whose data direction passes through
// filter, and returns the sender and the receiver's view of the flow.
func run(t *testing.T, rc ReceiverConfig, cfg Config, filter func(k int, d *datagram) bool) (*Sender, FlowStats, *Receiver) {
	t.Helper()
	a, b := newPipe(ECT0, NotECT)
	k := 0
	a.filter = func(d *datagram) bool { k++; return filter(k, d) }
	s, err := NewSender(a, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(b, rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var rerr error
	rctx, stop := context.WithCancel(ctx)
	wg.Go(func() { rerr = r.Run(rctx) })
	serr := s.Run(ctx)
	// Copies resent late may still be in the pipe: the receiver takes
	// them before it stops (a read handles its batch before Run looks at
	// its context).
	for len(b.in) > 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	stop()
	wg.Wait()
	if serr != nil || rerr != nil {
		t.Fatalf("sender: %v, receiver: %v", serr, rerr)
	}
	if ctx.Err() != nil {
		t.Fatalf("the flow did not finish: %+v", s.Stats())
	}
	fs := r.Flows()
	if len(fs) != 1 || fs[0].Flow != cfg.Flow {
		t.Fatalf("receiver saw flows %+v, want one, %d", fs, cfg.Flow)
	}
	return s, fs[0], r
}

// account checks that every data datagram the sender sent is accounted
// for at the receiver or in dropped.
func account(t *testing.T, s *Sender, f FlowStats, dropped uint64, cfg Config) {
	t.Helper()
	st := s.Stats()
	if f.Packets != cfg.Packets || f.Bytes != cfg.Packets*uint64(DefaultSize) {
		t.Errorf("delivered %d packets, %d bytes; want %d, %d", f.Packets, f.Bytes, cfg.Packets, cfg.Packets*DefaultSize)
	}
	if got := f.Packets + f.Duplicates + f.OutOfOrder + dropped; got != st.Sent {
		t.Errorf("sent %d = delivered %d + duplicates %d + out of order %d + dropped %d = %d", st.Sent, f.Packets, f.Duplicates, f.OutOfOrder, dropped, got)
	}
	if st.Acked != cfg.Packets || st.Retrans != st.Sent-cfg.Packets {
		t.Errorf("acked %d, resent %d of %d sent; want %d acked, %d resent", st.Acked, st.Retrans, st.Sent, cfg.Packets, st.Sent-cfg.Packets)
	}
}

// receivers are the ACK policies the flow tests run under: an ACK per
// read, and delayed ACKs.
func receivers() map[string]ReceiverConfig {
	return map[string]ReceiverConfig{"per-read": {}, "delayed": {AckDelay: 500 * time.Microsecond}}
}

func TestLossIsRetransmitted(t *testing.T) {
	for name, rc := range receivers() {
		t.Run(name, func(t *testing.T) {
			// A timeout far away: only duplicate ACKs can recover the loss.
			cfg := Config{Flow: 3, CC: transport.KindECNStar, Packets: 400, MinRTO: time.Minute, LogEvery: -1}
			dropped := uint64(0)
			s, f, _ := run(t, rc, cfg, func(k int, d *datagram) bool {
				h, _ := Parse(d.b)
				if h.Seq == 50 && dropped == 0 { // the first send of packet 50
					dropped++
					return false
				}
				return true
			})
			account(t, s, f, dropped, cfg)
			st := s.Stats()
			if dropped != 1 || st.FastRetx != 1 || st.Retrans == 0 {
				t.Errorf("dropped %d; fast retransmits %d, resent %d; want 1, 1, > 0", dropped, st.FastRetx, st.Retrans)
			}
			// Three duplicate ACKs are a loss to ECN*: it halves once.
			if _, loss := s.Controller().Reductions(); loss != 1 {
				t.Errorf("ECN* counted %d loss reductions, want 1", loss)
			}
		})
	}
}

func TestTimeoutIsNotCongestion(t *testing.T) {
	for name, rc := range receivers() {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Flow: 4, CC: transport.KindECNStar, Packets: 30, MinRTO: time.Millisecond, LogEvery: -1}
			dropped := uint64(0)
			s, f, _ := run(t, rc, cfg, func(k int, d *datagram) bool {
				h, _ := Parse(d.b)
				if h.Seq == cfg.Packets-1 && dropped == 0 { // the last packet: no duplicate ACKs follow
					dropped++
					return false
				}
				return true
			})
			account(t, s, f, dropped, cfg)
			st := s.Stats()
			if st.Timeouts == 0 || st.FastRetx != 0 {
				t.Errorf("timeouts %d, fast retransmits %d; want > 0, 0", st.Timeouts, st.FastRetx)
			}
			if c, loss := s.Controller().Reductions(); c != 0 || loss != 0 {
				t.Errorf("a timeout reduced the window: %d congestion, %d loss reductions", c, loss)
			}
		})
	}
}

func TestCEIsEchoedPerPacket(t *testing.T) {
	for name, rc := range receivers() {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Flow: 5, CC: transport.KindDCTCP, Packets: 300, LogEvery: -1}
			marked := map[uint64]bool{}
			s, f, _ := run(t, rc, cfg, func(k int, d *datagram) bool {
				if d.rx.ECN() != ECT0 {
					t.Errorf("data datagram %d left with ECN %d, want ECT(0)", k, d.rx.ECN())
				}
				if k%7 == 0 {
					d.rx.TOS |= CE
					h, _ := Parse(d.b)
					marked[h.Seq] = true
				}
				return true
			})
			account(t, s, f, 0, cfg)
			st := s.Stats()
			want := uint64(len(marked))
			if f.CE != want || st.Marks != want {
				t.Errorf("marked %d; receiver counted %d CE, sender %d echoes", want, f.CE, st.Marks)
			}
			if c, _ := s.Controller().Reductions(); c == 0 {
				t.Error("DCTCP never reduced its window for the echoed marks")
			}
		})
	}
}

// One read's data, acknowledged with ackEvery 4: in-order runs of a flow
// share an ACK carrying their mean one-way delay and count; a change of
// CE, a packet out of order and a duplicate each start an ACK of their own.
func TestAckCoalescing(t *testing.T) {
	a, b := newPipe(ECT0, NotECT)
	type data struct {
		flow uint32
		seq  uint64
		ce   bool
		owd  int64 // t2 − t1, ns
	}
	in := []data{
		{1, 0, false, 1000}, {1, 1, false, 2000}, {2, 0, false, 7000}, {1, 2, false, 6000},
		{1, 3, true, 500}, {1, 4, true, 700},
		{1, 5, false, 100}, {1, 6, false, 200}, {2, 1, false, 9000}, {1, 7, false, 300}, {1, 8, false, 400},
		{1, 9, false, 50},
		{1, 12, false, 10}, // out of order: 10 and 11 are missing
		{1, 3, false, 20},  // a duplicate
	}
	t1 := int64(5_000_000_000) // wraps 32 bits
	for _, d := range in {
		p := make([]byte, HeaderLen)
		(&Header{Type: TypeData, Flow: d.flow, Seq: d.seq, DX: timestamp.Option{Stamp: uint32(t1)}}).Put(p)
		a.filter = func(g *datagram) bool {
			g.rx.Stamp = t1 + d.owd
			if d.ce {
				g.rx.TOS |= CE
			}
			return true
		}
		a.WriteBatch(msgs(p), 0)
	}
	r, err := NewReceiver(b, ReceiverConfig{AckEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }() // one read takes all of them
	type ackWant struct {
		flow     uint32
		seq, cum uint64
		ce       bool
		count    uint16
		owd      uint32
	}
	want := []ackWant{
		{1, 2, 3, false, 3, 3000}, // 0–2, around flow 2's packet
		{2, 1, 2, false, 2, 8000}, // flow 2's 0–1, around flow 1's
		{1, 4, 5, true, 2, 600},   // CE starts an ACK
		{1, 8, 9, false, 4, 250},  // CE ends; 5–8 fill ackEvery
		{1, 9, 10, false, 1, 50},  // 9 starts the next
		{1, 12, 10, false, 1, 10}, // out of order
		{1, 3, 10, false, 1, 20},  // duplicate
	}
	var got []ackWant
	for len(got) < len(want) {
		select {
		case d := <-a.in:
			h, err := Parse(d.b)
			if err != nil || h.Type != TypeAck {
				t.Fatalf("the receiver sent %v (%v), want an ACK", h, err)
			}
			got = append(got, ackWant{h.Flow, h.Seq, h.Cum, h.Flags&FlagCE != 0, h.DX.Count, h.DX.Stamp})
		case <-time.After(10 * time.Second):
			t.Fatalf("ACKs %+v; want %+v", got, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(got, func(x, y ackWant) int { return int(x.flow) - int(y.flow) })
	slices.SortStableFunc(want, func(x, y ackWant) int { return int(x.flow) - int(y.flow) })
	if !slices.Equal(got, want) || len(a.in) != 0 {
		t.Errorf("ACKs (by flow)\n%+v\nwant\n%+v (and %d more)", got, want, len(a.in))
	}
	for _, f := range r.Flows() {
		if w := map[uint32]uint64{1: 6, 2: 1}[f.Flow]; f.Acks != w {
			t.Errorf("flow %d: %d ACKs counted, want %d", f.Flow, f.Acks, w)
		}
	}
}

// Delayed ACKs: the ACK of one packet waits for the flow's next packet
// and covers both; an ACK whose wait ends leaves with the wait in its
// Hold (t3 − t2), which the sender takes out of the RTT.
func TestDelayedAck(t *testing.T) {
	a, b := newPipe(ECT0, NotECT)
	const delay = 200 * time.Millisecond
	r, err := NewReceiver(b, ReceiverConfig{AckDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	send := func(seq uint64) {
		p := make([]byte, HeaderLen)
		(&Header{Type: TypeData, Flow: 1, Seq: seq}).Put(p)
		a.WriteBatch(msgs(p), 0)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
			if fs := r.Flows(); len(fs) == 1 && fs[0].Packets == seq+1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receiver did not take packet %d", seq)
			}
		}
	}
	next := func() Header {
		select {
		case d := <-a.in:
			h, err := Parse(d.b)
			if err != nil {
				t.Fatal(err)
			}
			return h
		case <-time.After(10 * time.Second):
			t.Fatal("no ACK")
		}
		return Header{}
	}
	send(0) // its ACK waits…
	send(1) // …for this one, well within the delay
	if h := next(); h.Seq != 1 || h.Cum != 2 || h.DX.Count != 2 {
		t.Errorf("ACK seq %d cum %d count %d; want one ACK of packets 0–1: 1, 2, 2", h.Seq, h.Cum, h.DX.Count)
	}
	send(2) // no packet follows: its ACK leaves when the delay ends
	if h := next(); h.Seq != 2 || h.DX.Count != 1 || time.Duration(h.DX.Hold) < delay {
		t.Errorf("ACK seq %d count %d hold %v; want 2, 1, ≥ %v", h.Seq, h.DX.Count, time.Duration(h.DX.Hold), delay)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// flush keeps back only ACKs of one in-order unmarked packet whose delay
// runs and that are their flow's latest.
func TestFlushKeepsWaitingAcks(t *testing.T) {
	a, b := newPipe(NotECT, NotECT)
	r, err := NewReceiver(b, ReceiverConfig{AckDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	one := func(flow uint32, seq, cum uint64, ce bool, due int64) ack {
		k := ack{h: Header{Type: TypeAck, Flow: flow, Seq: seq, Cum: cum}, due: due, f: &FlowStats{}, addr: a.addr}
		if ce {
			k.h.Flags = FlagCE
		}
		k.owd.Add(0)
		return k
	}
	two := one(5, 9, 10, false, 100)
	two.owd.Add(0)
	acks := []ack{
		one(1, 3, 4, false, 100), // waits
		one(2, 3, 4, false, 50),  // its delay has ended
		one(3, 3, 4, true, 100),  // marked
		one(4, 7, 4, false, 100), // out of order
		two,                      // covers two
		one(6, 3, 4, false, 100), // not its flow's latest…
		one(6, 5, 4, false, 100), // …behind it, a duplicate ACK
	}
	wms := make([]ipv4.Message, batch)
	for i := range wms {
		wms[i].Buffers = [][]byte{make([]byte, HeaderLen)}
	}
	kept, err := r.flush(wms, acks, make([]ack, 0, batch), 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].h.Flow != 1 {
		t.Fatalf("kept %d ACKs (%+v), want flow 1's", len(kept), kept)
	}
	var sent []uint32
	for len(a.in) > 0 {
		h, _ := Parse((<-a.in).b)
		sent = append(sent, h.Flow)
	}
	if !slices.Equal(sent, []uint32{2, 3, 4, 5, 6, 6}) {
		t.Errorf("sent ACKs of flows %v, want 2, 3, 4, 5, 6, 6", sent)
	}
}

func TestNewReceiverRejectsAckEvery(t *testing.T) {
	a, _ := newPipe(NotECT, NotECT)
	for _, n := range []int{-1, maxAckEvery + 1} {
		if _, err := NewReceiver(a, ReceiverConfig{AckEvery: n}); err == nil {
			t.Errorf("ack every %d: no error", n)
		}
	}
}

func TestMalformedCounted(t *testing.T) {
	a, b := newPipe(ECT0, NotECT)
	r, err := NewReceiver(b, ReceiverConfig{AckEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	ack := make([]byte, HeaderLen)
	(&Header{Type: TypeAck}).Put(ack)
	for _, d := range [][]byte{{1, 2, 3}, make([]byte, HeaderLen), ack} {
		a.WriteBatch(msgs(d), 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.Malformed() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.Malformed(); got != 3 || len(r.Flows()) != 0 {
		t.Errorf("malformed %d, flows %v; want 3 and none", got, r.Flows())
	}
	if len(a.in) != 0 {
		t.Errorf("the receiver answered %d malformed datagrams", len(a.in))
	}
}

func msgs(bs ...[]byte) []ipv4.Message {
	ms := make([]ipv4.Message, len(bs))
	for i, b := range bs {
		ms[i].Buffers = [][]byte{b}
	}
	return ms
}

// The sender's DX path on a hand-worked trace: the receiver's clock is
// 3 s ahead (the OWD wraps 32 bits), the path takes 5 µs each way, the
// receiver holds each ACK 300 ns, and packet 1 waits 20 µs in a queue.
func TestDelaySamples(t *testing.T) {
	a, _ := newPipe(ECT0, NotECT)
	var got []DelaySample
	s, err := NewSender(a, nil, Config{Flow: 1, CC: transport.KindDX, LogEvery: -1,
		OnSample: func(x DelaySample) { got = append(got, x) }})
	if err != nil {
		t.Fatal(err)
	}
	const offset, prop, hold = int64(3e9), int64(5000), int64(300)
	t1 := []int64{1_000_000, 1_012_000, 1_024_000}
	queue := []int64{0, 20_000, 0}
	for _, t1 := range t1 {
		s.sent(1, t1)
	}
	for i := range t1 {
		t2 := t1[i] + prop + queue[i] + offset // on the receiver's clock
		t4 := t2 - offset + hold + prop
		h := Header{Type: TypeAck, Flow: 1, Seq: uint64(i), Cum: uint64(i + 1), DX: timestamp.Option{
			Stamp: uint32(t2) - uint32(t1[i]), Hold: uint32(hold), Count: 1, Flags: timestamp.FlagACK,
		}}
		b := make([]byte, HeaderLen)
		h.Put(b)
		s.ack(b, RX{Stamp: t4, HasStamp: true}, t4+1000)
		if wantRTT := 2*prop + queue[i]; s.lastRTT != wantRTT || s.lastQ != queue[i] {
			t.Errorf("packet %d: RTT %d, queue %d; want %d, %d", i, s.lastRTT, s.lastQ, wantRTT, queue[i])
		}
	}
	if base, _ := s.delay.MinRTT(); base != 2*prop {
		t.Errorf("base RTT %d, want %d", base, 2*prop)
	}
	if st := s.Stats(); st.Acked != 3 || st.Samples != 3 {
		t.Errorf("acked %d, samples %d; want 3, 3", st.Acked, st.Samples)
	}
	// Each ACK was read 1 µs after the kernel stamped it: the host-time
	// RTT keeps that microsecond, the stamped one does not.
	for i, x := range got {
		want := DelaySample{Seq: uint64(i), Packets: 1, Queue: queue[i], RTT: 2*prop + queue[i], HostRTT: 2*prop + queue[i] + 1000}
		if x != want {
			t.Errorf("sample %d = %+v, want %+v", i, x, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d samples reported, want 3", len(got))
	}

	// One ACK covers packets 3 and 4: 3 waited 30 µs, 4 none, and 4's
	// path back was 1 µs faster, a new minimum RTT. The ACK's mean OWD
	// is 15 µs over the base, the queueing it reports; the base stays.
	t1 = []int64{1_036_000, 1_048_000}
	queue = []int64{30_000, 0}
	var mean timestamp.OWDMean
	var t2 int64
	for i := range t1 {
		s.sent(1, t1[i])
		t2 = t1[i] + prop + queue[i] + offset
		mean.Add(uint32(t2) - uint32(t1[i]))
	}
	t4 := t2 - offset + hold + prop - 1000
	h := Header{Type: TypeAck, Flow: 1, Seq: 4, Cum: 5, DX: timestamp.Option{
		Stamp: mean.Mean(), Hold: uint32(hold), Count: 2, Flags: timestamp.FlagACK,
	}}
	b := make([]byte, HeaderLen)
	h.Put(b)
	s.ack(b, RX{Stamp: t4, HasStamp: true}, t4+1000)
	if s.lastQ != 15_000 || s.lastRTT != 2*prop-1000 {
		t.Errorf("packets 3–4: queue %d, RTT %d; want 15000, %d", s.lastQ, s.lastRTT, 2*prop-1000)
	}
	if base, _ := s.delay.MinRTT(); base != 2*prop {
		t.Errorf("an ACK of two packets moved the base RTT to %d, want %d", base, 2*prop)
	}
}
