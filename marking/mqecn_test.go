package marking

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

// Port of the MQ-ECN tests: 10 Gbit/s, RTT 100 µs, λ = 1, so the standard
// threshold is K = C·RTT·λ = 125000 B, and DWRR quanta of 1500 B.
const (
	eqC      = int64(10e9)
	eqRTT    = 100 * eqUS
	eqK      = eqC * eqRTT / 8e9 // 125000 B
	eqQ      = int64(1500)
	eqQRound = eqQ * 8e9 / eqC // 1200 ns: one quantum at line rate
)

// eqEq5 is 001 §3.2.2 Eq. 5 in exact arithmetic, floored to bytes:
// K_i = min(quantum_i/T_round, C) × RTT × λ with quantum in bytes, T_round
// and RTT in ns, C in bit/s.
func eqEq5(quantum, tround, c, rtt int64, lambda float64) int64 {
	rate := new(big.Rat).SetFrac64(quantum*8e9, tround) // bit/s
	if rate.Cmp(new(big.Rat).SetInt64(c)) > 0 {
		rate.SetInt64(c)
	}
	k := rate.Mul(rate, new(big.Rat).SetFrac64(rtt, 8e9))
	k.Mul(k, new(big.Rat).SetFloat64(lambda))
	return new(big.Int).Quo(k.Num(), k.Denom()).Int64()
}

// eqThreshold returns the queue occupancy at which m starts to mark with
// view v (a cut-off marker), checking that it passes just below.
func eqThreshold(tb testing.TB, m Marker, v View) int64 {
	tb.Helper()
	v.QueueBytes = 1 << 40
	if m.Mark(&v) != Mark {
		tb.Fatalf("no mark at %d bytes", v.QueueBytes)
	}
	k := v.Threshold
	below, at := v, v
	below.QueueBytes, at.QueueBytes = k-1, k
	if k > 0 && m.Mark(&below) != Pass {
		tb.Errorf("marked at %d bytes, below its threshold %d", k-1, k)
	}
	if m.Mark(&at) != Mark {
		tb.Errorf("no mark at its threshold %d bytes", k)
	}
	return k
}

func TestMQECNOneQueueGetsStandardThreshold(t *testing.T) {
	// One backlogged DWRR queue: T_round = quantum/C, so K_i = C·RTT·λ.
	m := eqNew(t)(NewMQECN(MQECNConfig{RTT: eqRTT, Lambda: 1}, Enqueue, 8))
	v := View{Quantum: eqQ, RoundTime: eqQRound, LineRate: eqC}
	if got := eqThreshold(t, m, v); got != eqK {
		t.Errorf("one queue: K_i = %d, want the standard threshold %d", got, eqK)
	}
}

func TestMQECNThresholdShrinksWithQueues(t *testing.T) {
	// n equally weighted backlogged queues: T_round = n·quantum/C, so
	// K_i = K/n — the queues together hold about one standard threshold
	// (001 §3.2.2).
	m := eqNew(t)(NewMQECN(MQECNConfig{RTT: eqRTT, Lambda: 1}, Enqueue, 8))
	for n := int64(1); n <= 8; n++ {
		v := View{Queue: int(n - 1), Quantum: eqQ, RoundTime: n * eqQRound, LineRate: eqC}
		got := eqThreshold(t, m, v)
		if want := eqEq5(eqQ, n*eqQRound, eqC, eqRTT, 1); got != want || got != eqK/n {
			t.Errorf("%d queues: K_i = %d, want Eq. 5 = %d = K/n = %d", n, got, want, eqK/n)
		}
	}
}

func TestMQECNWeightedQuanta(t *testing.T) {
	// Quanta 1500 and 4500 both backlogged: T_round = 6000·8/C; the
	// thresholds are in proportion to the quanta and sum to K (001 §3.2.2:
	// "quantum_i ensures that different queues have thresholds in
	// proportion to their weights").
	m := eqNew(t)(NewMQECN(MQECNConfig{RTT: eqRTT, Lambda: 1}, Enqueue, 2))
	tr := (eqQ + 3*eqQ) * 8e9 / eqC
	k0 := eqThreshold(t, m, View{Queue: 0, Quantum: eqQ, RoundTime: tr, LineRate: eqC})
	k1 := eqThreshold(t, m, View{Queue: 1, Quantum: 3 * eqQ, RoundTime: tr, LineRate: eqC})
	if k0 != eqK/4 || k1 != 3*eqK/4 || k0+k1 != eqK {
		t.Errorf("K_0 = %d, K_1 = %d, want %d and %d", k0, k1, eqK/4, 3*eqK/4)
	}
}

