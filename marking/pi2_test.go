package marking

import (
	"errors"
	"math"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

func newTestPI2(tb testing.TB, cfg PI2Config) *pi2Queue {
	tb.Helper()
	m, err := NewPI2(cfg, Dequeue, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return m.(*pi2Queue)
}

// leave shows m a packet of codepoint e leaving at now after waiting
// sojourn, with 100 packets behind it.
func leave(m Marker, now, sojourn int64, e packet.ECN) (Verdict, View) {
	v := View{Now: now, EnqTime: now - sojourn, Len: 1500, ECN: e, QueueBytes: 100 * 1500, QueuePackets: 100}
	return m.Mark(&v), v
}

// RFC 9332 Appendix A.1's dualpi2_update by hand, with tc-dualpi2's
// defaults (target 15 ms, Tupdate 16 ms, α = 0.16 Hz, β = 3.2 Hz) and a
// packet leaving at each update instant after the scripted delay: it is
// the head then, so curq is its sojourn.
func TestPI2UpdateByHand(t *testing.T) {
	m := newTestPI2(t, PI2Config{})
	leave(m, 0, 0, packet.ECT0)
	c := &m.queues[0]
	for i, s := range []struct {
		curq int64   // ms
		p    float64 // p′ after the update
	}{
		{20, 0.16*0.005 + 3.2*0.020},            // 0.0008 + 0.064 = 0.0648
		{20, 0.0648 + 0.16*0.005},               // + 0.0008 = 0.0656
		{25, 0.0656 + 0.16*0.010 + 3.2*0.005},   // + 0.0016 + 0.016 = 0.0832
		{10, 0.0832 + 0.16*-0.005 + 3.2*-0.015}, // − 0.0008 − 0.048 = 0.0344
		{2, 0.0344 + 0.16*-0.013 + 3.2*-0.008},  // − 0.00208 − 0.0256 = 0.00672
		{0, 0},                                  // 0.00672 − 0.0024 − 0.0064 < 0: bounded to 0
		{40, 0.16*0.025 + 3.2*0.040},            // 0.004 + 0.128 = 0.132
		{40, 0.132 + 0.16*0.025},                // 0.136
		{400, 0.136 + 0.16*0.385 + 3.2*0.360},   // 0.136 + 0.0616 + 1.152 = 1.3496: bounded to 1
	} {
		now := int64(i+1) * 16 * ms
		leave(m, now, s.curq*ms, packet.ECT0)
		want := min(s.p, 1)
		if !near(c.prob, want) || c.prevq != s.curq*ms {
			t.Errorf("update %d (curq %d ms): p′ %.12g, prevq %d; want %.12g, %d ms", i+1, s.curq, c.prob, c.prevq, want, s.curq)
		}
	}
}

// Updates run when a packet leaves, each on the delay the head had at its
// instant: the packet leaving at 50 ms arrived at 20 ms into an empty
// queue, so the update at 16 ms saw nothing, those at 32 and 48 ms 12 and
// 28 ms.
func TestPI2UpdatesCatchUp(t *testing.T) {
	m := newTestPI2(t, PI2Config{})
	leave(m, 0, 0, packet.ECT0)
	leave(m, 50*ms, 30*ms, packet.ECT0)
	p2 := 0.16*-0.003 + 3.2*0.012     // 0.03792
	p3 := p2 + 0.16*0.013 + 3.2*0.016 // + 0.00208 + 0.0512 = 0.0912
	if c := &m.queues[0]; !near(c.prob, p3) || c.prevq != 28*ms || c.next != 64*ms {
		t.Errorf("p′ %.12g, prevq %d, next %d; want %.12g, 28 ms, 64 ms", c.prob, c.prevq, c.next, p3)
	}
}

// count runs n packets of codepoint e at p′ = p and counts the verdicts.
func count(m *pi2Queue, p float64, e packet.ECN, n int) (marks, drops int) {
	for range n {
		m.queues[0].prob = p
		switch v, _ := leave(m, ms, 20*ms, e); v {
		case Mark:
			marks++
		case Drop:
			drops++
		}
	}
	return marks, drops
}

// within reports whether x of n lies within 4.5 standard deviations of a
// binomial's mean n·p (p in (0, 1)).
func within(x, n int, p float64) bool {
	mean := float64(n) * p
	sd := 4.5 * math.Sqrt(mean*(1-p))
	return float64(x) >= mean-sd && float64(x) <= mean+sd
}

// Classic packets see (p′)², L4S ones k·p′; on overload (k·p′ ≥ 1) every
// packet is dropped with (p′)² and the L4S ones left are marked (RFC 9332
// §4.2.3, Appendix A.2's Figure 7, Linux's drop_on_overload); with
// overflow p′ stops at 1/k.
func TestPI2Probabilities(t *testing.T) {
	const n = 40_000
	m := newTestPI2(t, PI2Config{Seed: 3})
	leave(m, 0, 0, packet.ECT0) // start; the next update is at 16 ms
	for _, c := range []struct {
		name       string
		p          float64
		e          packet.ECN
		mark, drop float64 // expected fractions
	}{
		{"ECT(0) at p′ 0.3", 0.3, packet.ECT0, 0.09, 0},
		{"Not-ECT at p′ 0.3", 0.3, packet.NotECT, 0, 0.09},
		{"ECT(1) at p′ 0.3", 0.3, packet.ECT1, 0.6, 0},
		{"CE at p′ 0.3", 0.3, packet.CE, 0.6, 0},
		{"ECT(0) on overload, p′ 0.6", 0.6, packet.ECT0, 0, 0.36},
		{"ECT(1) on overload, p′ 0.6", 0.6, packet.ECT1, 0.64, 0.36},
	} {
		marks, drops := count(m, c.p, c.e, n)
		ok := func(x int, f float64) bool { return f == 0 && x == 0 || f > 0 && within(x, n, f) }
		if !ok(marks, c.mark) || !ok(drops, c.drop) {
			t.Errorf("%s: %d marks, %d drops of %d; want fractions %g and %g", c.name, marks, drops, n, c.mark, c.drop)
		}
	}
	// ecn_mask none: ECT(1) is Classic too.
	m = newTestPI2(t, PI2Config{Classic: true, Seed: 4})
	leave(m, 0, 0, packet.ECT1)
	if marks, drops := count(m, 0.3, packet.ECT1, n); !within(marks, n, 0.09) || drops != 0 {
		t.Errorf("Classic ECT(1) at p′ 0.3: %d marks, %d drops; want 9%% marks", marks, drops)
	}
	// Overflow: p′ is capped at 1/k = 0.5, so L4S marking saturates at
	// 100% and Classic ECT is marked, never dropped, with 0.25.
	m = newTestPI2(t, PI2Config{Overflow: true, Seed: 5})
	leave(m, 0, 0, packet.ECT0)
	leave(m, 16*ms, 400*ms, packet.ECT0)
	if p := m.queues[0].prob; p != 0.5 {
		t.Fatalf("overflow: p′ %g after a 400 ms delay, want the cap 1/k = 0.5", p)
	}
	if marks, drops := count(m, 0.5, packet.ECT0, n); !within(marks, n, 0.25) || drops != 0 {
		t.Errorf("overflow, ECT(0) at the cap: %d marks, %d drops; want 25%% marks and no drop", marks, drops)
	}
	if marks, drops := count(m, 0.5, packet.ECT1, n); marks != n || drops != 0 {
		t.Errorf("overflow, ECT(1) at the cap: %d marks, %d drops of %d; want all marked", marks, drops, n)
	}
}

// Nothing is marked or dropped while less than two MTUs are queued
// behind the packet.
func TestPI2TwoMTUFloor(t *testing.T) {
	m := newTestPI2(t, PI2Config{})
	leave(m, 0, 0, packet.NotECT)
	m.queues[0].prob = 1
	for _, c := range []struct {
		backlog int64
		want    Verdict
	}{{3027, Pass}, {3028, Drop}} {
		v := View{Now: ms, EnqTime: 0, Len: 1500, ECN: packet.NotECT, QueueBytes: c.backlog, QueuePackets: 3}
		if got := m.Mark(&v); got != c.want {
			t.Errorf("backlog %d B at p′ 1: %v, want %v", c.backlog, got, c.want)
		}
	}
}

func TestPI2Placement(t *testing.T) {
	if _, err := NewPI2(PI2Config{}, Enqueue, 1); !errors.Is(err, ErrDequeueOnly) {
		t.Errorf("PI2 at enqueue: %v, want ErrDequeueOnly", err)
	}
	for _, c := range []struct {
		cfg PI2Config
		key string
	}{
		{PI2Config{Coupling: 0.5}, "coupling_factor"},
		{PI2Config{Alpha: -0.1}, "alpha"},
		{PI2Config{Target: -1}, "target"},
		{PI2Config{MTU: -1}, "mtu"},
	} {
		var pe *ParamError
		if _, err := NewPI2(c.cfg, Dequeue, 1); !errors.As(err, &pe) || pe.Key != c.key {
			t.Errorf("%+v: %v, want an error at %s", c.cfg, err, c.key)
		}
	}
}

func TestPI2AllocatesNothing(t *testing.T) {
	m := newTestPI2(t, PI2Config{})
	v := &View{Len: 1500, ECN: packet.ECT1, QueueBytes: 100 * 1500, QueuePackets: 100}
	if n := testing.AllocsPerRun(1000, func() {
		v.Now += 100_000
		v.EnqTime = v.Now - 20*ms
		m.Mark(v)
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}
