package marking

import (
	"errors"
	"math"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

const ms = int64(1_000_000) // ns

func newTestPIE(tb testing.TB, cfg PIEConfig) *pie {
	tb.Helper()
	m, err := NewPIE(cfg, Enqueue, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return m.(*pie)
}

// arrive shows m a packet arriving at now that finds a busy queue whose
// head has waited headWait.
func arrive(m Marker, now, headWait int64) (Verdict, View) {
	v := View{Now: now, EnqTime: now, Len: 1500, ECN: packet.ECT0,
		QueueBytes: 100 * 1500, QueuePackets: 100, HeadSojourn: headWait}
	return m.Mark(&v), v
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }

// RFC 8033 §4.2 by hand, with tc-pie's defaults (target = tupdate = 15 ms,
// α = 0.125 Hz, β = 1.25 Hz) and a packet at each update instant whose
// queue's head has waited the scripted delay. The first packet, at 0,
// starts the updates; the burst allowance starts at 150 ms (§4.4).
func TestPIEDropProbabilityByHand(t *testing.T) {
	m := newTestPIE(t, PIEConfig{})
	arrive(m, 0, 0)
	q := &m.queues[0]
	for i, s := range []struct {
		delay int64   // ms
		prob  float64 // drop_prob after the update
		burst int64   // ms
	}{
		// p = 0.125·(0.020−0.015) + 1.25·(0.020−0) = 0.025625; drop_prob
		// 0 < 10⁻⁶: p/2048 = 1.2512207031e-5.
		{20, 0.025625 / 2048, 135},
		// p = 0.125·0.005 + 1.25·0 = 0.000625; drop_prob in [10⁻⁵, 10⁻⁴):
		// p/128 = 4.8828125e-6.
		{20, 0.025625/2048 + 0.000625/128, 120},
		// p = 0.125·0.015 + 1.25·0.010 = 0.014375; still in [10⁻⁵, 10⁻⁴):
		// p/128 = 1.123046875e-4 → 1.2969970703e-4.
		{30, 0.025625/2048 + 0.000625/128 + 0.014375/128, 105},
		// p = 0.125·0.015 = 0.001875; drop_prob in [10⁻⁴, 10⁻³): p/32.
		{30, 0.025625/2048 + 0.000625/128 + 0.014375/128 + 0.001875/32, 90},
		{30, 0.025625/2048 + 0.000625/128 + 0.014375/128 + 2*0.001875/32, 75},
		// p = 0.125·(−0.005) + 1.25·(−0.020) = −0.025625; /32 takes
		// 8.0e-4 off 2.47e-4: bounded to 0. The delay 10 ms is not below
		// target/2: no new burst allowance.
		{10, 0, 60},
		// qdelay_old 10 ms is not below target/2 either.
		{0, 0, 45},
		// Both delays 0 and below target/2, drop_prob 0: the burst
		// allowance is back to max_burst.
		{0, 0, 150},
	} {
		now := int64(i+1) * 15 * ms
		arrive(m, now, s.delay*ms)
		if !near(q.prob, s.prob) || q.burst != s.burst*ms || q.qdelayOld != s.delay*ms {
			t.Errorf("update %d (delay %d ms): drop_prob %.12g, burst %d ns, qdelay_old %d; want %.12g, %d ms, %d ms",
				i+1, s.delay, q.prob, q.burst, q.qdelayOld, s.prob, s.burst, s.delay)
		}
	}
}

// The cap of §5.5 and the decay of §4.2, from set states.
func TestPIECapAndDecay(t *testing.T) {
	m := newTestPIE(t, PIEConfig{})
	q := &m.queues[0]
	// drop_prob 0.15 ≥ 0.1: p = 0.125·(0.100−0.015) + 1.25·(0.100−0.030)
	// = 0.098125 is capped at 0.02.
	q.prob, q.qdelayOld = 0.15, 30*ms
	m.update(q, 100*ms)
	if !near(q.prob, 0.17) {
		t.Errorf("capped: drop_prob %.12g, want 0.15 + 0.02", q.prob)
	}
	// Both delays 0: p = 0.125·(−0.015) = −0.001875 unscaled at 0.5,
	// then × 0.98: 0.4881625.
	q.prob, q.qdelayOld = 0.5, 0
	m.update(q, 0)
	if !near(q.prob, (0.5-0.001875)*0.98) {
		t.Errorf("decayed: drop_prob %.12g, want 0.4881625", q.prob)
	}
}

// Updates run when a packet arrives, all those due in turn, each on the
// delay that the head the arrival finds had at the update's instant.
func TestPIEUpdatesCatchUp(t *testing.T) {
	m := newTestPIE(t, PIEConfig{})
	arrive(m, 0, 0)
	// At 50 ms the head has waited 40 ms: it arrived at 10 ms, so the
	// updates at 15, 30 and 45 ms see 5, 20 and 35 ms.
	arrive(m, 50*ms, 40*ms)
	p1 := (0.125*-0.010 + 1.25*0.005) / 2048                                             // 0.005/2048
	p2 := p1 + (0.125*0.005+1.25*0.015)/512                                              // drop_prob in [10⁻⁶, 10⁻⁵)
	p3 := p2 + (0.125*0.020+1.25*0.015)/128                                              // in [10⁻⁵, 10⁻⁴)
	if q := &m.queues[0]; !near(q.prob, p3) || q.qdelayOld != 35*ms || q.next != 60*ms { // 2.06298828125e-4
		t.Errorf("after catching up: drop_prob %.12g, qdelay_old %d, next update %d; want %.12g, 35 ms, 60 ms", q.prob, q.qdelayOld, q.next, p3)
	}
	// An empty queue at rest skips its updates without changing.
	m = newTestPIE(t, PIEConfig{})
	arrive(m, 0, 0)
	v := View{Now: 10_000 * ms, EnqTime: 10_000 * ms, Len: 100}
	m.Mark(&v)
	if q := &m.queues[0]; q.prob != 0 || q.burst != 150*ms || q.next != 10_005*ms {
		t.Errorf("after 10 s empty: %+v, want at rest, next update at 10005 ms", *q)
	}
}

// No drop while burst allowance is left (§4.4): with drop_prob at 1 and a
// 30 ms allowance, packets pass until the second update has used it up.
func TestPIEBurstAllowance(t *testing.T) {
	m := newTestPIE(t, PIEConfig{MaxBurst: 30 * ms, Random: true})
	arrive(m, 0, 0)
	q := &m.queues[0]
	q.prob, q.qdelayOld = 1, 100*ms
	for now := ms; now < 45*ms; now += ms {
		verdict, _ := arrive(m, now, 100*ms)
		want := Pass
		if now >= 30*ms { // updates at 15 ms and 30 ms: 30 → 15 → 0 ms
			want = Drop
		}
		if verdict != want {
			t.Fatalf("at %d ms with burst allowance %d ns: %v, want %v", now/ms, q.burst, verdict, want)
		}
	}
}

// Appendix A's drop_early lets a packet through while the queue is calm
// (qdelay_old < target/2 and drop_prob < 0.2) or short (at most two mean
// packets), and tc-pie's limit tail-drops.
func TestPIEDropEarlyAndLimit(t *testing.T) {
	m := newTestPIE(t, PIEConfig{MaxBurst: -1, Random: true, Limit: 50})
	arrive(m, 0, 0)
	q := &m.queues[0]
	look := func(prob float64, old, qbytes, qpkts int64) (Verdict, View) {
		q.prob, q.qdelayOld = prob, old
		v := View{Now: ms, EnqTime: ms, Len: 1500, ECN: packet.ECT0, QueueBytes: qbytes, QueuePackets: qpkts}
		return m.Mark(&v), v
	}
	for _, c := range []struct {
		prob          float64
		old, qb, qp   int64
		want          Verdict
		value, thresh int64
	}{
		{0.19, 7 * ms, 30_000, 20, Pass, 0, 0},         // calm: below target/2 and 0.2
		{1, 7 * ms, 30_000, 20, Drop, 7 * ms, 15 * ms}, // drop_prob ≥ 0.2
		{1, 8 * ms, 3000, 2, Pass, 0, 0},               // two mean packets
		{1, 8 * ms, 3001, 3, Drop, 8 * ms, 15 * ms},    // more
		{0, 0, 75_000, 50, Drop, 50, 50},               // the limit
	} {
		got, v := look(c.prob, c.old, c.qb, c.qp)
		if got != c.want || got != Pass && (v.Value != c.value || v.Threshold != c.thresh) {
			t.Errorf("drop_prob %g, qdelay_old %d, queue %d B / %d: %v (value %d, threshold %d), want %v (%d, %d)",
				c.prob, c.old, c.qb, c.qp, got, v.Value, v.Threshold, c.want, c.value, c.thresh)
		}
	}
}

// With ecn, an ECN-capable packet is marked instead of dropped while
// drop_prob ≤ mark_ecnth (§5.1); a Not-ECT one is dropped.
func TestPIEECN(t *testing.T) {
	m := newTestPIE(t, PIEConfig{MaxBurst: -1, ECN: true, Random: true})
	arrive(m, 0, 0)
	q := &m.queues[0]
	for _, c := range []struct {
		prob float64
		ecn  packet.ECN
		want Verdict
	}{
		{1, packet.ECT0, Drop},
		{1, packet.CE, Drop},
		{1, packet.NotECT, Drop},
	} {
		q.prob, q.qdelayOld = c.prob, 20*ms
		v := View{Now: ms, EnqTime: ms, Len: 1500, ECN: c.ecn, QueueBytes: 30_000, QueuePackets: 20}
		if got := m.Mark(&v); got != c.want {
			t.Errorf("drop_prob %g, %v: %v, want %v", c.prob, c.ecn, got, c.want)
		}
	}
	// At mark_ecnth exactly, every packet the draws drop is marked if
	// ECN-capable: count both over many packets at drop_prob 0.1.
	marks, drops := 0, 0
	for range 20_000 {
		q.prob = 0.1
		for _, e := range []packet.ECN{packet.ECT1, packet.NotECT} {
			v := View{Now: ms, EnqTime: ms, Len: 1500, ECN: e, QueueBytes: 30_000, QueuePackets: 20}
			switch got := m.Mark(&v); {
			case got == Mark && e == packet.ECT1:
				marks++
			case got == Drop && e == packet.NotECT:
				drops++
			case got != Pass:
				t.Fatalf("%v packet: %v", e, got)
			}
		}
	}
	// Each is a binomial of 20 000 draws at 0.1: 2000 ± 4.3 σ (σ = 42).
	if marks < 1820 || marks > 2180 || drops < 1820 || drops > 2180 {
		t.Errorf("at drop_prob 0.1: %d ECT(1) marked, %d Not-ECT dropped of 20000 each; want about 2000 each", marks, drops)
	}
}

// §5.4's derandomization: no drop while the probabilities summed since
// the last drop are below 0.85, a sure drop from 8.5; bytemode scales
// what each packet adds by its size.
func TestPIEDerandomize(t *testing.T) {
	m := newTestPIE(t, PIEConfig{MaxBurst: -1, ByteMode: true})
	arrive(m, 0, 0)
	q := &m.queues[0]
	look := func(n int) Verdict {
		q.prob, q.qdelayOld = 0.5, 20*ms
		v := View{Now: ms, EnqTime: ms, Len: n, ECN: packet.ECT0, QueueBytes: 30_000, QueuePackets: 20}
		return m.Mark(&v)
	}
	q.accu = 0
	for i := range 8 { // 300 B of 1500: 0.1 each, 0.8 after eight
		if got := look(300); got != Pass {
			t.Fatalf("packet %d of 300 B at accumulated %.2f: %v, want pass", i, q.accu, got)
		}
	}
	if !near(q.accu, 0.8) {
		t.Errorf("accumulated %.12g after eight 300 B packets at 0.5, want 0.8", q.accu)
	}
	q.accu = 8.4
	if got := look(300); got != Drop || q.accu != 0 {
		t.Errorf("at 8.4 + 0.1: %v, accumulated %g; want a sure drop and 0", got, q.accu)
	}
}

func TestPIEPlacement(t *testing.T) {
	if _, err := NewPIE(PIEConfig{}, Dequeue, 1); !errors.Is(err, ErrEnqueueOnly) {
		t.Errorf("PIE at dequeue: %v, want ErrEnqueueOnly", err)
	}
	for _, c := range []struct {
		cfg PIEConfig
		key string
	}{
		{PIEConfig{Alpha: -1}, "alpha"},
		{PIEConfig{Beta: math.NaN()}, "beta"},
		{PIEConfig{TUpdate: -1}, "tupdate"},
		{PIEConfig{MarkECNTh: 1.5}, "mark_ecnth"},
		{PIEConfig{Limit: 1 << 30}, "limit"},
	} {
		var pe *ParamError
		if _, err := NewPIE(c.cfg, Enqueue, 1); !errors.As(err, &pe) || pe.Key != c.key {
			t.Errorf("%+v: %v, want an error at %s", c.cfg, err, c.key)
		}
	}
}

func TestPIEAllocatesNothing(t *testing.T) {
	m := newTestPIE(t, PIEConfig{})
	v := &View{Len: 1500, ECN: packet.ECT0, QueueBytes: 100 * 1500, QueuePackets: 100, HeadSojourn: 30 * ms}
	if n := testing.AllocsPerRun(1000, func() {
		v.Now += 100_000
		v.EnqTime = v.Now
		m.Mark(v)
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}
