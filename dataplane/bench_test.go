package dataplane

import (
	"net"
	"testing"

	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// genPort receives copies of a template frame forever, like a NIC under
// line-rate load DMAing frames into the switch's arena.
type genPort struct {
	frame []byte
	n     int
}

func (g *genPort) Name() string { return "gen" }
func (g *genPort) Receive(ds []*packet.Desc) (int, error) {
	for _, d := range ds {
		d.Len = copy(d.Buf, g.frame)
		d.RxTime = 0
	}
	g.n += len(ds)
	return len(ds), nil
}
func (g *genPort) Transmit(ds []*packet.Desc) (int, error) { return len(ds), nil }
func (g *genPort) Close() error                            { return nil }

// sinkPort takes every frame and counts it, like a NIC's TX ring that the
// hardware drains faster than the switch fills it.
type sinkPort struct{ n, bytes int }

func (s *sinkPort) Name() string                           { return "sink" }
func (s *sinkPort) Receive(ds []*packet.Desc) (int, error) { return 0, nil }
func (s *sinkPort) Transmit(ds []*packet.Desc) (int, error) {
	for _, d := range ds {
		s.bytes += d.Len
	}
	s.n += len(ds)
	return len(ds), nil
}
func (s *sinkPort) Close() error { return nil }

// pipeline builds gen → switch (8 DWRR queues, DCTCP-style RED on the
// queue, L2 rule to the sink) → sink, with frames of size bytes.
func pipeline(tb testing.TB, size int, clock timestamp.Clock) (*Switch, *genPort, *sinkPort) {
	tb.Helper()
	cfg := basicConfig(2, 8, 0, 4<<20)
	cfg.Forwarding.MACs = []MACRule{{MAC: net.HardwareAddr(macs[1][:]), Port: 1}}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(20_000), KMax: marking.Bytes(200_000), PMax: 0.1}, marking.Enqueue, q)
	}
	cfg.Ports[1].Enqueue = []MarkerSpec{{Name: "red", New: red}}
	gen := &genPort{frame: frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, DSCP: 8})}
	sink := &sinkPort{}
	sw, err := New(cfg, []ports.Port{gen, sink}, clock, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return sw, gen, sink
}

func TestPipelineAllocatesNothing(t *testing.T) {
	sw, _, sink := pipeline(t, 1500, timestamp.NewVirtual(0))
	for i := 0; i < 100; i++ { // warm up: learn, fill slices
		sw.Poll()
	}
	if allocs := testing.AllocsPerRun(200, func() { sw.Poll() }); allocs != 0 {
		t.Fatalf("%v allocations per Poll of a %d-frame batch, want 0", allocs, ports.BatchSize)
	}
	if sink.n == 0 {
		t.Fatal("nothing reached the sink")
	}
	if a := sw.Account(); !a.Balanced() {
		t.Fatalf("accounting %+v not balanced", a)
	}
}

// BenchmarkPipeline is the per-packet cost of the whole pipeline on one
// core: receive (one copy into the arena), parse, forward, classify, admit,
// RED, DWRR enqueue and dequeue, transmit, with the monotonic clock read
// once per batch.
func BenchmarkPipeline(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(sizeName(size), func(b *testing.B) {
			sw, _, sink := pipeline(b, size, timestamp.NewMonotonic())
			b.ReportAllocs()
			b.ResetTimer()
			for sink.n < b.N {
				sw.Poll()
			}
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(sink.n)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(1e3/ns, "Mpps")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func sizeName(n int) string {
	switch n {
	case 64:
		return "64B"
	case 1500:
		return "1500B"
	}
	return "other"
}
