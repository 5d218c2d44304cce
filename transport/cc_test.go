package transport

import (
	"math"
	"testing"
)

// Eq. 2–8 of 004 §IV-B: N synchronised flows fill a link of C·R packets
// and each adds one, so each holds W* = (C·R + N)/N and sees the worst
// case queue N·D. The cut 1 − Q/V with V = R·W*/(W* − 1) must bring the
// packets in flight back to exactly C·R (Eq. 6).
func TestDXFactorDrainsExactlyTheQueue(t *testing.T) {
	const d = 12_000 // ns: one packet's transmission time (1500 B at 1 Gbit/s)
	for _, c := range []struct{ bdp, n int }{{100, 4}, {20, 2}, {40, 10}, {200, 1}} {
		w := float64(c.bdp+c.n) / float64(c.n)
		r := int64(c.bdp) * d // base RTT: the BDP takes R to send
		q := int64(c.n) * d
		got := float64(c.n) * w * DXFactor(q, r, w)
		if math.Abs(got-float64(c.bdp)) > 1e-9 {
			t.Errorf("C·R = %d, N = %d: %d flows × W* %.3f × factor = %.6f packets in flight, want %d (Eq. 6)",
				c.bdp, c.n, c.n, w, got, c.bdp)
		}
	}
	if f := DXFactor(5, 100, 1); f != 1 {
		t.Errorf("factor at W* = 1: %g, want 1 (V unbounded)", f)
	}
	if f := DXFactor(1000, 100, 2); f != 0 {
		t.Errorf("factor with Q ≥ V: %g, want 0", f)
	}
}

// bottleneck is a virtual-time trace of one flow alone on a link whose
// pipe holds bdp packets: a round's packets each wait behind what the
// window puts beyond the pipe, (W − bdp)·D.
type bottleneck struct {
	bdp int
	d   int64
	seq uint64
}

// round sends floor(cwnd) packets and hands c their ACKs, and returns the
// queueing delay they carried.
func (b *bottleneck) round(c Controller) int64 {
	n := int(c.Window())
	q := max(int64(n-b.bdp), 0) * b.d
	start := b.seq
	b.seq += uint64(n)
	for s := start; s < b.seq; s++ {
		c.OnAck(Ack{Seq: s, Next: b.seq, Queue: q, BaseRTT: int64(b.bdp) * b.d})
	}
	return q
}

// TestDXWindowLaw: on the trace DX leaves slow start at the first queue
// and then holds the pipe full with at most one packet queued: W settles
// on bdp ↔ bdp + 1, the steady state of 004 §IV-C with n = 1.
//
// Rounds end on the ACK of the first packet sent after the previous end,
// one ACK into the harness's round. By hand: slow start sends 10, 20 and
// 40 packets; the round ending on the first ACK of the 40 saw nineteen
// zeros and one 20·D, Q = D, so W ← 40·(1 − D·39/(R·40)) = 38.05 with
// R = 20·D. The next round saw ≈ 20·D, Q ≈ R: the window falls to the
// minimum and grows back by one a round.
func TestDXWindowLaw(t *testing.T) {
	const d = 12_000
	b := &bottleneck{bdp: 20, d: d}
	dx := NewDX(0)
	var ws []int
	var qs []int64
	for range 60 {
		ws = append(ws, int(dx.Window()))
		qs = append(qs, b.round(dx))
	}
	if ws[0] != 10 || ws[1] != 20 || ws[2] != 40 || ws[3] != 38 || ws[4] != 2 {
		t.Fatalf("windows %v: want 10, 20, 40, 38, 2", ws[:5])
	}
	for i := 30; i < len(ws); i++ {
		if ws[i] < 20 || ws[i] > 21 || qs[i] > d {
			t.Fatalf("round %d: window %d, queue %d ns; want 20 or 21 and at most one packet (%d ns); windows %v",
				i, ws[i], qs[i], d, ws)
		}
	}
	if cuts, loss := dx.Reductions(); cuts < 10 || loss != 0 {
		t.Fatalf("reductions %d, %d: want a cut in every round that queued, none for loss", cuts, loss)
	}
}

