package marking

import (
	"errors"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

func newTestDualPI2(tb testing.TB, cfg DualPI2Config) (*DualPI2, *Chain) {
	tb.Helper()
	d, err := NewDualPI2(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := NewChain(Dequeue, NonECTDrop, d.Members()...)
	if err != nil {
		tb.Fatal(err)
	}
	return d, c
}

// dq is a packet leaving a DualQ port at now from queue q after sojourn,
// of codepoint e, the other queue's head having waited peer (-1: that
// queue is empty); each queue holds 20 packets of 1500 B besides.
func dq(now int64, q int, sojourn, peer int64, e packet.ECN) View {
	v := View{Now: now, EnqTime: now - sojourn, Len: 1500, ECN: e, Queue: q,
		QueueBytes: 20 * 1500, QueuePackets: 20, PeerQueue: 1 - q}
	if peer >= 0 {
		v.PeerBytes, v.PeerPackets, v.PeerSojourn = 20*1500, 20, peer
	}
	return v
}

// The PI2 controller of RFC 9332 Appendix A.2 (Figure 8) by hand: curq is
// the larger of the two queues' delays, max(cq.time(), lq.time()) — the
// packet leaving is its queue's head, the other queue's head brings its
// sojourn as the peer's.
func TestDualPI2ControllerByHand(t *testing.T) {
	d, c := newTestDualPI2(t, DualPI2Config{})
	for i, s := range []struct {
		v    View
		p    float64 // p′ after the update
		curq int64
	}{
		// 16 ms: an L packet leaves; the C head has waited 20 ms.
		// p′ = 0.16·(0.020 − 0.015) + 3.2·0.020 = 0.0648.
		{dq(16*ms, DualQL4S, ms/2, 20*ms, packet.ECT1), 0.0648, 20 * ms},
		// 32 ms: the C packet leaving is the C head, after 25 ms:
		// + 0.16·0.010 + 3.2·0.005 = 0.0176.
		{dq(32*ms, DualQClassic, 25*ms, ms/2, packet.ECT0), 0.0824, 25 * ms},
		// 48 ms: an L packet after 0.5 ms, the C queue empty: curq is the
		// L queue's 0.5 ms: + 0.16·(0.0005 − 0.015) + 3.2·(0.0005 − 0.025)
		// = − 0.00232 − 0.0784: 0.00168.
		{dq(48*ms, DualQL4S, ms/2, -1, packet.ECT1), 0.00168, ms / 2},
		// 64 ms: a C packet after 2 ms while the L head has waited 3 ms:
		// curq 3 ms, + 0.16·(0.003 − 0.015) + 3.2·(0.003 − 0.0005) =
		// − 0.00192 + 0.008: 0.00776.
		{dq(64*ms, DualQClassic, 2*ms, 3*ms, packet.ECT0), 0.00776, 3 * ms},
		// 80 ms: both queues were empty; the L packet leaving at 81 ms
		// arrived at 80.5 ms, after the update's instant: curq 0,
		// + 0.16·(−0.015) + 3.2·(−0.003) = −0.012: 0.
		{dq(81*ms, DualQL4S, ms/2, -1, packet.ECT1), 0, 0},
	} {
		if i == 0 {
			first := dq(0, DualQClassic, 0, -1, packet.ECT0)
			c.Decide(&first, first.ECN)
		}
		v := s.v
		c.Decide(&v, v.ECN)
		st := d.State()
		if !near(st.Prob, s.p) && !(s.p == 0 && st.Prob < 1e-15) || st.DelayC != s.curq || st.Updates != uint64(i+1) {
			t.Errorf("update %d: %+v; want p′ %.12g, delay %d", i+1, st, s.p, s.curq)
		}
		if want := min(2*s.p, 1); !near(st.ProbL, want) && !(want == 0 && st.ProbL < 1e-15) || !near(st.ProbC, s.p*s.p) && s.p != 0 {
			t.Errorf("update %d: p_CL %.12g, p_C %.12g; want k·p′ = %.12g, (p′)² = %.12g", i+1, st.ProbL, st.ProbC, want, s.p*s.p)
		}
	}
}

// tally runs n packets through chain c and counts its verdicts.
func tally(c *Chain, n int, v View) (marks, drops int) {
	for range n {
		w := v
		switch c.Decide(&w, w.ECN) {
		case Mark:
			marks++
		case Drop:
			drops++
		}
	}
	return marks, drops
}

// votes returns the counts of the chain's member named name.
func votes(c *Chain, name string) MemberCounts {
	for _, m := range c.Counts(nil) {
		if m.Name == name {
			return m
		}
	}
	return MemberCounts{}
}

// At p′ = 0.3 the C queue sees p_C = 0.09 and the L queue p_CL = 0.6, each
// decision counted by the member that made it; the L queue's native step
// marks every packet above step_thresh, and the combination is max, not a
// sum: a step mark is not counted twice.
func TestDualPI2Coupling(t *testing.T) {
	const n = 40_000
	d, c := newTestDualPI2(t, DualPI2Config{Seed: 9})
	start := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&start, start.ECN)
	d.c.prob = 0.3 // no update before 16 ms

	if m, k := tally(c, n, dq(ms, DualQClassic, 20*ms, ms/2, packet.ECT0)); !within(m, n, 0.09) || k != 0 {
		t.Errorf("C ECT(0): %d marks, %d drops of %d; want 9%% marks", m, k, n)
	}
	if m, k := tally(c, n, dq(ms, DualQClassic, 20*ms, ms/2, packet.NotECT)); m != 0 || !within(k, n, 0.09) {
		t.Errorf("C Not-ECT: %d marks, %d drops of %d; want 9%% drops", m, k, n)
	}
	if m, k := tally(c, n, dq(ms, DualQL4S, ms/2, 20*ms, packet.ECT1)); !within(m, n, 0.6) || k != 0 {
		t.Errorf("L ECT(1) below the step: %d marks, %d drops of %d; want 60%% marks", m, k, n)
	}
	if m, k := tally(c, n, dq(ms, DualQL4S, 2*ms, 20*ms, packet.ECT1)); m != n || k != 0 {
		t.Errorf("L ECT(1) above the step: %d marks, %d drops of %d; want all marked", m, k, n)
	}
	step, coupled, classic := votes(c, DualPI2Step), votes(c, DualPI2Coupled), votes(c, DualPI2Classic)
	if step.Marks != n || step.Drops != 0 || classic.Drops == 0 || classic.Marks == 0 || coupled.Marks == 0 || votes(c, DualPI2Overload) != (MemberCounts{Name: DualPI2Overload}) {
		t.Errorf("votes: step %+v, coupled %+v, classic %+v, overload %+v", step, coupled, classic, votes(c, DualPI2Overload))
	}
	if tot := c.Totals(); tot.NonECTDropped != 0 {
		t.Errorf("the chain turned %d marks into drops: the classic member should drop Not-ECT itself", tot.NonECTDropped)
	}

	// A step mark records the sojourn against the threshold.
	v := dq(ms, DualQL4S, ms+1, 20*ms, packet.ECT1)
	d.c.prob = 0
	if got := c.Decide(&v, v.ECN); got != Mark || v.Value != ms+1 || v.Threshold != ms || c.Name(c.Decider()) != DualPI2Step {
		t.Errorf("1 ms + 1 ns in L: %v by %s (value %d, threshold %d); want a step mark", got, c.Name(c.Decider()), v.Value, v.Threshold)
	}
	v = dq(ms, DualQL4S, ms, 20*ms, packet.ECT1)
	if got := c.Decide(&v, v.ECN); got != Pass {
		t.Errorf("exactly 1 ms in L: %v, want pass (the step marks above the threshold)", got)
	}
}

// The ramp of Appendix A.1 marks with (sojourn − minTh)/range, combined
// with p_CL by max on one draw.
func TestDualPI2Ramp(t *testing.T) {
	const n = 40_000
	d, c := newTestDualPI2(t, DualPI2Config{StepThresh: 800_000, RampRange: 400_000, Seed: 11})
	start := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&start, start.ECN)
	// 900 µs: a quarter up the ramp.
	if m, _ := tally(c, n, dq(ms, DualQL4S, 900_000, 20*ms, packet.ECT1)); !within(m, n, 0.25) {
		t.Errorf("ramp at a quarter: %d marks of %d, want 25%%", m, n)
	}
	// With p_CL = 0.6 as well: max(0.25, 0.6) = 0.6, not 1 − 0.75·0.4 = 0.7.
	d.c.prob = 0.3
	if m, _ := tally(c, n, dq(ms, DualQL4S, 900_000, 20*ms, packet.ECT1)); !within(m, n, 0.6) {
		t.Errorf("ramp 0.25 with p_CL 0.6: %d marks of %d, want 60%%", m, n)
	}
}

