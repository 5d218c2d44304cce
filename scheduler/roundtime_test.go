package scheduler

import (
	"fmt"
	"github.com/ecnswitch/ecnswitch/packet"
	"math"
	"testing"
	"time"
)

// TestRoundTimeConverges: with n equally weighted, backlogged round-robin
// queues of quantum Q drained at rate C, every round sends n·Q bytes, so
// each sample of 001 §3.3.1 is n·Q/C and T_round converges to it (001 §3.2:
// "Tround is the total time to serve all queues once").
//
// WRR sends at most Q per round (001 §3.3.2: "in each round queue i can at
// most transmit Q_i") and carries nothing over, so with frames whose charged
// size s does not divide Q a round sends ⌊Q/s⌋·s per queue, T_round
// converges to n·⌊Q/s⌋·s/C, and MQ-ECN's rate estimate quantum_i/T_round
// (001 Eq. 4) is at least the C/n each queue gets: it may overestimate the
// fair share when sizes do not divide Q, never underestimate it.
func TestRoundTimeConverges(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		n        int
		q        int64 // bytes as charged
		frame    int   // Desc.Len
		rate     int64
		overhead Overhead
	}{
		{DWRR, 1, 3000, 1500, 10e9, OverheadNone},
		{DWRR, 2, 3000, 1500, 10e9, OverheadNone},
		{DWRR, 4, 3000, 1500, 10e9, OverheadNone},
		{DWRR, 8, 3000, 1500, 10e9, OverheadNone},
		{DWRR, 8, 1500, 1500, 10e9, OverheadNone},
		{DWRR, 4, 2 * 1538, 1514, 1e9, OverheadEthernet},
		{DWRR, 8, 1538, 1514, 995e6, OverheadEthernet}, // the prototype's 99.5% shaper
		{WRR, 1, 3000, 1500, 10e9, OverheadNone},
		{WRR, 4, 3000, 1500, 10e9, OverheadNone},
		{WRR, 8, 4500, 1500, 1e9, OverheadNone},
		{WRR, 1, 4000, 1500, 10e9, OverheadNone},      // 2 frames, 3000 B per round
		{WRR, 4, 4000, 1500, 10e9, OverheadNone},      // 2 frames, 3000 B per round
		{WRR, 3, 1600, 1500, 1e9, OverheadNone},       // 1 frame, 1500 B per round
		{WRR, 8, 4000, 1514, 995e6, OverheadEthernet}, // 2 wire frames of 1538, 3076 B per round
	} {
		t.Run(fmt.Sprintf("%v/n=%d/Q=%d/C=%g/%v", tc.kind, tc.n, tc.q, float64(tc.rate), tc.overhead), func(t *testing.T) {
			qc := make([]QueueConfig, tc.n)
			src := make([]source, tc.n)
			for i := range qc {
				qc[i].Quantum = tc.q
				src[i] = source{Saturate: 8, Size: func(int) int { return tc.frame }}
			}
			s := mustNew(t, Config{Kind: tc.kind, Queues: qc, LineRate: tc.rate, Overhead: tc.overhead, MTU: tc.frame})
			sh := mustShaper(t, ShaperConfig{Rate: tc.rate, Bucket: 2500, Overhead: tc.overhead})
			m := newSim(t, s, sh, src)
			served := tc.q // bytes a queue sends per round, as charged
			if tc.kind == WRR {
				w := int64(tc.overhead.Wire(tc.frame))
				served = tc.q / w * w
			}
			want := float64(tc.n) * float64(served) * 8e9 / float64(tc.rate) // n·Q/C in ns
			m.run(int64(200 * want))
			got := s.RoundTime(m.now)
			if math.Abs(float64(got)-want) > 1 {
				t.Errorf("T_round = %d ns, want n·%d B/C = %.1f ns", got, served, want)
			}
			// quantum/T_round ≥ C/n, i.e. T_round ≤ n·Q/C, to the
			// nanosecond T_round is rounded to.
			if nq := float64(tc.n) * float64(tc.q) * 8e9 / float64(tc.rate); float64(got) > nq+1 {
				t.Errorf("T_round = %d ns above n·Q/C = %.1f ns: quantum/T_round = %.4g bit/s underestimates the queue's share C/n = %.4g bit/s",
					got, nq, float64(tc.q)*8e9/float64(got), float64(tc.rate)/float64(tc.n))
			}
		})
	}
}

