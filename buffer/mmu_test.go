package buffer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const mtu = 1500

func mustNew(tb testing.TB, cfg Config) *MMU {
	tb.Helper()
	m, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return m
}

// saturate offers MTU packets round-robin to the given queues until a whole
// round admits nothing, as M long-lived senders do to a switch that never
// drains, and returns the number admitted.
func saturate(m *MMU, active [][2]int) int {
	n := 0
	for {
		admitted := 0
		for _, pq := range active {
			if m.Admit(pq[0], pq[1], mtu) == Admitted {
				admitted++
			}
		}
		if admitted == 0 {
			return n
		}
		n += admitted
	}
}

// dtShare is the shared buffer each of M saturated queues of equal α gets
// under Dynamic Threshold: α·B/(1 + M·α) (002 §IV-B, after Eq. 1).
func dtShare(alpha float64, b int64, m int) float64 {
	return alpha * float64(b) / (1 + float64(m)*alpha)
}

// layout places M active queues: all on one port of 8 queues (the other
// queues idle), one per port, or two per port.
type layout struct {
	name      string
	perPort   int // active queues per port
	portQueue int // queues configured per port
}

var layouts = []layout{
	{"one port", 8, 8},
	{"one queue per port", 1, 1},
	{"two per port", 2, 4},
}

func dtConfig(l layout, m int, alpha float64, b, reserve int64) (Config, [][2]int) {
	cfg := Config{Pools: []PoolConfig{{Size: b}}}
	var active [][2]int
	for len(active) < m {
		port := len(cfg.Ports)
		qs := make([]QueueConfig, l.portQueue)
		for j := range qs {
			qs[j] = QueueConfig{Alpha: alpha, Reserve: reserve}
		}
		cfg.Ports = append(cfg.Ports, PortConfig{Pool: 0, Queues: qs})
		for j := 0; j < l.perPort && len(active) < m; j++ {
			active = append(active, [2]int{port, j})
		}
	}
	return cfg, active
}

// TestDynamicThresholdSteadyState checks 002 §IV-B: "if there are M active
// queues, each queue can eventually get α × B / (1 + M × α) buffer space",
// within one MTU, for M = 1, 2, 4, 8, several α, and active queues on one
// port or spread over the ports of one pool. Queues that are configured but
// idle do not count in M.
func TestDynamicThresholdSteadyState(t *testing.T) {
	const b = 1 << 20
	for _, l := range layouts {
		for _, alpha := range []float64{1, 0.5, 2, 8} {
			for _, m := range []int{1, 2, 4, 8} {
				t.Run(fmt.Sprintf("%s/alpha=%g/M=%d", l.name, alpha, m), func(t *testing.T) {
					cfg, active := dtConfig(l, m, alpha, b, 0)
					mmu := mustNew(t, cfg)
					saturate(mmu, active)
					want := dtShare(alpha, b, m)
					for _, pq := range active {
						got := mmu.QueueSharedBytes(pq[0], pq[1])
						if math.Abs(float64(got)-want) > mtu {
							t.Errorf("queue %v holds %d shared bytes, want α·B/(1+M·α) = %.0f ± %d", pq, got, want, mtu)
						}
						if r := mmu.Admit(pq[0], pq[1], mtu); r != DynamicThreshold {
							t.Errorf("queue %v at steady state: Admit = %v, want %v", pq, r, DynamicThreshold)
						}
					}
					// ΣQ = M·α·B/(1+M·α) < B: DT, not the pool, is what stops them.
					if k, _ := mmu.Drops(active[0][0], active[0][1], PoolFull); k != 0 {
						t.Errorf("%d PoolFull drops, want 0: the pool never fills under DT", k)
					}
				})
			}
		}
	}
}

// TestDynamicThresholdWithDrain runs the same M queues with a drain: every
// step each queue sends one packet out and is offered two, so it stays
// saturated. The shares must stay at α·B/(1 + M·α) within one MTU (002 §IV-B).
func TestDynamicThresholdWithDrain(t *testing.T) {
	const b = 1 << 20
	for _, alpha := range []float64{1, 2, 0.5} {
		for _, m := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("alpha=%g/M=%d", alpha, m), func(t *testing.T) {
				cfg, active := dtConfig(layouts[2], m, alpha, b, 0)
				mmu := mustNew(t, cfg)
				saturate(mmu, active)
				want := dtShare(alpha, b, m)
				for step := range 2000 {
					drainStep(mmu, active)
					for _, pq := range active {
						if got := mmu.QueueSharedBytes(pq[0], pq[1]); math.Abs(float64(got)-want) > mtu {
							t.Fatalf("step %d: queue %v holds %d shared bytes, want %.0f ± %d", step, pq, got, want, mtu)
						}
					}
				}
			})
		}
	}
}