// On overload (k·p′ ≥ 1: RFC 9332 §4.2.3's drop on saturation, Appendix
// A.2's Figure 7) both queues drop with p_C whatever the ECN, and the L
// packets left are marked; each entry into overload is counted.
func TestDualPI2Overload(t *testing.T) {
	const n = 40_000
	d, c := newTestDualPI2(t, DualPI2Config{Seed: 13})
	start := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&start, start.ECN)
	// From p′ 0.6 and prevq = curq = target, the update at 16 ms leaves
	// p′ at 0.6: k·p′ = 1.2.
	d.c.prob, d.c.prevq = 0.6, 15*ms
	at16 := dq(16*ms, DualQClassic, 15*ms, ms/2, packet.ECT0)
	c.Decide(&at16, at16.ECN)
	if st := d.State(); !st.Overloaded || st.Overloads != 1 || !near(st.Prob, 0.6) {
		t.Fatalf("after the update: %+v, want overloaded once at p′ 0.6", st)
	}
	if m, k := tally(c, n, dq(17*ms, DualQClassic, 15*ms, ms/2, packet.ECT0)); m != 0 || !within(k, n, 0.36) {
		t.Errorf("C ECT(0) on overload: %d marks, %d drops of %d; want 36%% drops, no mark", m, k, n)
	}
	if m, k := tally(c, n, dq(17*ms, DualQL4S, ms/2, 15*ms, packet.ECT1)); m+k != n || !within(k, n, 0.36) {
		t.Errorf("L ECT(1) on overload: %d marks, %d drops of %d; want 36%% dropped, the rest marked", m, k, n)
	}
	if o := votes(c, DualPI2Overload); o.Drops == 0 || o.Marks != 0 {
		t.Errorf("overload member: %+v", o)
	}
	// Back below: the C queue empty, curq is the L queue's 0.5 ms, from
	// prevq 15 ms: p′ + 0.16·(−0.0145) + 3.2·(−0.0145) = p′ − 0.04872 =
	// 0.55128: still overloaded, not entered again. Then curq 0.5 ms
	// again: 0.00232 less each time … until below 0.5.
	for i, now := 0, 32*ms; i < 3; i, now = i+1, now+16*ms {
		v := dq(now, DualQL4S, ms/2, -1, packet.ECT1)
		c.Decide(&v, v.ECN)
	}
	// 0.6 − 0.04872 − 0.00232 − 0.00232 = 0.54664: k·p′ ≥ 1 still.
	if st := d.State(); !near(st.Prob, 0.6-0.04872-0.00232-0.00232) || !st.Overloaded || st.Overloads != 1 {
		t.Errorf("p′ falling: %+v", st)
	}
	d.c.prob = 0.45
	v := dq(80*ms, DualQL4S, ms/2, -1, packet.ECT1)
	c.Decide(&v, v.ECN) // 0.45 − 0.00232: out of overload
	d.c.prob = 0.6
	v = dq(96*ms, DualQL4S, ms/2, -1, packet.ECT1)
	c.Decide(&v, v.ECN) // 0.59768: in again
	if st := d.State(); !st.Overloaded || st.Overloads != 2 {
		t.Errorf("out and in again: %+v, want two entries", st)
	}
}