// TestRoundTimeMixedSizes: with mixed packet sizes a DWRR round still sends
// Q_i per queue on average (001 §3.3.2: sent_i/M ∈ [Q_i − MTU/M, Q_i + MTU/M]),
// so T_round averages n·Q/C.
func TestRoundTimeMixedSizes(t *testing.T) {
	t.Run("DWRR", testRoundTimeMixedSizesDWRR)
	t.Run("WRR", testRoundTimeMixedSizesWRR)
}

// testRoundTimeMixedSizesWRR: a WRR round sends at most Q_i per queue and
// more than Q_i − MTU (it stops before the packet that would exceed Q_i,
// 001 §3.3.2), so with mixed packet sizes T_round averages at most n·Q/C and
// quantum_i/T_round never underestimates a queue's share C/n.
func testRoundTimeMixedSizesWRR(t *testing.T) {
	const n, q, c, mtu = 4, 6000, 10e9, 1514
	qc := make([]QueueConfig, n)
	src := make([]source, n)
	for i := range qc {
		qc[i].Quantum = q
		src[i] = source{Saturate: 8, Size: sizes(uint64(i)+100, 64, mtu)}
	}
	s := mustNew(t, Config{Kind: WRR, Queues: qc, LineRate: c, MTU: mtu})
	m := newSim(t, s, mustShaper(t, ShaperConfig{Rate: c, Bucket: 2500}), src)
	m.run(1e6)
	var sum, cnt float64
	m.OnSend = func(_ *packet.Desc, now int64) {
		sum += float64(s.RoundTime(now))
		cnt++
	}
	m.run(21e6)
	hi, lo := n*q*8e9/c, n*(q-mtu)*8e9/c
	if got := sum / cnt; got > hi || got <= lo {
		t.Errorf("mean T_round = %.1f ns, want in (n·(Q−MTU)/C, n·Q/C] = (%.1f, %.1f] ns", got, lo, hi)
	}
}

func testRoundTimeMixedSizesDWRR(t *testing.T) {
	const n, q, c = 4, 6000, 10e9
	qc := make([]QueueConfig, n)
	src := make([]source, n)
	for i := range qc {
		qc[i].Quantum = q
		src[i] = source{Saturate: 8, Size: sizes(uint64(i)+100, 64, 1514)}
	}
	s := mustNew(t, Config{Kind: DWRR, Queues: qc, LineRate: c})
	m := newSim(t, s, mustShaper(t, ShaperConfig{Rate: c, Bucket: 2500}), src)
	m.run(1e6)
	var sum, cnt float64
	m.OnSend = func(_ *packet.Desc, now int64) {
		sum += float64(s.RoundTime(now))
		cnt++
	}
	m.run(21e6)
	want := n * q * 8e9 / c
	if got := sum / cnt; math.Abs(got/want-1) > 0.01 {
		t.Errorf("mean T_round = %.1f ns, want n·Q/C = %.1f ns", got, want)
	}
}

// TestRoundTimeFirstSample checks the estimator's arithmetic on one packet:
// a queue activated at its enqueue time starts its turn then (001 §4.2,
// Tstart), its turn ends when its last packet has left the wire, and the
// first sample is smoothed from T_round = 0, as in the prototype.
func TestRoundTimeFirstSample(t *testing.T) {
	s := mustNew(t, Config{Kind: DWRR, NumQueues: 2, LineRate: 10e9, Beta: 0.5})
	if rt := s.RoundTime(0); rt != 0 {
		t.Fatalf("RoundTime before any sample = %d, want 0", rt)
	}
	s.Enqueue(pkt(1, 1500), 100)
	s.Dequeue(600) // ends on the wire at 600 + 1500·8/10 = 1800; sample 1700
	if rt := s.RoundTime(600); rt != 850 {
		t.Fatalf("RoundTime after one sample = %d, want 0.5·0 + 0.5·1700 = 850", rt)
	}
	s.Enqueue(pkt(0, 1000), 2000)
	s.Dequeue(2000) // ends at 2800; sample 800
	if rt := s.RoundTime(2000); rt != 825 {
		t.Fatalf("RoundTime after two samples = %d, want 0.5·850 + 0.5·800 = 825", rt)
	}
}