// One cut by hand: a round of 30 packets whose ACKs carry 24 µs of
// queueing on average (12 and 36 µs alternately), base RTT 240 µs.
// V = 240·30/29 µs, so cwnd ← 30·(1 − 24·29/(240·30)) = 27.1.
func TestDXOneCut(t *testing.T) {
	dx := NewDX(1000)
	dx.slow, dx.cwnd, dx.roundEnd = false, 30, 29
	for s := uint64(0); s < 30; s++ {
		q := int64(12_000)
		if s%2 == 1 {
			q = 36_000
		}
		dx.OnAck(Ack{Seq: s, Next: 30, Queue: q, BaseRTT: 240_000})
	}
	if math.Abs(dx.Window()-27.1) > 1e-9 || dx.LastQ() != 24_000 {
		t.Fatalf("window %.6f after Q = %d; want 27.1 after 24000", dx.Window(), dx.LastQ())
	}
	// Below the headroom a round is no congestion: +1.
	for s := uint64(30); s < 57; s++ {
		dx.OnAck(Ack{Seq: s, Next: 57, Queue: 999, BaseRTT: 240_000})
	}
	if math.Abs(dx.Window()-28.1) > 1e-9 {
		t.Fatalf("window %.6f after a round under the headroom; want 28.1", dx.Window())
	}
	// A loss is not congestion.
	dx.OnAck(Ack{Seq: 57, Next: 90, Lost: 3, BaseRTT: 240_000})
	if math.Abs(dx.Window()-29.1) > 1e-9 {
		t.Fatalf("window %.6f after a lossy ACK; want 29.1 (no cut, the round's +1)", dx.Window())
	}
}

func TestDCTCP(t *testing.T) {
	c := NewDCTCP()
	c.ssthresh = 0 // congestion avoidance from the start
	// One window of unmarked ACKs: α ← 15/16·1.
	c.OnAck(Ack{Seq: 0, Next: 10})
	if math.Abs(c.Alpha()-15.0/16) > 1e-12 {
		t.Fatalf("α = %g after an unmarked window, want 15/16", c.Alpha())
	}
	w := c.Window()
	for s := uint64(1); s < 10; s++ {
		c.OnAck(Ack{Seq: s, Next: 10})
	}
	// Window ends with ACK 10, marked: F = 1/10.
	c.OnAck(Ack{Seq: 10, Next: 20, CE: true})
	alpha := (1-DCTCPGain)*15.0/16 + DCTCPGain*0.1
	if math.Abs(c.Alpha()-alpha) > 1e-12 {
		t.Fatalf("α = %g, want %g", c.Alpha(), alpha)
	}
	grown := w
	for range 9 {
		grown += 1 / grown
	}
	want := grown * (1 - alpha/2)
	if math.Abs(c.Window()-want) > 1e-9 {
		t.Fatalf("window %g, want %g = %g·(1 − α/2)", c.Window(), want, grown)
	}
	// A second mark in the same window does not cut again.
	c.OnAck(Ack{Seq: 11, Next: 20, CE: true})
	if math.Abs(c.Window()-want) > 1e-9 {
		t.Fatalf("second mark in a window cut again: %g", c.Window())
	}
}

func TestECNStar(t *testing.T) {
	c := NewECNStar()
	c.OnAck(Ack{Seq: 0, Next: 10})
	if c.Window() != 11 {
		t.Fatalf("slow start: %g, want 11", c.Window())
	}
	c.OnAck(Ack{Seq: 1, Next: 12, CE: true})
	c.OnAck(Ack{Seq: 2, Next: 12, CE: true})
	if c.Window() != 5.5 {
		t.Fatalf("after two marks in one window: %g, want 5.5 (one halving)", c.Window())
	}
	c.OnAck(Ack{Seq: 12, Next: 20, Lost: 1})
	if m, l := c.Reductions(); c.Window() != 2.75 || m != 1 || l != 1 {
		t.Fatalf("after a loss: %g, reductions %d, %d; want 2.75, 1, 1", c.Window(), m, l)
	}
}