// TestDynamicThresholdUnequalAlpha: with several α, the fixed point of
// Eq. 1 (002 §IV-B) is Q_i = α_i·(B − ΣQ), so Q_i = α_i·B/(1 + Σα_j).
func TestDynamicThresholdUnequalAlpha(t *testing.T) {
	const b = 3 << 20 // 002 §V-A: 3 MB per pool
	alphas := []float64{4, 1, 0.5, 1.0 / 8}
	cfg := Config{Pools: []PoolConfig{{Size: b}}}
	var active [][2]int
	sum := 0.0
	for i, a := range alphas {
		cfg.Ports = append(cfg.Ports, PortConfig{Queues: []QueueConfig{{Alpha: a}}})
		active = append(active, [2]int{i, 0})
		sum += a
	}
	m := mustNew(t, cfg)
	// Without a drain, queues of small α that filled early while T was high
	// could never shrink; DT reaches its fixed point only as queues drain.
	saturate(m, active)
	for step := range 3000 {
		drainStep(m, active)
		if step < 1000 {
			continue
		}
		// Each queue's packet granularity shifts ΣQ, hence every T, so the
		// tolerance is one packet per active queue rather than one in all.
		tol := float64(len(alphas) * mtu)
		for i, a := range alphas {
			want := a * b / (1 + sum)
			if got := m.QueueSharedBytes(i, 0); math.Abs(float64(got)-want) > tol {
				t.Fatalf("step %d: α = %g: %d shared bytes, want α·B/(1+Σα) = %.0f ± %.0f", step, a, got, want, tol)
			}
		}
	}
}

// drainStep sends one packet out of every active queue and offers each two
// new ones, so that every queue stays saturated.
func drainStep(m *MMU, active [][2]int) {
	for _, pq := range active {
		if m.QueuePackets(pq[0], pq[1]) > 0 {
			m.Release(pq[0], pq[1], mtu)
		}
	}
	for range 2 {
		for _, pq := range active {
			m.Admit(pq[0], pq[1], mtu)
		}
	}
}

// TestReserveExcludedFromDT: private bytes count neither in Q_i nor in ΣQ,
// so with a reserve R each saturated queue holds R + α·B/(1 + M·α) bytes and
// the pool's shared occupancy is the same as without reserves.
func TestReserveExcludedFromDT(t *testing.T) {
	const b, reserve, m, alpha = 1 << 20, 128 << 10, 4, 1.0
	cfg, active := dtConfig(layouts[0], m, alpha, b, reserve)
	mmu := mustNew(t, cfg)
	saturate(mmu, active)
	want := dtShare(alpha, b, m)
	for _, pq := range active {
		got := mmu.QueueBytes(pq[0], pq[1])
		if math.Abs(float64(got-reserve)-want) > mtu {
			t.Errorf("queue %v holds %d bytes, want reserve %d + %.0f ± %d", pq, got, reserve, want, mtu)
		}
	}
	if got, want := mmu.PoolSharedBytes(0), float64(m)*want; math.Abs(float64(got)-want) > m*mtu {
		t.Errorf("pool shared occupancy %d, want M·α·B/(1+M·α) = %.0f ± %d", got, want, m*mtu)
	}
	if got, want := mmu.PoolBytes(0), mmu.PoolSharedBytes(0)+m*reserve; got != want {
		t.Errorf("PoolBytes = %d, want shared %d + M·reserve = %d", got, mmu.PoolSharedBytes(0), want)
	}
}