// An L queue overloaded by traffic that ignores its marks drives the base
// AQM into overload by itself, with no Classic traffic at all (RFC 9332
// Appendix A.2, Figure 8 line 2a: "the naive PI-update function … would
// drop nothing, even if the L4S queue were overloaded"): p′ rises on the L
// queue's delay and the L packets are dropped with (p′)².
func TestDualPI2OverloadWithoutClassic(t *testing.T) {
	const n = 40_000
	d, c := newTestDualPI2(t, DualPI2Config{Seed: 17})
	start := dq(0, DualQL4S, 0, -1, packet.ECT1)
	c.Decide(&start, start.ECN)
	// 16 ms: an L packet after 200 ms, the C queue empty:
	// p′ = 0.16·(0.200 − 0.015) + 3.2·0.200 = 0.0296 + 0.64 = 0.6696.
	v := dq(16*ms, DualQL4S, 200*ms, -1, packet.ECT1)
	c.Decide(&v, v.ECN)
	const p = 0.6696
	if st := d.State(); !near(st.Prob, p) || st.DelayC != 200*ms || !st.Overloaded || st.Overloads != 1 {
		t.Fatalf("after an update on a 200 ms L queue: %+v; want p′ %g, overloaded", st, p)
	}
	if m, k := tally(c, n, dq(17*ms, DualQL4S, 200*ms, -1, packet.ECT1)); m+k != n || !within(k, n, p*p) {
		t.Errorf("L ECT(1) on overload, no Classic traffic: %d marks, %d drops of %d; want %.1f%% dropped, the rest marked", m, k, n, 100*p*p)
	}
}

// With overflow, p′ stops at 1/k: L marks saturate at 100% and the C
// queue keeps marking, never overloaded.
func TestDualPI2Overflow(t *testing.T) {
	d, c := newTestDualPI2(t, DualPI2Config{Overflow: true})
	start := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&start, start.ECN)
	v := dq(16*ms, DualQClassic, 400*ms, ms/2, packet.ECT0)
	c.Decide(&v, v.ECN)
	if st := d.State(); st.Prob != 0.5 || st.Overloaded || st.ProbL != 1 {
		t.Errorf("overflow after a 400 ms delay: %+v, want p′ at 1/k = 0.5, not overloaded", st)
	}
	if m, k := tally(c, 1000, dq(17*ms, DualQL4S, ms/2, 15*ms, packet.ECT1)); m != 1000 || k != 0 {
		t.Errorf("L at p_CL 1: %d marks, %d drops of 1000", m, k)
	}
}

