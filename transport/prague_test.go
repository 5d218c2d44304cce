package transport

import (
	"math"
	"testing"
)

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Prague without RTT independence, by hand: α stays 1 until the first
// mark (no AQM shown yet), then DCTCP's EWMA once per round and its cut
// once per window; unmarked ACKs grow the window also inside a cut's
// window, where DCTCP does not; a loss halves once per window and stops
// growth until its window is acknowledged.
func TestPragueByHand(t *testing.T) {
	c := NewPrague(0)
	c.ssthresh = 0 // congestion avoidance from the start
	// ACK 0 ends the first round, unmarked: no mark seen, α stays 1.
	c.OnAck(Ack{Seq: 0, Next: 10})
	if c.Alpha() != 1 || c.Window() != 10.1 {
		t.Fatalf("after an unmarked first round: α %g, window %g; want 1 (no AQM seen yet), 10.1", c.Alpha(), c.Window())
	}
	w := 10.1
	for s := uint64(1); s < 10; s++ {
		c.OnAck(Ack{Seq: s, Next: 10})
		w += 1 / w
	}
	// ACK 10, marked, ends the round of ACKs 1–10: F = 1/10, so
	// α = 15/16·1 + 1/16·0.1 = 0.94375, and cuts: w·(1 − α/2).
	c.OnAck(Ack{Seq: 10, Next: 20, CE: true})
	w *= 1 - 0.94375/2
	if !within(c.Alpha(), 0.94375, 1e-12) || !within(c.Window(), w, 1e-9) {
		t.Fatalf("after the first mark: α %g, window %g; want 0.94375, %g", c.Alpha(), c.Window(), w)
	}
	// ACK 11, marked, in the same window: no second cut, no growth.
	c.OnAck(Ack{Seq: 11, Next: 20, CE: true})
	// ACK 12, unmarked, still inside the cut's window: +1/w.
	c.OnAck(Ack{Seq: 12, Next: 20})
	w += 1 / w
	// ACK 13 reports a loss inside the cut's window: no second reduction.
	c.OnAck(Ack{Seq: 13, Next: 20, Lost: 1})
	if !within(c.Window(), w, 1e-9) {
		t.Fatalf("inside the cut's window: window %g, want %g", c.Window(), w)
	}
	// ACK 20 ends the round of ACKs 11, 12, 13, 20 (one marked):
	// α = 15/16·0.94375 + 1/16·1/4; its loss halves the window.
	c.OnAck(Ack{Seq: 20, Next: 30, Lost: 1})
	alpha := 15.0/16*0.94375 + 1.0/16*0.25
	w /= 2
	if !within(c.Alpha(), alpha, 1e-12) || !within(c.Window(), w, 1e-9) {
		t.Fatalf("after a loss: α %g, window %g; want %g, %g", c.Alpha(), c.Window(), alpha, w)
	}
	// No growth until the loss's window (up to 30) is acknowledged.
	c.OnAck(Ack{Seq: 21, Next: 30})
	if !within(c.Window(), w, 1e-9) {
		t.Fatalf("inside the loss's window: window %g, want %g", c.Window(), w)
	}
	// ACK 30 ends the round of ACKs 21 and 30, unmarked: α·15/16; growth again.
	c.OnAck(Ack{Seq: 30, Next: 40})
	alpha *= 15.0 / 16
	w += 1 / w
	if !within(c.Alpha(), alpha, 1e-12) || !within(c.Window(), w, 1e-9) {
		t.Fatalf("after the loss's window: α %g, window %g; want %g, %g", c.Alpha(), c.Window(), alpha, w)
	}
	if m, l := c.Reductions(); m != 1 || l != 1 {
		t.Fatalf("reductions %d, %d; want 1 for a mark, 1 for a loss", m, l)
	}
}