// TestThreshold checks Threshold against Eq. 1 and that admission flips
// exactly there: a DT queue is admitted while Q_i < T and dropped at Q_i ≥ T
// (002 §IV-B: "dropped if Q_i(t) ≥ T(t)").
func TestThreshold(t *testing.T) {
	const b = 100_000
	m := mustNew(t, Config{
		Pools: []PoolConfig{{Size: b}},
		Ports: []PortConfig{
			{Queues: []QueueConfig{{Alpha: 0.5, Reserve: 1000}, {Cap: 7000}}},
			{Queues: []QueueConfig{{Alpha: 3}}},
		},
	})
	if got := m.Threshold(0, 0); got != b/2 {
		t.Fatalf("empty pool: Threshold = %d, want α·B = %d", got, b/2)
	}
	if got := m.Threshold(0, 1); got != 7000 {
		t.Fatalf("capped queue: Threshold = %d, want its cap 7000", got)
	}
	// Another port takes 30 001 shared bytes: T = ⌈0.5·69 999⌉ = 35 000.
	if r := m.Admit(1, 0, 30_001); r != Admitted {
		t.Fatalf("Admit(1, 0, 30001) = %v", r)
	}
	want := int64(math.Ceil(0.5 * float64(b-30_001)))
	if got := m.Threshold(0, 0); got != want || got != 35_000 {
		t.Fatalf("Threshold = %d, want ⌈α·(B − ΣQ)⌉ = %d", got, want)
	}
	// Fill queue 0 to reserve + 34 999 shared bytes; T falls as it grows,
	// so do it in one packet: before it, Q_i = 0 < T.
	if r := m.Admit(0, 0, 1000+20_000); r != Admitted {
		t.Fatalf("first packet: %v", r)
	}
	// Now ΣQ = 50 001, T = ⌈24 999.5⌉ = 25 000, Q_i = 20 000 < T: admitted.
	if got := m.Threshold(0, 0); got != 25_000 {
		t.Fatalf("Threshold = %d, want 25000", got)
	}
	if r := m.Admit(0, 0, 4999); r != Admitted {
		t.Fatalf("Q_i = 20000 < T = 25000: Admit = %v, want admitted", r)
	}
	// ΣQ = 55 000, T = 22 500, Q_i = 24 999 ≥ T: dropped.
	if got := m.Threshold(0, 0); got != 22_500 {
		t.Fatalf("Threshold = %d, want 22500", got)
	}
	if r := m.Admit(0, 0, 1); r != DynamicThreshold {
		t.Fatalf("Q_i = 24999 ≥ T = 22500: Admit = %v, want %v", r, DynamicThreshold)
	}
	// The other port drains: ΣQ = 24 999, T = ⌈37 500.5⌉ = 37 501, and
	// Q_i = 24 999 < T again.
	m.Release(1, 0, 30_001)
	if got := m.Threshold(0, 0); got != 37_501 {
		t.Fatalf("Threshold = %d, want 37501", got)
	}
	if r := m.Admit(0, 0, 1); r != Admitted {
		t.Fatalf("after the other port drained: Admit = %v, want admitted", r)
	}
}

// TestThresholdBoundary: the integer Threshold agrees with the real-valued
// rule Q_i ≥ α·(B − ΣQ) at the boundary, for α that are not powers of two.
func TestThresholdBoundary(t *testing.T) {
	for _, alpha := range []float64{0.3, 1.0 / 3, 0.7, 1.5, 2.25} {
		const b = 10_007
		m := mustNew(t, Config{
			Pools: []PoolConfig{{Size: b}},
			Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: alpha}}}},
		})
		// Grow one byte at a time; each admission must follow Threshold.
		for {
			q := m.QueueSharedBytes(0, 0)
			th := m.Threshold(0, 0)
			r := m.Admit(0, 0, 1)
			if (q < th) != (r == Admitted) {
				t.Fatalf("α = %g: Q_i = %d, Threshold = %d, Admit = %v", alpha, q, th, r)
			}
			if r != Admitted {
				break
			}
		}
	}
}

