package buffer

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentPortsShareOnePool runs two workers, each owning one port
// of the same pool, admitting and releasing at random while a telemetry
// goroutine reads every counter. The pool's shared occupancy must never
// exceed B, nor any queue its reserve plus B; when the workers stop,
// the counters must add up exactly, and return to zero once everything is
// released. Run it with -race.
func TestConcurrentPortsShareOnePool(t *testing.T) {
	const b = 64 << 10
	qs := []QueueConfig{{Alpha: 2}, {Alpha: 0.5, Reserve: 4000}, {Cap: 30_000}, {Alpha: 8, Reserve: 1000}}
	cfg := Config{
		Pools: []PoolConfig{{Size: b}},
		Ports: []PortConfig{{Queues: qs}, {Queues: qs}},
	}
	m := mustNew(t, cfg)
	ops := 200_000
	if testing.Short() {
		ops = 20_000
	}

	held := make([][]fifo, len(cfg.Ports))
	var workers, reader sync.WaitGroup
	var stop atomic.Bool
	var violation atomic.Value
	reader.Add(1)
	go func() { // telemetry
		defer reader.Done()
		for !stop.Load() {
			if s := m.PoolSharedBytes(0); s > b || s < 0 {
				violation.Store("pool shared occupancy out of [0, B]")
			}
			if pb := m.PoolBytes(0); pb < 0 {
				violation.Store("pool bytes negative")
			}
			for p := range cfg.Ports {
				for q := range qs {
					if qb := m.QueueBytes(p, q); m.Threshold(p, q) < 0 || qb < 0 || qb > b+qs[q].Reserve || m.QueuePeak(p, q) < 0 {
						violation.Store("a queue counter out of range")
					}
				}
			}
		}
	}()
	for port := range cfg.Ports {
		held[port] = make([]fifo, len(qs))
		workers.Add(1)
		go func() {
			defer workers.Done()
			rng := rand.New(rand.NewPCG(uint64(port), 7))
			for i := range ops {
				q := rng.IntN(len(qs))
				f := &held[port][q]
				// Phases of filling and draining, so the pool runs full.
				fill := (i/5000)%2 == 0
				if len(f.sizes) == 0 || (fill && rng.IntN(4) != 0) || (!fill && rng.IntN(4) == 0) {
					size := 64 + rng.IntN(1500-64)
					if m.Admit(port, q, size) == Admitted {
						f.push(size)
					}
				} else {
					m.Release(port, q, f.pop())
				}
			}
		}()
	}
	workers.Wait()
	stop.Store(true)
	reader.Wait()
	if v := violation.Load(); v != nil {
		t.Fatal(v)
	}

	// Quiescent: the counters must add up exactly.
	var shared, poolBytes, poolPackets int64
	for p := range cfg.Ports {
		var pb, pk int64
		for q := range qs {
			var fb int64
			for _, n := range held[p][q].sizes {
				fb += int64(n)
			}
			if m.QueueBytes(p, q) != fb || m.QueuePackets(p, q) != int64(len(held[p][q].sizes)) {
				t.Fatalf("queue %d/%d: %d bytes %d packets, worker holds %d bytes %d packets",
					p, q, m.QueueBytes(p, q), m.QueuePackets(p, q), fb, len(held[p][q].sizes))
			}
			shared += m.QueueSharedBytes(p, q)
			pb += m.QueueBytes(p, q)
			pk += m.QueuePackets(p, q)
		}
		if m.PortBytes(p) != pb || m.PortPackets(p) != pk {
			t.Fatalf("port %d: %d bytes %d packets, queues sum to %d %d", p, m.PortBytes(p), m.PortPackets(p), pb, pk)
		}
		poolBytes += pb
		poolPackets += pk
	}
	if m.PoolSharedBytes(0) != shared || m.PoolBytes(0) != poolBytes || m.PoolPackets(0) != poolPackets {
		t.Fatalf("pool: shared %d bytes %d packets %d; queues sum to %d %d %d",
			m.PoolSharedBytes(0), m.PoolBytes(0), m.PoolPackets(0), shared, poolBytes, poolPackets)
	}
	for _, r := range []Reason{PoolFull, DynamicThreshold, StaticCap} {
		var k int64
		for p := range cfg.Ports {
			for q := range qs {
				n, _ := m.Drops(p, q, r)
				k += n
			}
		}
		if k == 0 {
			t.Errorf("no %v drops: the test did not contend for the pool", r)
		}
	}

	for p := range cfg.Ports {
		for q := range qs {
			for len(held[p][q].sizes) > 0 {
				m.Release(p, q, held[p][q].pop())
			}
		}
	}
	if m.PoolSharedBytes(0) != 0 || m.PoolBytes(0) != 0 || m.PoolPackets(0) != 0 || m.PortBytes(0) != 0 || m.PortBytes(1) != 0 {
		t.Fatalf("counters not zero after releasing everything: pool shared %d bytes %d packets %d",
			m.PoolSharedBytes(0), m.PoolBytes(0), m.PoolPackets(0))
	}
}

// TestConcurrentFillIsExact: two workers race to fill one pool through
// capped queues; the compare-and-swap admission fills it to exactly B, no
// byte over and none lost.
func TestConcurrentFillIsExact(t *testing.T) {
	const b, size = 1 << 20, 1024
	cfg := Config{
		Pools: []PoolConfig{{Size: b}},
		Ports: []PortConfig{{Queues: []QueueConfig{{Cap: b}}}, {Queues: []QueueConfig{{Cap: b}}}},
	}
	for range 20 {
		m := mustNew(t, cfg)
		var wg sync.WaitGroup
		for port := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m.Admit(port, 0, size) == Admitted {
				}
			}()
		}
		wg.Wait()
		if got := m.PoolSharedBytes(0); got != b {
			t.Fatalf("pool shared %d after both workers filled it, want exactly B = %d", got, b)
		}
		if got := m.PortBytes(0) + m.PortBytes(1); got != b {
			t.Fatalf("ports hold %d, want %d", got, b)
		}
	}
}
