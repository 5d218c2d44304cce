package closedloop

import (
	"math"
	"testing"
)

// window sends what f's window allows and returns the sequence numbers.
func window(f *flow) []uint64 {
	var seqs []uint64
	for f.canSend() {
		seqs = append(seqs, f.sent())
	}
	return seqs
}

// inCA returns a flow in congestion avoidance with cwnd w.
func inCA(cc CC, w float64) *flow {
	f := newFlow(0, 0, 0, cc, 0, 0)
	f.cwnd, f.ssthresh = w, w
	return f
}

func TestSlowStartDoublesPerWindow(t *testing.T) {
	f := newFlow(0, 0, 0, ECNStar, 0, 0)
	for _, want := range []float64{20, 40, 80} {
		for _, s := range window(f) {
			f.onAck(s, false, 0)
		}
		if f.cwnd != want {
			t.Fatalf("cwnd %g after a window of unmarked ACKs in slow start, want %g", f.cwnd, want)
		}
	}
}

// ECN*: +1 packet per RTT (001 §2.2 footnote 2: regular ECN-enabled TCP).
func TestAdditiveIncreaseOnePerWindow(t *testing.T) {
	for _, cc := range ccs {
		f := inCA(cc, 10)
		for i := 0; i < 5; i++ {
			w := f.cwnd
			for _, s := range window(f) {
				f.onAck(s, false, 0)
			}
			// 1/cwnd per ACK over ⌊cwnd⌋ ACKs: a little under one packet.
			if d := f.cwnd - w; d < 0.85 || d > 1 {
				t.Fatalf("%v: cwnd grew by %g over one window, want about 1 packet", cc, d)
			}
		}
	}
}

// ECN*: halve on a mark, at most once per window of data.
func TestECNStarHalvesOncePerWindow(t *testing.T) {
	f := inCA(ECNStar, 20)
	seqs := window(f)
	f.onAck(seqs[0], true, 0)
	if f.cwnd != 10 {
		t.Fatalf("cwnd %g after a marked ACK, want 20/2 = 10", f.cwnd)
	}
	for _, s := range seqs[1:] {
		f.onAck(s, true, 0) // the rest of the same window: no further cut, no growth
	}
	if f.cwnd != 10 || f.reductions != 1 {
		t.Fatalf("cwnd %g after %d reductions in one window, want 10 after 1", f.cwnd, f.reductions)
	}
	next := window(f) // sent after the cut: their marks count again
	f.onAck(next[0], true, 0)
	if f.cwnd != 5 || f.reductions != 2 {
		t.Fatalf("cwnd %g after %d reductions, want 5 after 2", f.cwnd, f.reductions)
	}
}

// DCTCP: α ← (1−g)·α + g·F once per window of ACKs, cwnd ← cwnd·(1 − α/2)
// on the first mark of a window, g = 1/16.
func TestDCTCPAlphaAndCut(t *testing.T) {
	f := inCA(DCTCP, 16)
	f.alpha = 0.5
	seqs := window(f) // 0..15
	f.winEnd = seqs[len(seqs)-1]
	// 4 of 16 ACKs marked, the first of them at the 5th ACK.
	for i, s := range seqs {
		ce := i >= 4 && i < 8
		w := f.cwnd // grown by 1/cwnd per unmarked ACK before the first mark
		f.onAck(s, ce, 0)
		if i == 4 && f.cwnd != w*(1-0.5/2) {
			t.Fatalf("cwnd %g after the window's first mark, want %g·(1 − 0.5/2) = %g", f.cwnd, w, w*0.75)
		}
	}
	if want := (1-1.0/16)*0.5 + 1.0/16*4/16; math.Abs(f.alpha-want) > 1e-12 {
		t.Fatalf("α = %g after a window with F = 1/4, want (15/16)·0.5 + (1/16)·(1/4) = %g", f.alpha, want)
	}
	if f.reductions != 1 {
		t.Fatalf("%d reductions in one window, want 1", f.reductions)
	}
	// A window without marks decays α by 15/16.
	a := f.alpha
	for _, s := range window(f) {
		f.onAck(s, false, 0)
	}
	if want := a * 15 / 16; math.Abs(f.alpha-want) > 1e-12 {
		t.Fatalf("α = %g after an unmarked window, want %g", f.alpha, want)
	}
}

func TestLossHalvesAndCwndFloor(t *testing.T) {
	f := inCA(ECNStar, 8)
	seqs := window(f)
	f.onAck(seqs[3], false, 3) // 0..2 lost
	if f.cwnd != 4 || f.lossEvents != 1 || f.lost != 3 {
		t.Fatalf("cwnd %g, %d loss events, %d lost; want 4, 1, 3", f.cwnd, f.lossEvents, f.lost)
	}
	if got := f.inFlight(); got != uint64(len(seqs))-4 {
		t.Fatalf("in flight %d, want %d: lost packets leave the window", got, len(seqs)-4)
	}
	for _, s := range seqs[4:] {
		f.onAck(s, false, 0) // sent before the cut: neither cut nor growth
	}
	if f.cwnd != 4 || f.inFlight() != 0 {
		t.Fatalf("cwnd %g with %d in flight after the rest of the window, want 4 and 0", f.cwnd, f.inFlight())
	}
	for i := 0; i < 10; i++ {
		for _, s := range window(f) {
			f.onAck(s, true, 0)
		}
	}
	if f.cwnd != minCwnd {
		t.Fatalf("cwnd %g after repeated marks, want the floor %g", f.cwnd, minCwnd)
	}
}