// TestReserveUsedFirst: a queue below its reserve is admitted even when the
// shared pool is full (002 §II-A step 1), and those bytes use no shared space.
func TestReserveUsedFirst(t *testing.T) {
	const b = 9000
	m := mustNew(t, Config{
		Pools: []PoolConfig{{Size: b}},
		Ports: []PortConfig{
			{Queues: []QueueConfig{{Cap: b}}},
			{Queues: []QueueConfig{{Alpha: 1, Reserve: 3 * mtu}}},
		},
	})
	for range b / mtu {
		if r := m.Admit(0, 0, mtu); r != Admitted {
			t.Fatalf("filling the pool: %v", r)
		}
	}
	if got := m.PoolSharedBytes(0); got != b {
		t.Fatalf("pool shared occupancy %d, want full %d", got, b)
	}
	for i := range 3 {
		if r := m.Admit(1, 0, mtu); r != Admitted {
			t.Fatalf("packet %d within the reserve of a full pool: %v, want admitted", i, r)
		}
	}
	if got := m.PoolSharedBytes(0); got != b {
		t.Fatalf("reserve admissions changed the shared occupancy to %d", got)
	}
	if got := m.PoolBytes(0); got != b+3*mtu {
		t.Fatalf("PoolBytes = %d, want %d", got, b+3*mtu)
	}
	// Beyond the reserve, the full pool decides: T = α·0 = 0 ≤ Q_i, but the
	// packet does not fit at all, which is reported first.
	if r := m.Admit(1, 0, 1); r != PoolFull {
		t.Fatalf("beyond the reserve of a full pool: %v, want %v", r, PoolFull)
	}
	// A straddling packet: free 1 shared byte, 1 reserve byte; a 3-byte
	// packet needs 2 shared bytes and is dropped whole.
	m.Release(0, 0, mtu)
	if r := m.Admit(0, 0, mtu-1); r != Admitted {
		t.Fatal(r)
	}
	m.Release(1, 0, mtu)
	if r := m.Admit(1, 0, mtu-1); r != Admitted {
		t.Fatal(r)
	}
	if r := m.Admit(1, 0, 3); r != PoolFull {
		t.Fatalf("straddling packet needing 2 of 1 free shared bytes: %v, want %v", r, PoolFull)
	}
	if got := m.QueueBytes(1, 0); got != 3*mtu-1 {
		t.Fatalf("a dropped packet changed the queue to %d bytes", got)
	}
	if r := m.Admit(1, 0, 2); r != Admitted {
		t.Fatalf("straddling packet needing 1 of 1 free shared bytes: %v, want admitted", r)
	}
	if m.QueueSharedBytes(1, 0) != 1 || m.PoolSharedBytes(0) != b {
		t.Fatalf("queue shared %d pool shared %d, want 1 and %d", m.QueueSharedBytes(1, 0), m.PoolSharedBytes(0), b)
	}
	// Release gives back shared bytes first: releasing 2 leaves the reserve
	// full minus one byte and no shared bytes.
	m.Release(1, 0, 2)
	if m.QueueSharedBytes(1, 0) != 0 || m.PoolSharedBytes(0) != b-1 {
		t.Fatalf("after release: queue shared %d pool shared %d, want 0 and %d", m.QueueSharedBytes(1, 0), m.PoolSharedBytes(0), b-1)
	}
}

// TestStaticCap: a capped queue's shared occupancy may reach Cap exactly
// and never exceed it; its reserve comes on top; DT does not apply.
func TestStaticCap(t *testing.T) {
	const capBytes, reserve = 10_000, 3000
	m := mustNew(t, Config{
		Pools: []PoolConfig{{Size: 1 << 20}},
		Ports: []PortConfig{{Queues: []QueueConfig{{Cap: capBytes, Reserve: reserve}, {Cap: capBytes}}}},
	})
	for i := range 8 { // 8 × 1500 = 12 000 < 13 000
		if r := m.Admit(0, 0, mtu); r != Admitted {
			t.Fatalf("packet %d: %v", i, r)
		}
	}
	if r := m.Admit(0, 0, mtu); r != StaticCap {
		t.Fatalf("shared would be 10 500 > cap: %v, want %v", r, StaticCap)
	}
	if r := m.Admit(0, 0, 1000); r != Admitted {
		t.Fatalf("shared would be exactly the cap: %v, want admitted", r)
	}
	if r := m.Admit(0, 0, 1); r != StaticCap {
		t.Fatalf("one byte over the cap: %v, want %v", r, StaticCap)
	}
	if got := m.QueueBytes(0, 0); got != capBytes+reserve {
		t.Fatalf("queue holds %d, want reserve + cap = %d", got, capBytes+reserve)
	}
	if k, b := m.Drops(0, 0, StaticCap); k != 2 || b != mtu+1 {
		t.Fatalf("StaticCap drops %d packets %d bytes, want 2 and %d", k, b, mtu+1)
	}
	// α·(B − ΣQ) would allow far more: the cap, not DT, limits the queue.
	if r := m.Admit(0, 1, capBytes); r != Admitted {
		t.Fatalf("second capped queue: %v", r)
	}
}