func TestMQECNMatchesEq5(t *testing.T) {
	// Across rates, RTTs, λ, quanta and round times, including round times
	// shorter than quantum/C (an underestimated T_round), the threshold is
	// Eq. 5 and never exceeds the standard threshold (the cap by C).
	for _, c := range []int64{1e9, 10e9, 40e9, 100e9} {
		for _, rtt := range []int64{80 * eqUS, 100 * eqUS, 256 * eqUS} {
			for _, lambda := range []float64{1, 0.5, 0.75} {
				m := eqNew(t)(NewMQECN(MQECNConfig{RTT: rtt, Lambda: lambda}, Enqueue, 8))
				k := Standard(rtt, lambda).Bytes(c, 0)
				for _, q := range []int64{1538, 3000, 9000, 200000} {
					for _, tr := range []int64{1, 100, 1200, 9999, 123457, 1e6, 1e9} {
						v := View{Quantum: q, RoundTime: tr, LineRate: c}
						got := eqThreshold(t, m, v)
						if want := eqEq5(q, tr, c, rtt, lambda); got != want {
							t.Errorf("C %d RTT %d λ %g quantum %d T_round %d: K_i = %d, want Eq. 5 = %d", c, rtt, lambda, q, tr, got, want)
						}
						if got > k {
							t.Errorf("C %d quantum %d T_round %d: K_i = %d above the standard threshold %d", c, q, tr, got, k)
						}
					}
				}
			}
		}
	}
}

func TestMQECNStaticCases(t *testing.T) {
	// Strict-priority queues keep the static standard threshold (001
	// §3.4), as do queues before the first T_round sample and schedulers
	// without a quantum.
	m := eqNew(t)(NewMQECN(MQECNConfig{RTT: eqRTT, Lambda: 1}, Enqueue, 8))
	for _, tc := range []struct {
		name string
		v    View
	}{
		{"strict priority", View{Strict: true, Quantum: eqQ, RoundTime: 8 * eqQRound, LineRate: eqC}},
		{"no round time yet", View{Quantum: eqQ, RoundTime: 0, LineRate: eqC}},
		{"no quantum", View{Quantum: 0, RoundTime: 8 * eqQRound, LineRate: eqC}},
	} {
		if got := eqThreshold(t, m, tc.v); got != eqK {
			t.Errorf("%s: K_i = %d, want the standard threshold %d", tc.name, got, eqK)
		}
	}
}

func TestMQECNWFQ(t *testing.T) {
	// 001 §3.4: under WFQ, which has no round, K_i = w_i/w_sum × C×RTT×λ
	// with w_sum the weights of the backlogged (non-empty) queues.
	m := eqNew(t)(NewMQECN(MQECNConfig{RTT: eqRTT, Lambda: 1}, Enqueue, 4))
	for _, tc := range []struct {
		name         string
		weight, busy int64 // w_i and the weights of the backlogged queues, w_i included
		want         int64
	}{
		{"weights 1:3, both backlogged", 1, 4, eqK / 4},
		{"weights 1:3, both backlogged", 3, 4, 3 * eqK / 4},
		{"alone", 1, 1, eqK},
		{"four of weight 5", 5, 20, eqK / 4},
		{"weights 1, 2, 4 backlogged", 2, 7, eqK * 2 / 7},
	} {
		v := View{Weight: tc.weight, WeightSum: 100, BusyWeightSum: tc.busy, LineRate: eqC}
		if got := eqThreshold(t, m, v); got != tc.want {
			t.Errorf("%s: w_i %d, backlogged weights %d: K_i = %d, want %d", tc.name, tc.weight, tc.busy, got, tc.want)
		}
	}

	// A packet that finds its queue empty makes it backlogged: its weight
	// joins w_sum. With K = 3 B, weight 1 and others of weight 3
	// backlogged, K_i = ⌊3·1/4⌋ = 0 and the empty queue is marked; without
	// its own weight K_i would be ⌊3·1/3⌋ = 1 and it would not be.
	small := eqNew(t)(NewMQECN(MQECNConfig{KMin: Bytes(3)}, Enqueue, 2))
	v := View{Weight: 1, BusyWeightSum: 3, QueueBytes: 0, LineRate: eqC}
	if small.Mark(&v) != Mark || v.Threshold != 0 {
		t.Errorf("empty queue of weight 1 next to weight 3: threshold %d, want ⌊3·1/(1+3)⌋ = 0", v.Threshold)
	}
	v = View{Weight: 1, BusyWeightSum: 0, QueueBytes: 2, LineRate: eqC}
	if small.Mark(&v) != Pass {
		t.Error("a queue alone (busy sum 0, its own weight missing) must keep K, not divide by 0")
	}

	// Strict priority above WFQ keeps the static threshold (001 §3.4).
	if got := eqThreshold(t, m, View{Strict: true, Weight: 1, BusyWeightSum: 8, LineRate: eqC}); got != eqK {
		t.Errorf("strict queue above WFQ: K_i = %d, want the standard threshold %d", got, eqK)
	}
	// The probabilistic variant scales both thresholds alike: K_max/4 is
	// the threshold of a certain mark.
	p := eqNew(t)(NewMQECN(MQECNConfig{KMin: Bytes(40000), KMax: Bytes(80000), PMax: 0.1}, Enqueue, 2))
	v = View{Weight: 1, BusyWeightSum: 4, QueueBytes: 20000, LineRate: eqC}
	if got := p.Mark(&v); got != Mark || v.Threshold != 20000 {
		t.Errorf("probabilistic, w 1/4, at K_max/4: %v threshold %d, want mark at 20000", got, v.Threshold)
	}
}

