package transport

import (
	"math"
	"testing"
)

// hpccFlow is HPCC with T = 100 µs, W_init = 10 packets, W_AI = 0.5.
func hpccFlow(t *testing.T) *HPCC {
	t.Helper()
	h, err := NewHPCC(HPCCConfig{BaseRTT: 100_000, Init: 10, AI: 0.5, Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// gbit is a hop of a 1 Gbit/s link: q bytes queued, tx bytes sent, at ts.
func gbit(q int64, tx uint64, ts int64) Hop { return Hop{QLen: q, TxBytes: tx, TS: ts, Rate: 1e9} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestHPCCAlgorithm1 works Algorithm 1 by hand on one hop at 1 Gbit/s
// with T = 100 µs, so that B·T = 12 500 bytes.
func TestHPCCAlgorithm1(t *testing.T) {
	h := hpccFlow(t)
	// The first ACK only keeps its records; the reference round ends
	// with the ACK of packet 20, the next to be sent.
	h.OnAck(Ack{Seq: 0, Next: 20, Hops: []Hop{gbit(25_000, 0, 0)}})
	if h.Window() != 10 || h.U() != 0 || h.Updates() != 0 {
		t.Fatalf("after the first ACK: W %g, U %g, %d updates; want 10, 0, 0", h.Window(), h.U(), h.Updates())
	}

	// 100 µs later (τ = T): 12 500 bytes sent (txRate = B) and
	// min(12 500, 25 000) queued, one B·T: u = 1 + 1 = 2, and U = u.
	// Packet 20 ends the round: MI, W = W^c/(U/η) + W_AI
	// = 10·0.95/2 + 0.5 = 5.25, which becomes W^c; incStage 0.
	h.OnAck(Ack{Seq: 20, Next: 30, Hops: []Hop{gbit(12_500, 12_500, 100_000)}})
	if !near(h.U(), 2) || !near(h.Window(), 5.25) || !near(h.Reference(), 5.25) || h.Stage() != 0 {
		t.Fatalf("U %g, W %g, W^c %g, stage %d; want 2, 5.25, 5.25, 0", h.U(), h.Window(), h.Reference(), h.Stage())
	}
	if c, l := h.Reductions(); c != 1 || l != 0 {
		t.Fatalf("reductions %d, %d; want 1, 0", c, l)
	}

	// 25 µs later (τ = T/4) an ACK within the round (packet 25 < 30):
	// 1 250 bytes sent (txRate = 0.4 Gbit/s), min(0, 12 500) queued:
	// u = 0.4, U = 0.75·2 + 0.25·0.4 = 1.6. It reacts at once from the
	// same W^c, W = 5.25·0.95/1.6 + 0.5, but leaves W^c and incStage.
	h.OnAck(Ack{Seq: 25, Next: 31, Hops: []Hop{gbit(0, 13_750, 125_000)}})
	if w := 5.25*0.95/1.6 + 0.5; !near(h.U(), 1.6) || !near(h.Window(), w) || !near(h.Reference(), 5.25) || h.Stage() != 0 || h.Updates() != 1 {
		t.Fatalf("U %g, W %g, W^c %g, stage %d, updates %d; want 1.6, %g, 5.25, 0, 1", h.U(), h.Window(), h.Reference(), h.Stage(), h.Updates(), w)
	}

	// A quiet link for long (τ > T, clamped): u = 0.5 (half the rate,
	// no queue) replaces U; below η, so the next round ends in additive
	// increase: W = W^c + W_AI, incStage 1.
	h.OnAck(Ack{Seq: 30, Next: 40, Hops: []Hop{gbit(0, 13_750+31_250, 625_000)}})
	if !near(h.U(), 0.5) || !near(h.Window(), 5.75) || h.Stage() != 1 {
		t.Fatalf("U %g, W %g, stage %d; want 0.5, 5.75, 1", h.U(), h.Window(), h.Stage())
	}
	// Four more rounds of additive increase, at the same utilisation …
	ts, tx := int64(625_000), uint64(45_000)
	round := func(seq uint64) {
		ts += 100_000
		tx += 6_250 // 0.5 Gbit/s over T
		h.OnAck(Ack{Seq: seq, Next: seq + 10, Hops: []Hop{gbit(0, tx, ts)}})
	}
	for i := range 4 {
		round(40 + 10*uint64(i))
	}
	if !near(h.Window(), 5.75+4*0.5) || h.Stage() != HPCCMaxStage {
		t.Fatalf("after 5 additive rounds: W %g, stage %d; want %g, %d", h.Window(), h.Stage(), 5.75+2, HPCCMaxStage)
	}
	// … then incStage = maxStage: multiplicative increase though U < η,
	// W = 7.75/(0.5/0.95) + 0.5 = 15.225, and incStage back to 0.
	round(80)
	if w := 7.75/(0.5/0.95) + 0.5; !near(h.Window(), w) || h.Stage() != 0 {
		t.Fatalf("W %g, stage %d; want %g, 0", h.Window(), h.Stage(), w)
	}
}

// TestHPCCMostLoadedHop: of several hops, the one with the largest u sets
// U, and its Δts is τ.
func TestHPCCMostLoadedHop(t *testing.T) {
	h := hpccFlow(t)
	h.OnAck(Ack{Seq: 0, Next: 10, Hops: []Hop{gbit(0, 0, 0), {QLen: 50_000, Rate: 10e9}, gbit(0, 0, 0)}})
	// Hop 1: idle. Hop 2: 10 Gbit/s, 62 500 bytes in 50 µs (u = 1) plus
	// min(50 000, 40 000) queued over B·T = 125 000 bytes (0.32): 1.32.
	// Hop 3: 1 Gbit/s, 5 000 bytes in 80 µs (0.5), no queue. τ = 50 µs.
	h.OnAck(Ack{Seq: 10, Next: 20, Hops: []Hop{gbit(0, 0, 100_000), {QLen: 40_000, TxBytes: 62_500, TS: 50_000, Rate: 10e9}, gbit(0, 5_000, 80_000)}})
	if !near(h.U(), 0.5*1.32) {
		t.Fatalf("U %g, want %g (u = 1.32 from hop 2, τ = T/2)", h.U(), 0.5*1.32)
	}
}

// TestHPCCKeepsRecordsOnly: the first ACK, and an ACK of a path with
// another number of hops, only keep their records; ACKs without records
// change nothing; a hop whose clock has not moved says nothing.
func TestHPCCKeepsRecordsOnly(t *testing.T) {
	h := hpccFlow(t)
	h.OnAck(Ack{Seq: 0, Next: 5})
	h.OnAck(Ack{Seq: 1, Next: 5, Hops: []Hop{gbit(0, 0, 0)}})
	h.OnAck(Ack{Seq: 6, Next: 9, Hops: []Hop{gbit(0, 0, 0), gbit(0, 0, 0)}}) // now two hops
	h.OnAck(Ack{Seq: 7, Next: 9, Hops: []Hop{gbit(99_999, 0, 0), gbit(99_999, 9_999, 0)}})
	if h.Window() != 10 || h.U() != 0 {
		t.Fatalf("W %g, U %g; want W_init and U = 0 before any measurement", h.Window(), h.U())
	}
	// Stage 0, U 0: one additive step when the round (from Next 9) ends.
	h.OnAck(Ack{Seq: 9, Next: 20, Hops: []Hop{gbit(0, 0, 1000), gbit(0, 0, 1000)}})
	if h.Updates() != 1 || !near(h.Window(), 10.5) {
		t.Fatalf("updates %d, W %g; want 1, 10.5", h.Updates(), h.Window())
	}
}

// TestHPCCBounds: W stays within [MinWindow, Max]: U = 0 after an MI step
// asks for an unbounded window.
func TestHPCCBounds(t *testing.T) {
	h := hpccFlow(t)
	h.OnAck(Ack{Seq: 0, Next: 1, Hops: []Hop{gbit(1e9, 0, 0)}})
	h.OnAck(Ack{Seq: 1, Next: 2, Hops: []Hop{gbit(1e9, 1e9, 100_000)}}) // u enormous
	if h.Window() != MinWindow {
		t.Fatalf("W %g, want the floor %g", h.Window(), MinWindow)
	}
	h2 := hpccFlow(t)
	h2.incStage = HPCCMaxStage
	h2.OnAck(Ack{Seq: 0, Next: 1, Hops: []Hop{gbit(0, 0, 0)}})
	h2.OnAck(Ack{Seq: 1, Next: 2, Hops: []Hop{gbit(0, 0, 100_000)}}) // U = 0, MI
	if h2.Window() != 100 {
		t.Fatalf("W %g, want the cap 100", h2.Window())
	}
	if r := h2.PaceRate(1250); r != 100*1250*8e9/100_000 {
		t.Fatalf("pace %d bit/s, want W·size·8/T", r)
	}
}

func TestNewHPCCDefaultsAndErrors(t *testing.T) {
	h, err := NewHPCC(HPCCConfig{BaseRTT: 1000, Init: 32})
	if err != nil {
		t.Fatal(err)
	}
	if c := h.Config(); c.Eta != 0.95 || c.MaxStage != 5 || !near(c.AI, 32*0.05/16) || c.Max != 32 {
		t.Fatalf("defaults %+v", c)
	}
	for _, c := range []HPCCConfig{
		{Init: 10},
		{BaseRTT: 1, Init: 1},
		{BaseRTT: 1, Init: 10, Eta: 1.5},
		{BaseRTT: 1, Init: 10, MaxStage: -1},
		{BaseRTT: 1, Init: 10, AI: -1},
		{BaseRTT: 1, Init: 10, Max: 5},
	} {
		if _, err := NewHPCC(c); err == nil {
			t.Errorf("NewHPCC(%+v) accepted", c)
		}
	}
	if _, err := New(KindHPCC, 0); err == nil {
		t.Error("New(KindHPCC) built HPCC without its parameters")
	}
	if k, err := ParseKind("hpcc"); err != nil || k != KindHPCC || k.String() != "hpcc" {
		t.Errorf("ParseKind(hpcc) = %v, %v", k, err)
	}
}