// TestPoolFull: capped queues whose caps add up to more than B share the
// pool first come, first served; what does not fit is dropped as PoolFull.
func TestPoolFull(t *testing.T) {
	const b = 10_000
	m := mustNew(t, Config{
		Pools: []PoolConfig{{Size: b}},
		Ports: []PortConfig{
			{Queues: []QueueConfig{{Cap: b}}},
			{Queues: []QueueConfig{{Cap: b}}},
		},
	})
	if r := m.Admit(0, 0, b-500); r != Admitted {
		t.Fatal(r)
	}
	if r := m.Admit(1, 0, mtu); r != PoolFull {
		t.Fatalf("1500 bytes into 500 free: %v, want %v", r, PoolFull)
	}
	if r := m.Admit(1, 0, 500); r != Admitted {
		t.Fatalf("500 bytes into 500 free: %v, want admitted", r)
	}
	if got := m.PoolSharedBytes(0); got != b {
		t.Fatalf("pool shared %d, want %d", got, b)
	}
	if k, by := m.Drops(1, 0, PoolFull); k != 1 || by != mtu {
		t.Fatalf("PoolFull drops %d packets %d bytes, want 1 and %d", k, by, mtu)
	}
}

// TestAccountingMatchesModel drives random admissions and releases over
// two pools and compares every reader with the reference model after each
// step: exact bytes and packets of queue, port and pool, shared occupancy,
// thresholds, peaks and drop counters.
func TestAccountingMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		cfg := mixedConfig()
		m := mustNew(t, cfg)
		md := newModel(cfg)
		rng := rand.New(rand.NewPCG(seed, 1))
		queues := make([][]fifo, len(cfg.Ports))
		for i, p := range cfg.Ports {
			queues[i] = make([]fifo, len(p.Queues))
		}
		seen := map[Reason]int{}
		for step := range 4000 {
			port := rng.IntN(len(cfg.Ports))
			queue := rng.IntN(len(cfg.Ports[port].Queues))
			f := &queues[port][queue]
			// Bias toward admission in the first half so pools fill, and
			// toward release in the second so they drain.
			admitP := 0.7
			if step >= 2000 {
				admitP = 0.35
			}
			if rng.Float64() < admitP || len(f.sizes) == 0 {
				size := 64 + rng.IntN(9000-64)
				if rng.IntN(4) == 0 {
					size = 1 + rng.IntN(64)
				}
				want := md.admit(port, queue, size)
				got := m.Admit(port, queue, size)
				if got != want {
					t.Fatalf("seed %d step %d: Admit(%d, %d, %d) = %v, model %v", seed, step, port, queue, size, got, want)
				}
				seen[got]++
				if got == Admitted {
					f.push(size)
				}
			} else {
				size := f.pop()
				md.release(port, queue, size)
				m.Release(port, queue, size)
			}
			md.check(t, m)
		}
		for i := range queues {
			for j := range queues[i] {
				for len(queues[i][j].sizes) > 0 {
					size := queues[i][j].pop()
					md.release(i, j, size)
					m.Release(i, j, size)
				}
			}
		}
		md.check(t, m)
		for i := range cfg.Pools {
			if m.PoolBytes(i) != 0 || m.PoolPackets(i) != 0 || m.PoolSharedBytes(i) != 0 {
				t.Fatalf("seed %d: pool %d not empty after releasing everything", seed, i)
			}
		}
		for _, r := range []Reason{Admitted, PoolFull, DynamicThreshold, StaticCap} {
			if seen[r] == 0 {
				t.Errorf("seed %d: no Admit returned %v; the test does not exercise it", seed, r)
			}
		}
	}
}