// An ACK covering n packets (a coalescing receiver, 004 §V-A) counts as
// n ACKs of the same feedback: the same α, the same Q, the same growth.
func TestCoalescedAcks(t *testing.T) {
	// DCTCP: one observation window of 10 packets, 3 of them marked.
	// α's fraction is F = 3/10 whether the marks come in 10 ACKs or 2.
	per, co := NewDCTCP(), NewDCTCP()
	per.winEnd, co.winEnd = 9, 9
	for s := uint64(0); s < 10; s++ {
		per.OnAck(Ack{Seq: s, Next: 10, CE: s >= 7})
	}
	co.OnAck(Ack{Seq: 6, Next: 10, Packets: 7})
	co.OnAck(Ack{Seq: 9, Next: 10, CE: true, Packets: 3})
	alpha := (1-DCTCPGain)*1 + DCTCPGain*0.3
	if math.Abs(per.Alpha()-alpha) > 1e-12 || math.Abs(co.Alpha()-alpha) > 1e-12 {
		t.Errorf("α: per-packet ACKs %g, coalesced %g; want %g (F = 3/10)", per.Alpha(), co.Alpha(), alpha)
	}

	// Slow start grows by the packets acknowledged, not the ACKs.
	e := NewECNStar()
	e.OnAck(Ack{Seq: 3, Next: 10, Packets: 4})
	if e.Window() != InitWindow+4 {
		t.Errorf("ECN* after an ACK of 4 packets in slow start: %g, want %g", e.Window(), InitWindow+4)
	}
	e.ssthresh = 0
	e.OnAck(Ack{Seq: 5, Next: 10, Packets: 2})
	if want := (InitWindow + 4) + 2/(InitWindow+4); math.Abs(e.Window()-want) > 1e-12 {
		t.Errorf("ECN* in congestion avoidance after 2 packets: %g, want %g", e.Window(), want)
	}

	// DX: Q is the mean over packets. 3 packets at 12 µs and 1 at 60 µs
	// give Q = 24 µs, not the ACKs' mean of 36 µs; then the cut of
	// TestDXOneCut: 30·(1 − 24·29/(240·30)) = 27.1.
	dx := NewDX(1000)
	dx.slow, dx.cwnd, dx.roundEnd = false, 30, 3
	dx.OnAck(Ack{Seq: 2, Next: 30, Queue: 12_000, BaseRTT: 240_000, Packets: 3})
	dx.OnAck(Ack{Seq: 3, Next: 30, Queue: 60_000, BaseRTT: 240_000})
	if dx.LastQ() != 24_000 || math.Abs(dx.Window()-27.1) > 1e-9 {
		t.Errorf("DX: Q = %d, window %.6f; want 24000, 27.1", dx.LastQ(), dx.Window())
	}
	slow := NewDX(1000)
	slow.OnAck(Ack{Seq: 4, Next: 10, Packets: 5})
	if slow.Window() != InitWindow+5 {
		t.Errorf("DX slow start after an ACK of 5 packets: %g, want %g", slow.Window(), InitWindow+5)
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range []Kind{KindECNStar, KindDCTCP, KindDX, KindPrague} {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if k, err := ParseKind("ecnstar"); err != nil || k != KindECNStar {
		t.Errorf("ParseKind(ecnstar) = %v, %v", k, err)
	}
	if _, err := ParseKind("bbr"); err == nil {
		t.Error("ParseKind(bbr): no error")
	}
}

func TestNew(t *testing.T) {
	for _, k := range []Kind{KindECNStar, KindDCTCP, KindDX, KindPrague} {
		c, err := New(k, 5000)
		if err != nil || c.Window() != InitWindow {
			t.Errorf("New(%v): %v, %v", k, c, err)
		}
	}
	if _, err := New(9, 0); err == nil {
		t.Error("New(9) succeeded")
	}
	if _, err := New(KindDX, -1); err == nil {
		t.Error("New(dx, −1 ns headroom) succeeded")
	}
}