// TestRoundTimeIdleDecay: once the port has been idle for T_idle, T_round
// decays as if a sample of 0 arrived, once per full T_idle (001 §3.3.1), and
// it resets to 0 after more than 10 idle slots (the prototype's limit,
// prior-art §3). The decay is visible to RoundTime while idle and is
// committed, once, by the next arrival.
func TestRoundTimeIdleDecay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		frame int
		tIdle int64
	}{
		// 001 §5: "Tidle to the transmission time of a MTU (12µs in 1G testbed)".
		{"default 1G", Config{Kind: DWRR, LineRate: 1e9, MTU: 1500}, 1500, 12000},
		{"default wire MTU", Config{Kind: DWRR, LineRate: 1e9, Overhead: OverheadEthernet}, 1514, 1538 * 8},
		{"explicit", Config{Kind: WRR, LineRate: 1e9, MTU: 1500, TIdle: 30 * time.Microsecond, Beta: 0.5}, 1500, 30000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.NumQueues = 2
			s := mustNew(t, cfg)
			beta := cfg.Beta
			if beta == 0 {
				beta = 0.75
			}
			// Converge: two queues of MTU-sized frames at 1 Gbit/s, one
			// packet per wire time, one packet per turn; then drain.
			wire := int64(cfg.Overhead.Wire(tc.frame)) * 8 // ns at 1 Gbit/s
			var now int64
			for i := range 4 {
				s.Enqueue(pkt(i%2, tc.frame), 0)
			}
			for i := range 400 {
				d := s.Dequeue(now)
				if i < 396 {
					s.Enqueue(pkt(int(d.Queue), tc.frame), now)
				}
				now += wire
			}
			if _, n := s.Len(); n != 0 {
				t.Fatalf("%d packets left", n)
			}
			idleSince := now // the last packet left the wire one wire time after its dequeue
			t0 := float64(s.RoundTime(idleSince))
			if want := float64(2*s.Queue(0).Quantum) * 8; math.Abs(t0-want) > 1 {
				t.Fatalf("converged T_round = %.0f, want 2·Q/C = %.0f", t0, want)
			}
			for k := int64(1); k <= 12; k++ {
				before := float64(s.RoundTime(idleSince + k*tc.tIdle - 1))
				at := float64(s.RoundTime(idleSince + k*tc.tIdle))
				wantBefore := t0 * math.Pow(beta, float64(k-1))
				wantAt := t0 * math.Pow(beta, float64(k))
				if k > 10 {
					wantAt = 0
				}
				if k > 11 {
					wantBefore = 0
				}
				if math.Abs(before-wantBefore) > 1 || math.Abs(at-wantAt) > 1 {
					t.Errorf("idle %d·T_idle−1: T_round %.0f, want %.0f; at %d·T_idle: %.0f, want %.0f",
						k, before, wantBefore, k, at, wantAt)
				}
			}

			// An arrival after 3 idle slots commits β³·T_round, once.
			arrive := idleSince + 3*tc.tIdle + 7
			s.Enqueue(pkt(0, 1500), arrive)
			want3 := t0 * beta * beta * beta
			for _, at := range []int64{arrive, arrive + 100*tc.tIdle} {
				if got := float64(s.RoundTime(at)); math.Abs(got-want3) > 1 {
					t.Errorf("busy at %d: T_round %.0f, want β³·T0 = %.0f", at, got, want3)
				}
			}
		})
	}
}

func TestRoundTimeOnlyRoundRobin(t *testing.T) {
	for _, k := range []Kind{SP, WFQ} {
		s := mustNew(t, Config{Kind: k, LineRate: 1e9})
		for i := range 100 {
			s.Enqueue(pkt(i%8, 1500), int64(i))
			s.Dequeue(int64(i))
		}
		if rt := s.RoundTime(100); rt != 0 {
			t.Errorf("%v: RoundTime = %d, want 0 (no round, 001 §3.4)", k, rt)
		}
	}
}
