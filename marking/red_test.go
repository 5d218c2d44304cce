package marking

import (
	"math"
	"strings"
	"testing"
)

// eqNew returns a function that takes a constructor's results and returns
// the marker, failing the test on an error: eqNew(t)(NewRED(cfg, s, n)).
func eqNew(tb testing.TB) func(Marker, error) Marker {
	return func(m Marker, err error) Marker {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return m
	}
}

// eqMarkFraction feeds n packets with view v to m and returns the fraction
// it marked.
func eqMarkFraction(m Marker, v View, n int) float64 {
	marks := 0
	for range n {
		w := v
		if m.Mark(&w) == Mark {
			marks++
		}
	}
	return float64(marks) / float64(n)
}

// eqWithin reports whether a measured fraction is within 5 standard
// deviations of the binomial mean p over n trials (or exactly p when p is
// 0 or 1).
func eqWithin(got, p float64, n int) bool {
	sigma := math.Sqrt(p * (1 - p) / float64(n))
	return math.Abs(got-p) <= 5*sigma
}

// eqCountedFraction is the fraction of packets original RED marks at a
// steady occupancy whose profile gives p_b (Floyd and Jacobson 1993, §4):
// a mark comes at the n-th packet after the previous one with probability
// Π_{k<n}(1 − p_a(k))·p_a(n), p_a(n) = p_b/(1 − n·p_b) (1 once that
// reaches 1), and the marks renew, so the fraction is 1/E[gap].
func eqCountedFraction(pb float64) float64 {
	if pb <= 0 {
		return 0
	}
	survive, mean := 1.0, 0.0
	for n := 1.0; survive > 0; n++ {
		pa := 1.0
		if d := 1 - n*pb; d > pb {
			pa = pb / d
		}
		mean += n * survive * pa
		survive *= 1 - pa
	}
	return 1 / mean
}

func TestREDCountCorrection(t *testing.T) {
	// Original RED (Floyd and Jacobson 1993, Fig. 2): p_a = p_b/(1 −
	// count·p_b), count the packets since the last mark. At p_b = 1/20 the
	// gap between marks is uniform on 1..19 and a tenth of the packets are
	// marked, twice p_b; without the correction the gaps are geometric,
	// some longer than 19, and the fraction is p_b. 002 §IV-B: BCC's shared
	// buffer ECN/RED "follows the original RED".
	const kmin, kmax, pmax, x = 100000, 200000, 0.1, 150000 // p_b = 0.05
	const n = 200000
	for _, tc := range []struct {
		count Count
		want  float64
	}{
		{CountOn, eqCountedFraction(0.05)},
		{CountOff, 0.05},
		{CountDefault, 0.05}, // plain RED defaults to p_b, WRED as chips do it
	} {
		m := eqNew(t)(NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(kmin), KMax: Bytes(kmax), PMax: pmax, Count: tc.count, Seed: 5}, Enqueue, 1))
		gaps := map[int]int{}
		last, marks := -1, 0
		for i := range n {
			v := View{PortBytes: x}
			if m.Mark(&v) == Mark {
				marks++
				if last >= 0 {
					gaps[i-last]++
				}
				last = i
			}
		}
		got := float64(marks) / n
		if !eqWithin(got, tc.want, n) {
			t.Errorf("count %v: marked %.4f, want %.4f", tc.count, got, tc.want)
		}
		longest := 0
		for g := range gaps {
			longest = max(longest, g)
		}
		if tc.count == CountOn {
			if math.Abs(tc.want-0.1) > 1e-9 {
				t.Fatalf("eqCountedFraction(0.05) = %g, want 2·p_b = 0.1", tc.want)
			}
			if longest > 19 {
				t.Errorf("count on: a gap of %d packets between marks, want at most 1/p_b − 1 = 19", longest)
			}
			// Uniform gaps: each of 1..19 takes 1/19 of them.
			total := marks - 1
			for g := 1; g <= 19; g++ {
				p := 1.0 / 19
				if f := float64(gaps[g]) / float64(total); !eqWithin(f, p, total) {
					t.Errorf("count on: gap %d in %.4f of the marks, want %.4f (uniform)", g, f, p)
				}
			}
		} else if longest <= 19 {
			t.Errorf("count %v: longest gap %d: want geometric gaps, some above 19", tc.count, longest)
		}
	}
}

