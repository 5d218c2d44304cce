package demo

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestSchemeMarkers builds every scheme's switch and checks each marker
// against its paper's rule on two equal-quantum queues at K = 32 KB and
// C = 995 Mbit/s: where it runs, and what it marks just below and at its
// threshold. The thresholds are K (standard), K/2 (minimum, PMSB's filter,
// MQ-ECN with both queues busy at T_round = 2·MTU/C) and K/C in time
// (TCN, ECN♯).
func TestSchemeMarkers(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]testbed.Host, Hosts)
	for i := range hosts {
		hosts[i].SwitchIf = "sw" + string(rune('1'+i))
	}
	k := o.K
	rtt := (k*8e9 + o.Rate - 1) / o.Rate // K/C in ns
	const mtu = 1514
	view := func(queue, port, sojourn int64) marking.View {
		return marking.View{
			Now: 1e9, EnqTime: 1e9 - sojourn, Len: mtu, Queue: 1,
			QueueBytes: queue, PortBytes: port,
			Quantum: mtu, Weight: mtu, WeightSum: 2 * mtu, BusyWeightSum: 2 * mtu,
			RoundTime: 2 * mtu * 8e9 / o.Rate, LineRate: o.Rate,
		}
	}
	for _, c := range []struct {
		scheme        string
		dequeue       bool
		below, at     marking.View // the first is not marked, the second is
		belowS, atS   string
		alsoUnmarked  *marking.View
		alsoUnmarkedS string
	}{
		{scheme: PerPort, below: view(0, k-1, 0), at: view(0, k, 0), belowS: "port K−1, queue 0", atS: "port K, queue 0"},
		{scheme: PerQueue, below: view(k-1, 2*k, 0), at: view(k, k, 0), belowS: "queue K−1, port 2K", atS: "queue K"},
		{scheme: QueueMinimum, below: view(k/2-1, 2*k, 0), at: view(k/2, k/2, 0), belowS: "queue K/2−1", atS: "queue K/2"},
		{scheme: MQECN, below: view(k/2-mtu, 2*k, 0), at: view(k/2+mtu, k/2+mtu, 0), belowS: "queue K/2−MTU", atS: "queue K/2+MTU"},
		{scheme: PMSB, below: view(k/2-1, 2*k, 0), at: view(k/2, k, 0), belowS: "queue K/2−1, port 2K", atS: "queue K/2, port K",
			alsoUnmarked: ptr(view(k, k-1, 0)), alsoUnmarkedS: "queue K, port K−1"},
		{scheme: TCN, dequeue: true, below: view(2*k, 2*k, rtt), at: view(0, 0, rtt+1), belowS: "sojourn K/C, queue 2K", atS: "sojourn K/C + 1 ns"},
		{scheme: ECNSharp, dequeue: true, below: view(2*k, 2*k, rtt-1), at: view(0, 0, rtt+1), belowS: "sojourn K/C − 1 ns", atS: "sojourn K/C + 1 ns"},
	} {
		t.Run(c.scheme, func(t *testing.T) {
			cfg, err := switchConfig(o, hosts, c.scheme)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Ports) != Hosts {
				t.Fatalf("%d ports, want %d", len(cfg.Ports), Hosts)
			}
			p := cfg.Ports[bottleneck]
			specs, other := p.Enqueue, p.Dequeue
			if c.dequeue {
				specs, other = other, specs
			}
			if len(specs) != 1 || len(other) != 0 {
				t.Fatalf("enqueue %d, dequeue %d markers: want one, at dequeue = %v", len(p.Enqueue), len(p.Dequeue), c.dequeue)
			}
			m, err := specs[0].New(2)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Mark(ptr(c.below)); got != marking.Pass {
				t.Errorf("%s: %v, want pass", c.belowS, got)
			}
			if c.alsoUnmarked != nil {
				if got := m.Mark(c.alsoUnmarked); got != marking.Pass {
					t.Errorf("%s: %v, want pass", c.alsoUnmarkedS, got)
				}
			}
			if got := m.Mark(ptr(c.at)); got != marking.Mark {
				t.Errorf("%s: %v, want mark", c.atS, got)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
