package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// pipeline builds gen → switch (8 DWRR queues, DCTCP-style RED on the
// queue, L2 rule to the sink) → sink, with frames of size bytes.
func pipeline(tb testing.TB, size int, clock timestamp.Clock) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	return pipelineOf(tb, size, clock, nil)
}

// Overload of the pipeline: the sink's port shaped to overloadRate, the
// frames' queue (1) capped at overloadCap, so that the generator, which
// offers a batch per pass, meets a full queue: at 1500 B and some
// 100 ns a packet it offers about 10× the line, and nine in ten packets
// are refused.
const (
	overloadRate = 10_000_000_000 // bit/s
	overloadCap  = 64 << 10       // bytes
)

// overload shapes the sink's port and caps queue 1; with trim, what
// queue 1 refuses is trimmed to strict-priority queue 7 (DSCP 46).
func overload(trim bool) func(*dataplane.PortConfig) {
	return func(pc *dataplane.PortConfig) {
		pc.Shaper = scheduler.ShaperConfig{Rate: overloadRate, Bucket: dataplane.DefaultBucket(overloadRate)}
		pc.Scheduler.LineRate = overloadRate
		pc.Queues[1] = buffer.QueueConfig{Cap: overloadCap}
		if trim {
			pc.Scheduler.Queues = make([]scheduler.QueueConfig, 8)
			pc.Scheduler.Queues[7].Strict = true
			pc.Trim = &dataplane.Trim{Queue: 7, DSCP: 46}
		}
	}
}

// pipelineOf is pipeline with the sink's port changed by change, if set.
func pipelineOf(tb testing.TB, size int, clock timestamp.Clock, change func(*dataplane.PortConfig)) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	tb.Helper()
	cfg := dataplanetest.Config(2, 8, 0, 4<<20)
	if change != nil {
		change(&cfg.Ports[1])
	}
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(20_000), KMax: marking.Bytes(200_000), PMax: 0.1}, marking.Enqueue, q)
	}
	cfg.Ports[1].Enqueue = []dataplane.MarkerSpec{{Name: "red", New: red}}
	gen := &dataplanetest.Gen{Frame: dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, DSCP: 8})}
	sink := &dataplanetest.Sink{}
	sw, err := dataplane.New(cfg, []ports.Port{gen, sink}, clock, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return sw, gen, sink
}

func TestPipelineAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*dataplane.PortConfig)
	}{{"plain", nil}, {"overload-drop", overload(false)}, {"overload-trim", overload(true)}} {
		t.Run(c.name, func(t *testing.T) {
			clk := timestamp.NewVirtual(0)
			sw, _, sink := pipelineOf(t, 1500, clk, c.change)
			pass := func() { clk.Advance(2_000); sw.Poll() } // 2 µs: 1.6 frames at 10 Gbit/s
			for i := 0; i < 100; i++ {                       // warm up: learn, fill slices
				pass()
			}
			if allocs := testing.AllocsPerRun(200, pass); allocs != 0 {
				t.Fatalf("%v allocations per Poll of a %d-frame batch, want 0", allocs, ports.BatchSize)
			}
			if sink.N == 0 {
				t.Fatal("nothing reached the sink")
			}
			a := sw.Account()
			if !a.Balanced() {
				t.Fatalf("accounting %+v not balanced", a)
			}
			st := sw.Stats().Ports[1]
			refused := st.Queues[1].Drops["static_cap"]
			switch {
			case c.change == nil && a.Dropped != 0:
				t.Errorf("the plain pipeline dropped %d", a.Dropped)
			case c.change != nil && refused < a.Received/2:
				t.Errorf("overload: queue 1 refused %d of %d received: not drop-heavy", refused, a.Received)
			case (st.Trimmed > 0) != (c.name == "overload-trim"):
				t.Errorf("%d trimmed", st.Trimmed)
			}
		})
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
			for sink.N < b.N {
				sw.Poll()
			}
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(sink.N)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(1e3/ns, "Mpps")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkPipelineOverload is BenchmarkPipeline at a drop-heavy load,
// 1500 B frames at about ten times the sink's 10 Gbit/s line (overload):
// "drop" drops what queue 1 refuses, "trim" trims it to queue 7. The
// cost is per packet received, whatever became of it; refused and
// trimmed say what share of them each fate took.
func BenchmarkPipelineOverload(b *testing.B) {
	for _, trim := range []bool{false, true} {
		name := "drop"
		if trim {
			name = "trim"
		}
		b.Run(name+"/1500B", func(b *testing.B) {
			sw, gen, _ := pipelineOf(b, 1500, timestamp.NewMonotonic(), overload(trim))
			b.ReportAllocs()
			b.ResetTimer()
			for gen.N < b.N {
				sw.Poll()
			}
			b.StopTimer()
			st := sw.Stats().Ports[1]
			q := st.Queues[1]
			refused := q.Drops["static_cap"]
			ns := float64(b.Elapsed().Nanoseconds()) / float64(gen.N)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(1e3/ns, "Mpps")
			b.ReportMetric(100*float64(refused)/float64(gen.N), "%refused")
			b.ReportMetric(100*float64(q.Trimmed-q.TrimDropped)/float64(gen.N), "%trimmed")
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

// BenchmarkIdlePass is the cost of one worker pass over five ports that
// have nothing to receive or send: what a worker spends per spin between
// packets, before it sleeps.
func BenchmarkIdlePass(b *testing.B) {
	cfg := dataplanetest.Config(5, 8, 0, 4<<20)
	ps := make([]ports.Port, 5)
	for i := range ps {
		ps[i] = &dataplanetest.Sink{}
	}
	sw, err := dataplane.New(cfg, ps, timestamp.NewMonotonic(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sw.Poll()
	}
}