func TestREDCountResets(t *testing.T) {
	// count is −1 below K_min, 0 at a mark (also at or above K_max), grows
	// by one per packet in between, and is kept per average: per queue
	// with MeasureQueue. At p_b = 0.25 the 3rd packet after a mark has
	// p_a = 0.25/(1 − 3·0.25) = 1, so no gap exceeds 3.
	m := eqNew(t)(NewRED(REDConfig{Measure: MeasureQueue, KMin: Bytes(1000), KMax: Bytes(2000), PMax: 0.5, Count: CountOn, Seed: 9}, Enqueue, 2)).(*red)
	mark := func(q int, x int64) Verdict {
		v := View{Queue: q, QueueBytes: x}
		return m.Mark(&v)
	}
	if c := m.state[0].count; c != -1 {
		t.Fatalf("new marker: count %d, want -1", c)
	}
	if mark(0, 2000) != Mark || m.state[0].count != 0 {
		t.Fatalf("at K_max: count %d, want a mark and 0", m.state[0].count)
	}
	want, marks := int64(0), 0
	for i := range 1000 {
		if mark(0, 1500) == Mark {
			want = 0
			marks++
		} else {
			want++
		}
		if c := m.state[0].count; c != want {
			t.Fatalf("packet %d in range: count %d, want %d", i, c, want)
		}
		if want >= 3 {
			t.Fatalf("packet %d: %d packets since the last mark, want at most 2 (p_a = 1 at count 3)", i, want)
		}
	}
	if marks < 1000/3 {
		t.Errorf("%d marks in 1000 packets, want at least one per 3", marks)
	}
	if c := m.state[1].count; c != -1 {
		t.Errorf("queue 1's count %d moved with queue 0's packets", c)
	}
	if mark(0, 500); m.state[0].count != -1 {
		t.Errorf("below K_min: count %d, want -1", m.state[0].count)
	}
}

func TestREDProfile(t *testing.T) {
	// RED's marking probability rises linearly from 0 at K_min to P_max at
	// K_max and is 1 at and above K_max (002 §IV-C; 001 §3.4).
	const kmin, kmax, pmax = 100000, 200000, 0.1
	m := eqNew(t)(NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(kmin), KMax: Bytes(kmax), PMax: pmax, Seed: 1}, Enqueue, 8))
	const n = 200000
	for _, x := range []int64{0, kmin - 1, kmin, 110000, 125000, 150000, 175000, 190000, kmax - 1, kmax, 300000} {
		want := 0.0
		switch {
		case x >= kmax:
			want = 1
		case x >= kmin:
			want = pmax * float64(x-kmin) / float64(kmax-kmin)
		}
		got := eqMarkFraction(m, View{PortBytes: x}, n)
		if !eqWithin(got, want, n) {
			t.Errorf("occupancy %d: marked %.5f of %d packets, want %.5f", x, got, n, want)
		}
	}
}

func TestREDCutOff(t *testing.T) {
	// K_min = K_max gives DCTCP's cut-off at K: every packet at or above
	// K is marked, none below (001 §2.2 footnote 1).
	const k = 65 * 1500 // DCTCP's 65 packets at 10G (001 §2.2 footnote 3)
	for _, cfg := range []REDConfig{
		CutOff(MeasureQueue, Packets(65)),
		{Measure: MeasureQueue, KMin: Bytes(k)}, // an unset KMax equals KMin
		{Measure: MeasureQueue, KMin: Bytes(k), KMax: Bytes(k), PMax: 0.01},
	} {
		m := eqNew(t)(NewRED(cfg, Enqueue, 1))
		for _, x := range []int64{0, 1, k - 1500, k - 1} {
			v := View{QueueBytes: x}
			if got := m.Mark(&v); got != Pass {
				t.Errorf("%+v: occupancy %d below K = %d: %v, want pass", cfg, x, k, got)
			}
		}
		for _, x := range []int64{k, k + 1, 10 * k} {
			v := View{QueueBytes: x}
			if got := m.Mark(&v); got != Mark || v.Value != x || v.Threshold != k {
				t.Errorf("%+v: occupancy %d ≥ K = %d: %v (value %d, threshold %d), want mark (%d, %d)", cfg, x, k, got, v.Value, v.Threshold, x, k)
			}
		}
	}
}

func TestREDMeasureSelectsField(t *testing.T) {
	// A per-queue, per-port and per-pool marker read only their own
	// occupancy (001 §2.1).
	const k = 10000
	for _, m := range []Measure{MeasureQueue, MeasurePort, MeasurePool} {
		r := eqNew(t)(NewRED(CutOff(m, Bytes(k)), Dequeue, 4))
		for _, field := range []Measure{MeasureQueue, MeasurePort, MeasurePool} {
			v := View{Queue: 2}
			switch field {
			case MeasureQueue:
				v.QueueBytes = 2 * k
			case MeasurePort:
				v.PortBytes = 2 * k
			case MeasurePool:
				v.PoolBytes = 2 * k
			}
			want := Pass
			if field == m {
				want = Mark
			}
			if got := r.Mark(&v); got != want {
				t.Errorf("measure %v, only %v above K: %v, want %v", m, field, got, want)
			}
		}
	}
}