// TestReleasePanics: releasing more than a queue holds, from an empty
// queue, or sizes that differ from the admitted ones is a caller bug.
func TestReleasePanics(t *testing.T) {
	cfg := Config{
		Pools: []PoolConfig{{Size: 1 << 20}},
		Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}, {Alpha: 1, Reserve: 5000}}}},
	}
	for _, tc := range []struct {
		name  string
		admit []int
		queue int
		size  int
	}{
		{"empty queue", nil, 0, 100},
		{"more bytes than held", []int{100}, 0, 101},
		{"more bytes than held in reserve", []int{100}, 1, 200},
		{"fewer bytes for the last packet", []int{100}, 0, 99},
		{"all bytes but packets remain", []int{100, 100}, 0, 200},
		{"zero size", []int{100}, 0, 0},
		{"negative size", []int{100}, 0, -100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, cfg)
			for _, n := range tc.admit {
				if r := m.Admit(0, tc.queue, n); r != Admitted {
					t.Fatal(r)
				}
			}
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "buffer: Release") {
					t.Fatalf("Release(0, %d, %d) did not panic with a buffer: Release message (got %q)", tc.queue, tc.size, msg)
				}
				if m.QueueBytes(0, tc.queue) != int64(sum(tc.admit)) || m.PoolBytes(0) != int64(sum(tc.admit)) {
					t.Fatalf("a panicking Release changed the counters")
				}
			}()
			m.Release(0, tc.queue, tc.size)
		})
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestAdmitNonPositivePanics(t *testing.T) {
	m := mustNew(t, Config{Pools: []PoolConfig{{Size: 1000}}, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}}}}})
	defer func() {
		if recover() == nil {
			t.Fatal("Admit of size 0 did not panic")
		}
	}()
	m.Admit(0, 0, 0)
}

// TestCountDrop: marker drops land in the same per-queue counters and
// change no occupancy.
func TestCountDrop(t *testing.T) {
	m := mustNew(t, Config{Pools: []PoolConfig{{Size: 1000}}, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}, {Alpha: 1}}}}})
	m.CountDrop(0, 1, Marker, 700)
	m.CountDrop(0, 1, Marker, 64)
	if k, b := m.Drops(0, 1, Marker); k != 2 || b != 764 {
		t.Fatalf("Drops(Marker) = %d packets %d bytes, want 2 and 764", k, b)
	}
	if k, _ := m.Drops(0, 0, Marker); k != 0 {
		t.Fatalf("drop counted on the wrong queue")
	}
	if m.PortBytes(0) != 0 || m.PoolBytes(0) != 0 || m.QueuePackets(0, 1) != 0 {
		t.Fatal("CountDrop changed occupancy")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("CountDrop(Admitted) did not panic")
		}
	}()
	m.CountDrop(0, 0, Admitted, 1)
}

// TestPeaks: watermarks follow the highest occupancy and ResetPeaks restarts
// them at the current one.
func TestPeaks(t *testing.T) {
	m := mustNew(t, Config{Pools: []PoolConfig{{Size: 1 << 20}}, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}, {Alpha: 1}}}}})
	m.Admit(0, 0, 1000)
	m.Admit(0, 1, 500)
	m.Admit(0, 0, 1000)
	m.Release(0, 0, 1000)
	if m.QueuePeak(0, 0) != 2000 || m.QueuePeak(0, 1) != 500 || m.PortPeak(0) != 2500 {
		t.Fatalf("peaks %d %d port %d, want 2000 500 2500", m.QueuePeak(0, 0), m.QueuePeak(0, 1), m.PortPeak(0))
	}
	m.ResetPeaks(0)
	if m.QueuePeak(0, 0) != 1000 || m.QueuePeak(0, 1) != 500 || m.PortPeak(0) != 1500 {
		t.Fatalf("after reset: peaks %d %d port %d, want the current 1000 500 1500", m.QueuePeak(0, 0), m.QueuePeak(0, 1), m.PortPeak(0))
	}
	m.Admit(0, 1, 100)
	if m.QueuePeak(0, 1) != 600 || m.PortPeak(0) != 1600 {
		t.Fatalf("peaks %d port %d, want 600 1600", m.QueuePeak(0, 1), m.PortPeak(0))
	}
}