// Prague with a virtual RTT of 4 ms on a 1 ms RTT, by hand: a virtual
// round is N = 4 rounds and adds a = 1 ms/(4 ms·4) = 1/16 packet a
// round; α is updated and the window cut at most once per virtual round.
// Rounds here are 10 ACKs, ending on ACKs 0, 10, 20, ….
func TestPragueVirtualRound(t *testing.T) {
	const ms = 1_000_000
	c := NewPrague(4 * ms)
	c.ssthresh = 0
	ack := func(s uint64, ce bool) {
		c.OnAck(Ack{Seq: s, Next: (s/10 + 1) * 10, CE: ce, RTT: ms, BaseRTT: ms / 2})
	}
	// ACK 0 ends the first (one-round) virtual round and sizes the next
	// from the 1 ms RTT; its growth already uses a = 1/16.
	ack(0, false)
	if a, n := c.Increase(); a != 1.0/16 || n != 4 {
		t.Fatalf("a, N = %g, %d; want 1/16, 4", a, n)
	}
	w := 10 + 1.0/16/10
	for s := uint64(1); s < 40; s++ {
		mark := s == 15 || s == 35
		ack(s, mark)
		switch {
		case s == 15: // the first cut, with α = 1: halve
			w /= 2
		case s == 35: // 2 rounds after the cut, in the same virtual round: none
		default:
			w += 1.0 / 16 / w
		}
	}
	if !within(c.Window(), w, 1e-9) || c.Alpha() != 1 {
		t.Fatalf("after 4 rounds: window %g, α %g; want %g, 1 (one cut, α not yet updated)", c.Window(), c.Alpha(), w)
	}
	// ACK 40 ends round 5, and with it the virtual round of rounds 2–5
	// that began after ACK 0: ACKs 1–40, 2 of them marked, so
	// α = 15/16 + 1/16·2/40.
	ack(40, false)
	w += 1.0 / 16 / w
	alpha := 15.0/16 + 1.0/16*2/40
	if !within(c.Alpha(), alpha, 1e-12) {
		t.Fatalf("α %g after the virtual round, want %g", c.Alpha(), alpha)
	}
	// ACK 55, in round 6, comes 4 rounds after the cut's round 2: it
	// cuts, with the new α.
	for s := uint64(41); s <= 55; s++ {
		ack(s, s == 55)
		if s < 55 {
			w += 1.0 / 16 / w
		}
	}
	w *= 1 - alpha/2
	if !within(c.Window(), w, 1e-9) {
		t.Fatalf("window %g after the second cut, want %g", c.Window(), w)
	}
	if m, _ := c.Reductions(); m != 2 {
		t.Fatalf("%d cuts, want 2", m)
	}
}

func TestPragueScale(t *testing.T) {
	for _, c := range []struct {
		r, target int64
		n         uint64
		a         float64
	}{
		{1000, 0, 1, 1},
		{0, 8000, 1, 1},
		{8000, 8000, 1, 1},
		{9000, 8000, 1, 1},
		{1000, 8000, 8, 1.0 / 64},   // (r/T)² when T/r is whole
		{3000, 8000, 3, 3.0 / 24.0}, // N = ⌈8/3⌉ = 3, a = 3/(8·3): N·a = r/T
	} {
		n, a := PragueScale(c.r, c.target)
		if n != c.n || !within(a, c.a, 1e-15) {
			t.Errorf("PragueScale(%d, %d) = %d, %g; want %d, %g", c.r, c.target, n, a, c.n, c.a)
		}
	}
}

// markEvery runs c for rounds rounds of its whole window, with RTT r,
// marking every k-th packet (a marking probability of 1/k), and returns
// its mean window over the second half.
func markEvery(c Controller, r int64, k uint64, rounds int) float64 {
	var seq uint64
	var sum float64
	for i := range rounds {
		start := seq
		seq += uint64(c.Window())
		for s := start; s < seq; s++ {
			c.OnAck(Ack{Seq: s, Next: seq, CE: s%k == k-1, RTT: r, BaseRTT: r})
		}
		if i >= rounds/2 {
			sum += c.Window()
		}
	}
	return sum / float64(rounds-rounds/2)
}

// TestPragueRTTIndependence, in virtual time: at one marking probability
// p = 1/100, flows of 1 ms and 4 ms RTT settle at the same rate W/r with
// a virtual RTT of 8 ms, near 2/(Target·p) = 25 packets/ms; without it
// they settle at the same window, 2/p = 200, and the 1 ms flow runs 4×
// faster, as DCTCP's would.
func TestPragueRTTIndependence(t *testing.T) {
	const ms = 1_000_000
	const k = 100
	rate := func(target, r int64) float64 {
		rounds := int(400 * max(target/r, 1) * 4) // ≥ 400 virtual rounds of α's 1/16 gain
		return markEvery(NewPrague(target), r, k, rounds) / float64(r/ms)
	}
	short, long := rate(8*ms, ms), rate(8*ms, 4*ms)
	if want := 2.0 / 8 * k; math.Abs(short/want-1) > 0.2 || math.Abs(long/short-1) > 0.15 {
		t.Errorf("virtual RTT 8 ms: %.1f and %.1f packets/ms at 1 and 4 ms RTT; want both within 15%% of each other and near %.0f", short, long, want)
	}
	short0, long0 := rate(0, ms), rate(0, 4*ms)
	if math.Abs(short0/long0/4-1) > 0.15 || math.Abs(short0/(2*k)-1) > 0.2 {
		t.Errorf("no virtual RTT: %.1f and %.1f packets/ms at 1 and 4 ms RTT; want a ratio of 4 (windows of %d)", short0, long0, 2*k)
	}
	t.Logf("packets/ms at 1 and 4 ms RTT: %.1f and %.1f with an 8 ms virtual RTT, %.1f and %.1f without", short, long, short0, long0)
}