// Below two MTUs in both queues together the coupled and classic parts
// rest; the step does not.
func TestDualPI2Floor(t *testing.T) {
	d, c := newTestDualPI2(t, DualPI2Config{})
	start := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&start, start.ECN)
	d.c.prob = 1
	for _, s := range []struct {
		q             int
		sojourn       int64
		qbytes, pbyte int64
		want          Verdict
	}{
		{DualQClassic, 20 * ms, 1514, 1513, Pass},
		{DualQClassic, 20 * ms, 1514, 1514, Mark},
		{DualQL4S, ms / 2, 1000, 0, Pass},
		{DualQL4S, 2 * ms, 1000, 0, Mark},
	} {
		v := View{Now: ms, EnqTime: ms - s.sojourn, Len: 1500, ECN: packet.ECT0, Queue: s.q, QueueBytes: s.qbytes, QueuePackets: 1, PeerQueue: 1 - s.q, PeerBytes: s.pbyte}
		if s.q == DualQL4S {
			v.ECN = packet.ECT1
		}
		if got := c.Decide(&v, v.ECN); got != s.want {
			t.Errorf("queue %d, %d + %d B queued, sojourn %d: %v, want %v", s.q, s.qbytes, s.pbyte, s.sojourn, got, s.want)
		}
	}
}

// The step in packets marks a packet that leaves more than step_thresh
// behind it; min_qlen_step holds the step back in a short L queue.
func TestDualPI2StepPacketsAndMinQlen(t *testing.T) {
	_, c := newTestDualPI2(t, DualPI2Config{StepPackets: 5})
	for _, s := range []struct {
		behind int64
		want   Verdict
	}{{5, Pass}, {6, Mark}} {
		v := View{Now: ms, EnqTime: 0, Len: 1500, ECN: packet.ECT1, Queue: DualQL4S, QueueBytes: 1500 * s.behind, QueuePackets: s.behind, PeerQueue: 0}
		if got := c.Decide(&v, v.ECN); got != s.want || got == Mark && (v.Value != 6 || v.Threshold != 5) {
			t.Errorf("%d packets behind: %v (value %d, threshold %d), want %v", s.behind, got, v.Value, v.Threshold, s.want)
		}
	}
	_, c = newTestDualPI2(t, DualPI2Config{MinQlenStep: 3})
	for _, s := range []struct {
		behind int64
		want   Verdict
	}{{1, Pass}, {2, Mark}} {
		v := View{Now: ms, EnqTime: ms - 2*ms, Len: 1500, ECN: packet.ECT1, Queue: DualQL4S, QueuePackets: s.behind, PeerQueue: 0}
		if got := c.Decide(&v, v.ECN); got != s.want {
			t.Errorf("min_qlen_step 3, %d behind: %v, want %v", s.behind, got, s.want)
		}
	}
}

func TestDualPI2Config(t *testing.T) {
	for _, c := range []struct {
		cfg DualPI2Config
		key string
	}{
		{DualPI2Config{Coupling: 0.5}, "coupling_factor"},
		{DualPI2Config{StepThresh: -1}, "step_thresh"},
		{DualPI2Config{StepPackets: -1}, "step_thresh"},
		{DualPI2Config{RampRange: 100, StepPackets: 3}, "ramp_range"},
		{DualPI2Config{MinQlenStep: -1}, "min_qlen_step"},
		{DualPI2Config{TUpdate: -5}, "tupdate"},
	} {
		var pe *ParamError
		if _, err := NewDualPI2(c.cfg); !errors.As(err, &pe) || pe.Key != c.key {
			t.Errorf("%+v: %v, want an error at %s", c.cfg, err, c.key)
		}
	}
	d, _ := newTestDualPI2(t, DualPI2Config{})
	for _, m := range d.Members() {
		p := m.Marker.(Peerer)
		if p.Peer(DualQClassic) != DualQL4S || p.Peer(DualQL4S) != DualQClassic || p.Peer(2) != -1 {
			t.Errorf("%s: peers %d %d %d", m.Name, p.Peer(0), p.Peer(1), p.Peer(2))
		}
	}
}

func TestDualPI2AllocatesNothing(t *testing.T) {
	d, c := newTestDualPI2(t, DualPI2Config{})
	v := dq(0, DualQClassic, 0, -1, packet.ECT0)
	c.Decide(&v, v.ECN)
	d.c.prob = 0.2
	now := int64(0)
	w := &View{}
	if n := testing.AllocsPerRun(1000, func() {
		now += 100_000
		*w = dq(now, int(now/100_000)%2, 3*ms, 2*ms, packet.ECT1)
		c.Decide(w, w.ECN)
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}