func TestNewErrors(t *testing.T) {
	q := []QueueConfig{{Alpha: 1}}
	pools := []PoolConfig{{Size: 1000}}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Ports: []PortConfig{{Queues: q}}}, "pools: none configured"},
		{Config{Pools: pools}, "ports: 0 configured, want 1 to 65536"},
		{Config{Pools: []PoolConfig{{Size: 0}}, Ports: []PortConfig{{Queues: q}}}, "pools[0].size: 0 outside [1, 1099511627776]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: q}, {Pool: 1, Queues: q}}}, "ports[1].pool: 1 outside [0, 0]"},
		{Config{Pools: pools, Ports: []PortConfig{{}}}, "ports[0].queues: 0 configured, want 1 to 256"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: make([]QueueConfig, 257)}}}, "ports[0].queues: 257 configured, want 1 to 256"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}, {}}}}}, "ports[0].queues[1].alpha: 0 outside (0, 256]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: -1}}}}}, "ports[0].queues[0].alpha: -1 outside (0, 256]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 512}}}}}, "ports[0].queues[0].alpha: 512 outside (0, 256]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: math.NaN()}}}}}, "ports[0].queues[0].alpha: NaN outside (0, 256]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1, Reserve: -1}}}}}, "ports[0].queues[0].reserve: -1 outside [0, 1099511627776]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Cap: 1001}}}}}, "ports[0].queues[0].cap: 1001 outside [0, 1000] (the size of pools[0])"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Cap: -5}}}}}, "ports[0].queues[0].cap: -5 outside [0, 1000]"},
		{Config{Pools: pools, Ports: []PortConfig{{Queues: []QueueConfig{{Cap: 500, Alpha: 1}}}}}, "ports[0].queues[0].alpha: 1 set with cap 500, want 0"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: error %v, want one containing %q", err, tc.want)
			continue
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("New: error %v does not wrap ErrConfig", err)
		}
	}
}

func TestReasonString(t *testing.T) {
	names := map[string]bool{}
	for r := Reason(0); r < NumReasons; r++ {
		s := r.String()
		if s == "reason(?)" || names[s] {
			t.Errorf("Reason(%d).String() = %q: missing or duplicate", r, s)
		}
		names[s] = true
	}
	if got := Reason(NumReasons).String(); got != "reason(?)" {
		t.Errorf("out-of-range reason: %q", got)
	}
}

// TestZeroAllocs: Admit and Release allocate nothing, on the private, the
// shared and the drop path.
func TestZeroAllocs(t *testing.T) {
	m := mustNew(t, Config{
		Pools: []PoolConfig{{Size: 20_000}},
		Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1, Reserve: 3000}, {Cap: 2000}}}},
	})
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"private", func() { m.Admit(0, 0, 1000); m.Release(0, 0, 1000) }},
		{"shared", func() { m.Admit(0, 0, 9000); m.Release(0, 0, 9000) }},
		{"drop", func() { m.Admit(0, 1, 3000) }},
		{"readers", func() { _ = m.Threshold(0, 0) + m.PoolSharedBytes(0) + m.QueueBytes(0, 0) + m.PortBytes(0) }},
	} {
		if n := testing.AllocsPerRun(1000, tc.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, n)
		}
	}
}

// SetAlpha moves a DT queue's threshold at once, and is refused for a
// capped queue and outside (0, MaxAlpha].
func TestSetAlpha(t *testing.T) {
	m, err := New(Config{
		Pools: []PoolConfig{{Size: 10_000}},
		Ports: []PortConfig{{Queues: []QueueConfig{{Alpha: 1}, {Cap: 1000}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if th := m.Threshold(0, 0); th != 10_000 {
		t.Fatalf("α = 1 on an empty pool of 10000: threshold %d", th)
	}
	if err := m.SetAlpha(0, 0, 0.25); err != nil {
		t.Fatal(err)
	}
	if th := m.Threshold(0, 0); th != 2500 {
		t.Errorf("α = 1/4: threshold %d, want 2500", th)
	}
	// T = α·(B − Q) holds 2000 of 10000 bytes at α = 1/4: the 2001st
	// byte's packet finds 2000 ≥ 0.25·8000 and is refused.
	for range 20 {
		if r := m.Admit(0, 0, 100); r != Admitted {
			t.Fatalf("admission below the threshold: %v", r)
		}
	}
	if r := m.Admit(0, 0, 100); r != DynamicThreshold {
		t.Errorf("at α·(B−ΣQ): %v, want the dynamic threshold", r)
	}
	for _, c := range []struct {
		queue int
		alpha float64
	}{{1, 0.5}, {0, 0}, {0, MaxAlpha * 2}, {2, 1}} {
		if err := m.SetAlpha(0, c.queue, c.alpha); !errors.Is(err, ErrConfig) {
			t.Errorf("SetAlpha(queue %d, %g) = %v, want a config error", c.queue, c.alpha, err)
		}
	}
}