func TestMQECNProbabilistic(t *testing.T) {
	// 001 §3.4: K_i,min = K_min·min(quantum_i/(C·T_round), 1), likewise
	// K_i,max, and P_i,max = P_max. Two equal backlogged queues halve
	// both thresholds.
	const kmin, kmax, pmax = 50000, 150000, 0.2
	m := eqNew(t)(NewMQECN(MQECNConfig{KMin: Bytes(kmin), KMax: Bytes(kmax), PMax: pmax, Seed: 3}, Enqueue, 2))
	base := View{Quantum: eqQ, RoundTime: 2 * eqQRound, LineRate: eqC}
	const n = 100000
	for _, x := range []int64{0, kmin/2 - 1, kmin / 2, 40000, 50000, 60000, kmax/2 - 1, kmax / 2, kmax} {
		want := 0.0
		switch {
		case x >= kmax/2:
			want = 1
		case x >= kmin/2:
			want = pmax * float64(x-kmin/2) / float64(kmax/2-kmin/2)
		}
		v := base
		v.QueueBytes = x
		if got := eqMarkFraction(m, v, n); !eqWithin(got, want, n) {
			t.Errorf("occupancy %d: marked %.4f, want %.4f", x, got, want)
		}
	}
	// One queue alone gets the unscaled pair.
	v := base
	v.RoundTime, v.QueueBytes = eqQRound, kmax
	if m.Mark(&v) != Mark || v.Threshold != kmax {
		t.Errorf("one queue at K_max: threshold %d, want %d", v.Threshold, kmax)
	}
}

func TestMQECNConfigErrors(t *testing.T) {
	if _, err := NewMQECN(MQECNConfig{RTT: eqRTT}, Dequeue, 1); !errors.Is(err, ErrEnqueueOnly) {
		t.Errorf("dequeue: error %v, want ErrEnqueueOnly", err)
	}
	for _, tc := range []struct {
		name string
		cfg  MQECNConfig
		want string
	}{
		{"no rtt", MQECNConfig{}, "rtt 0 ns out of range (0, 10000000000] ns"},
		{"lambda", MQECNConfig{RTT: eqRTT, Lambda: -1}, "lambda -1 out of range (0, 16]"},
		{"both", MQECNConfig{RTT: eqRTT, KMin: Bytes(1)}, "give one or the other"},
		{"kmax alone", MQECNConfig{KMax: Bytes(1)}, "kmax 1B given without kmin"},
		{"order", MQECNConfig{KMin: Bytes(10), KMax: Bytes(5)}, "above kmax"},
		{"pmax", MQECNConfig{KMin: Bytes(10), KMax: Bytes(50), PMax: 2}, "pmax 2 out of range"},
	} {
		_, err := NewMQECN(tc.cfg, Enqueue, 8)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "marking: mqecn: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestMQECNMarkAllocs(t *testing.T) {
	m := eqNew(t)(NewMQECN(MQECNConfig{KMin: Standard(eqRTT, 1), KMax: Standard(2*eqRTT, 1)}, Enqueue, 8))
	v := View{Quantum: eqQ, LineRate: eqC}
	i := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		v.RoundTime, v.QueueBytes = (i%8+1)*eqQRound, i*97%200000
		m.Mark(&v)
	}); n != 0 {
		t.Errorf("Mark allocates %v times per packet, want 0", n)
	}
}

func BenchmarkMQECN(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  MQECNConfig
	}{
		{"cutoff", MQECNConfig{RTT: eqRTT}},
		{"probabilistic", MQECNConfig{KMin: Bytes(50000), KMax: Bytes(150000)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := eqNew(b)(NewMQECN(bc.cfg, Enqueue, 8))
			v := View{Quantum: eqQ, LineRate: eqC}
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				i++
				v.Queue, v.RoundTime, v.QueueBytes = int(i&7), (i&7+1)*eqQRound, (i*7919)%150000
				m.Mark(&v)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
		})
	}
}