func TestREDStageIndependent(t *testing.T) {
	// The same view gives the same decision at enqueue and at dequeue: RED
	// reads occupancies only, and both markers draw the same random numbers
	// from the same seed.
	cfg := REDConfig{Measure: MeasureQueue, KMin: Bytes(20000), KMax: Bytes(60000), PMax: 0.5, Weight: 0.1, Seed: 7}
	enq := eqNew(t)(NewRED(cfg, Enqueue, 2))
	deq := eqNew(t)(NewRED(cfg, Dequeue, 2))
	marks := 0
	for i := range 20000 {
		x := int64((i * 7919) % 80000)
		v := View{Now: int64(i) * 1200, Queue: i % 2, QueueBytes: x, LineRate: 10e9}
		a, b := v, v
		ra, rb := enq.Mark(&a), deq.Mark(&b)
		if ra != rb || a != b {
			t.Fatalf("packet %d: enqueue %v %+v, dequeue %v %+v", i, ra, a, rb, b)
		}
		if ra == Mark {
			marks++
		}
	}
	if marks == 0 {
		t.Fatal("no packet marked; the test exercised nothing")
	}
}

func TestREDAverage(t *testing.T) {
	// With weight w_q, avg ← (1 − w_q)·avg + w_q·q on every packet; a step
	// from 0 to q gives avg_n = q·(1 − (1 − w_q)^n) after n packets.
	const w, q, k = 0.25, 1000.0, 900
	m := eqNew(t)(NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(k), Weight: w}, Enqueue, 1))
	first := 0
	for n := 1; n <= 30; n++ {
		v := View{Now: int64(n), PortBytes: q, LineRate: 1e9}
		got := m.Mark(&v)
		avg := int64(q * (1 - math.Pow(1-w, float64(n))))
		want := Pass
		if avg >= k {
			want = Mark
			if first == 0 {
				first = n
			}
		}
		if got != want || (got == Mark && v.Value != avg) {
			t.Fatalf("packet %d: %v (value %d), want %v with avg %d", n, got, v.Value, want, avg)
		}
	}
	// The instantaneous occupancy (1000) is above K from the first packet;
	// the average crosses it only when (1 − w)^n ≤ 1 − K/q.
	if wantFirst := int(math.Ceil(math.Log(1-float64(k)/q) / math.Log(1-w))); first != wantFirst {
		t.Errorf("first mark at packet %d, want %d", first, wantFirst)
	}
}

func TestREDAverageIdleDecay(t *testing.T) {
	// A packet that finds the queue empty decays the average by
	// (1 − w_q)^(m+1), m = the MTU-sized packets the line could have sent
	// since the previous packet (RED's idle-time rule). K = 0 makes every
	// packet a mark, so View.Value shows the average.
	const w, mtu, rate = 0.5, 1500, 1e9 // one MTU takes 12 µs at 1 Gbit/s
	m := eqNew(t)(NewRED(REDConfig{Measure: MeasureQueue, KMin: Bytes(0), Weight: w, MTU: mtu}, Enqueue, 2))
	v := View{Now: 0, Queue: 1, QueueBytes: 64000, LineRate: rate}
	m.Mark(&v) // avg = 32000
	if v.Value != 32000 {
		t.Fatalf("after one packet of 64000 B: avg %d, want 32000", v.Value)
	}
	for _, tc := range []struct {
		dt   int64 // ns since the previous packet
		want float64
	}{
		{0, 16000},                       // back to back: one zero sample
		{12 * eqUS, 16000 * 0.25},        // one idle slot: (1−w)^2
		{12*eqUS*5 + 11*eqUS, 4000 / 64}, // 5 whole slots: (1−w)^6
	} {
		v.Now += tc.dt
		v.QueueBytes = 0
		m.Mark(&v)
		if v.Value != int64(tc.want) {
			t.Errorf("after %d ns idle: avg %d, want %d", tc.dt, v.Value, int64(tc.want))
		}
	}
	// Queue 0 has its own average, untouched by queue 1's packets.
	v0 := View{Now: v.Now, Queue: 0, QueueBytes: 1000, LineRate: rate}
	m.Mark(&v0)
	if v0.Value != 500 {
		t.Errorf("queue 0's first packet: avg %d, want 500", v0.Value)
	}
}

