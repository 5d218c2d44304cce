package buffer

import (
	"sync"
	"testing"
)

func benchMMU(b *testing.B, reserve int64) *MMU {
	b.Helper()
	m, err := New(Config{
		Pools: []PoolConfig{{Size: 3 << 20}},
		Ports: []PortConfig{
			{Queues: []QueueConfig{{Alpha: 4, Reserve: reserve}}},
			{Queues: []QueueConfig{{Alpha: 4, Reserve: reserve}}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func report(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpackets/s")
}

// BenchmarkAdmitRelease is one packet's buffer cost: Admit on enqueue,
// Release on dequeue, with 64 packets standing in the queue.
func BenchmarkAdmitRelease(b *testing.B) {
	for _, bc := range []struct {
		name    string
		reserve int64
	}{
		{"private", 1 << 20}, // within the reserve: no shared-pool atomics
		{"shared", 0},        // every byte through the DT compare-and-swap
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := benchMMU(b, bc.reserve)
			for range 64 {
				m.Admit(0, 0, 1500)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if m.Admit(0, 0, 1500) != Admitted {
					b.Fatal("dropped")
				}
				m.Release(0, 0, 1500)
			}
			report(b)
		})
	}
}

// BenchmarkAdmitReleaseContended: two workers on two ports of one pool, the
// shared counters bouncing between their cores; ns/op is per packet of
// either worker.
func BenchmarkAdmitReleaseContended(b *testing.B) {
	m := benchMMU(b, 0)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for port := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range b.N / 2 {
				if m.Admit(port, 0, 1500) == Admitted {
					m.Release(port, 0, 1500)
				}
			}
		}()
	}
	wg.Wait()
	report(b)
}