func TestREDIdleTimeFromQueueEmpty(t *testing.T) {
	// Floyd and Jacobson's q_time is "the start of the queue idle time":
	// m counts the MTU-sized packets the line could have sent since the
	// queue went empty, not since the previous packet. Here the previous
	// packet arrived at 0 into a backlog that drained only at 60 µs (5
	// slots of 12 µs later), and the next packet finds the queue empty at
	// 72 µs: one idle slot, avg ← (1 − w)^(1+1)·avg, not (1 − w)^(6+1).
	// The same holds for the port with PortEmptySince; the pool's idle time
	// is not reported, so it counts from the previous packet.
	const w, mtu, rate = 0.5, 1500, 1e9 // one MTU takes 12 µs at 1 Gbit/s
	for _, tc := range []struct {
		measure Measure
		set     func(v *View, bytes, emptySince int64)
		want    float64
	}{
		{MeasureQueue, func(v *View, b, e int64) { v.QueueBytes, v.QueueEmptySince = b, e }, 32000 * 0.25},
		{MeasurePort, func(v *View, b, e int64) { v.PortBytes, v.PortEmptySince = b, e }, 32000 * 0.25},
		{MeasurePool, func(v *View, b, _ int64) { v.PoolBytes = b }, 32000.0 / 128},
	} {
		m := eqNew(t)(NewRED(REDConfig{Measure: tc.measure, KMin: Bytes(0), Weight: w, MTU: mtu}, Enqueue, 1))
		v := View{Now: 0, LineRate: rate}
		tc.set(&v, 64000, 0)
		m.Mark(&v) // avg = 32000
		v = View{Now: 72 * eqUS, LineRate: rate}
		tc.set(&v, 0, 60*eqUS)
		m.Mark(&v)
		if v.Value != int64(tc.want) {
			t.Errorf("%v: empty since 60 µs, previous packet at 0, now 72 µs: avg %d, want %d", tc.measure, v.Value, int64(tc.want))
		}
		// A second packet in the same idle period (the first was dropped
		// and left the queue empty) decays from the first, not again from
		// q_time: one more slot.
		v = View{Now: 84 * eqUS, LineRate: rate}
		tc.set(&v, 0, 60*eqUS)
		m.Mark(&v)
		if want := int64(tc.want / 4); v.Value != want {
			t.Errorf("%v: second packet of the idle period at 84 µs: avg %d, want %d", tc.measure, v.Value, want)
		}
	}
}

func TestREDMinimumSplit(t *testing.T) {
	// 001 §2.2.2: a standard threshold of 16 packets split over 8 queues
	// of equal weight gives each queue the minimum threshold of 2 packets;
	// unequal weights split it in proportion (Eq. 2).
	m := eqNew(t)(NewRED(Minimum(Packets(16)), Enqueue, 8))
	for _, tc := range []struct {
		weight, sum int64
		want        int64
	}{
		{1, 8, 2 * 1500},
		{1538, 8 * 1538, 2 * 1500}, // DWRR quanta as weights: only the ratio counts
		{3, 4, 12 * 1500},
		{0, 0, 16 * 1500}, // no weights reported: the whole K
	} {
		v := View{QueueBytes: tc.want - 1, Weight: tc.weight, WeightSum: tc.sum}
		if got := m.Mark(&v); got != Pass {
			t.Errorf("w %d/%d: %d bytes: %v, want pass below K_i = %d", tc.weight, tc.sum, v.QueueBytes, got, tc.want)
		}
		v.QueueBytes = tc.want
		if got := m.Mark(&v); got != Mark || v.Threshold != tc.want {
			t.Errorf("w %d/%d: %d bytes: %v at threshold %d, want mark at K_i = %d", tc.weight, tc.sum, v.QueueBytes, got, v.Threshold, tc.want)
		}
	}
}

func TestREDThresholdFromViewRate(t *testing.T) {
	// A standard threshold without a configured line rate follows the
	// port's rate in the View: K = C·RTT·λ.
	m := eqNew(t)(NewRED(CutOff(MeasurePort, Standard(100*eqUS, 1)), Enqueue, 1))
	v := View{PortBytes: 1 << 40}
	if got := m.Mark(&v); got != Pass {
		t.Errorf("line rate unknown: %v, want pass (K cannot be resolved)", got)
	}
	for _, c := range []int64{10e9, 1e9, 25e9} {
		k := c * 100 * eqUS / 8e9
		below, at := View{PortBytes: k - 1, LineRate: c}, View{PortBytes: k, LineRate: c}
		if m.Mark(&below) != Pass || m.Mark(&at) != Mark || at.Threshold != k {
			t.Errorf("C = %d: threshold %d, want %d", c, at.Threshold, k)
		}
	}
}

func TestREDConfigErrors(t *testing.T) {
	ok := REDConfig{KMin: Bytes(1000)}
	for _, tc := range []struct {
		name   string
		cfg    REDConfig
		stage  Stage
		queues int
		want   string
	}{
		{"stage", ok, Stage(7), 1, "stage 7 is not a stage"},
		{"queues", ok, Enqueue, 0, "queues 0 out of range [1, 1024]"},
		{"measure", REDConfig{KMin: Bytes(1), Measure: 9}, Enqueue, 1, "measure 9 out of range"},
		{"kmin unset", REDConfig{}, Enqueue, 1, "kmin is not set"},
		{"kmin above kmax", REDConfig{KMin: Bytes(2000), KMax: Bytes(1000)}, Enqueue, 1, "kmin 2000B (2000 bytes) above kmax 1000B (1000 bytes)"},
		{"mixed units without rate", REDConfig{KMin: Bytes(2000), KMax: Delay(10 * eqUS)}, Enqueue, 1, "set line_rate > 0"},
		{"pmax", REDConfig{KMin: Bytes(1), KMax: Bytes(2), PMax: 1.5}, Enqueue, 1, "pmax 1.5 out of range (0, 1]"},
		{"weight", REDConfig{KMin: Bytes(1), Weight: -0.1}, Enqueue, 1, "weight -0.1 out of range [0, 1]"},
		{"weight NaN", REDConfig{KMin: Bytes(1), Weight: math.NaN()}, Enqueue, 1, "weight NaN out of range"},
		{"split on port", REDConfig{KMin: Bytes(1), Split: true, Measure: MeasurePort}, Enqueue, 1, "split needs measure queue"},
		{"count", REDConfig{KMin: Bytes(1), Count: 7}, Enqueue, 1, "count 7 out of range"},
		{"mtu", REDConfig{KMin: Bytes(1), MTU: -1}, Enqueue, 1, "mtu -1 bytes out of range"},
		{"line rate", REDConfig{KMin: Bytes(1), LineRate: -1}, Enqueue, 1, "line_rate -1 bit/s out of range"},
	} {
		_, err := NewRED(tc.cfg, tc.stage, tc.queues)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "marking: red: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// Mixed units are fine with a line rate, and ordered by it.
	if _, err := NewRED(REDConfig{KMin: Bytes(2000), KMax: Delay(10 * eqUS), LineRate: 10e9}, Enqueue, 1); err != nil {
		t.Errorf("mixed units at 10G: %v", err)
	}
	if _, err := NewRED(REDConfig{KMin: Bytes(20000), KMax: Delay(10 * eqUS), LineRate: 10e9}, Enqueue, 1); err == nil {
		t.Error("kmin 20000 B above kmax 10 µs = 12500 B at 10G: no error")
	}
}

func TestREDMarkAllocs(t *testing.T) {
	for _, count := range []Count{CountOff, CountOn} {
		m := eqNew(t)(NewRED(REDConfig{Measure: MeasureQueue, KMin: Standard(100*eqUS, 1), KMax: Standard(200*eqUS, 1), Weight: 0.002, Split: true, Count: count}, Enqueue, 8))
		v := View{Queue: 3, QueueBytes: 150000, LineRate: 10e9, Weight: 1, WeightSum: 1}
		i := int64(0)
		if n := testing.AllocsPerRun(1000, func() {
			i++
			v.Now = i * 1200
			v.QueueBytes = 100000 + i%100000
			m.Mark(&v)
		}); n != 0 {
			t.Errorf("count %v: Mark allocates %v times per packet, want 0", count, n)
		}
	}
}

func BenchmarkRED(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  REDConfig
	}{
		{"cutoff", CutOff(MeasurePort, Packets(65))},
		{"probabilistic", REDConfig{Measure: MeasurePool, KMin: Bytes(100000), KMax: Bytes(200000), PMax: 0.1}},
		{"ewma", REDConfig{Measure: MeasureQueue, KMin: Bytes(100000), KMax: Bytes(200000), Weight: 0.002}},
		{"counted", REDConfig{Measure: MeasurePool, KMin: Bytes(100000), KMax: Bytes(200000), PMax: 0.1, Count: CountOn}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := eqNew(b)(NewRED(bc.cfg, Enqueue, 8))
			v := View{LineRate: 10e9}
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				i++
				x := 50000 + (i*7919)%200000
				v.Now, v.Queue, v.QueueBytes, v.PortBytes, v.PoolBytes = i*1200, int(i&7), x, x, x
				m.Mark(&v)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
		})
	}
}
