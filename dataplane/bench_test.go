package dataplane_test

import (
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Variants of the pipeline (pipelineOf).
const (
	plain        = ""
	dualQ        = "dualq"         // the sink's port a DualQ Coupled AQM port (RFC 9332)
	overloadDrop = "overload-drop" // the sink's port overloaded (overload), refusals dropped
	overloadTrim = "overload-trim" // the same, refusals trimmed
	shaped       = "shaped"        // the sink's port shaped far above the benchmark's rate: the virtual line's arithmetic, no queue
	withINT      = "int"           // shaped, and adding an INT record to every frame (HPCC's fields)
)

// Overload of the pipeline: the sink's port shaped to overloadRate, the
// frames' queue (1) capped at overloadCap, so that the generator, which
// offers a batch per pass, meets a full queue: at 1500 B and some
// 100 ns a packet it offers about 10× the line, and nine in ten packets
// are refused.
const (
	overloadRate = 10_000_000_000 // bit/s
	overloadCap  = 64 << 10       // bytes
)

// pipeline builds gen → switch (8 DWRR queues, DCTCP-style RED on the
// queue, L2 rule to the sink) → sink, with frames of size bytes.
func pipeline(tb testing.TB, size int, clock timestamp.Clock) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	return pipelineOf(tb, size, clock, plain)
}

// pipelineOf is pipeline, or a variant of it: with dualQ the port to the
// sink is a DualQ Coupled AQM port fed ECT(1) and ECT(0) frames in turn;
// with overloadDrop and overloadTrim it is shaped to overloadRate with
// queue 1 capped at overloadCap, and with overloadTrim what queue 1
// refuses is trimmed onto strict-priority queue 7 (DSCP 46); shaped
// shapes it far above the benchmark's rate (the virtual line's
// arithmetic, no queue), and withINT adds, to shaped, an INT record
// (HPCC's fields) to every frame, which carries INT headers: a frame of
// size bytes arrives 24 bytes short of it and leaves with its record; one
// too short to carry INT headers so arrives at size and leaves 24 bytes
// longer.
func pipelineOf(tb testing.TB, size int, clock timestamp.Clock, variant string) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	tb.Helper()
	cfg := dataplanetest.Config(2, 8, 0, 4<<20)
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(20_000), KMax: marking.Bytes(200_000), PMax: 0.1}, marking.Enqueue, q)
	}
	p := &cfg.Ports[1]
	p.Enqueue = []dataplane.MarkerSpec{{Name: "red", New: red}}
	gen := &dataplanetest.Gen{Frame: dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, DSCP: 8})}
	switch variant {
	case dualQ:
		p.Scheduler = scheduler.Config{Kind: scheduler.DualQ}
		p.Queues = p.Queues[:2]
		p.Enqueue = nil
		gen.Frames = [][]byte{dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT1, DSCP: 8}), gen.Frame}
	case overloadDrop, overloadTrim:
		p.Shaper = scheduler.ShaperConfig{Rate: overloadRate, Bucket: dataplane.DefaultBucket(overloadRate)}
		p.Scheduler.LineRate = overloadRate
		p.Queues[1] = buffer.QueueConfig{Cap: overloadCap}
		if variant == overloadTrim {
			p.Scheduler.Queues = make([]scheduler.QueueConfig, 8)
			p.Scheduler.Queues[7].Strict = true
			p.Trim = &dataplane.Trim{Queue: 7, DSCP: 46}
		}
	case shaped:
		// Far faster than the benchmark: the shaper's arithmetic, and no
		// frame held back.
		p.Shaper = scheduler.ShaperConfig{Rate: 400e9, Bucket: 1 << 20}
	case withINT:
		// INT needs a shaped port: shaped's.
		p.Shaper = scheduler.ShaperConfig{Rate: 400e9, Bucket: 1 << 20}
		p.INT = &dataplane.INT{Port: intPort}
		h, err := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, 1)
		if err != nil {
			tb.Fatal(err)
		}
		pl := make([]byte, intmd.HeaderLen)
		h.Put(pl)
		in := size - h.RecordLen() // leaves at size
		if in < 14+20+8+intmd.HeaderLen {
			in = size // the smallest frames: leave 24 bytes longer
		}
		gen.Frame = dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: in, ECN: packet.ECT0, DSCP: 8, DstPort: intPort, Payload: pl})
	}
	sink := &dataplanetest.Sink{}
	sw, err := dataplane.New(cfg, []ports.Port{gen, sink}, clock, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return sw, gen, sink
}

// TestPipelineAllocatesNothing: a Poll allocates nothing, in every variant
// of the pipeline — the overloaded ones drop-heavy (most packets refused
// at queue 1's cap), and trimming there only in overloadTrim.
func TestPipelineAllocatesNothing(t *testing.T) {
	for _, variant := range []string{plain, dualQ, overloadDrop, overloadTrim, withINT} {
		clk := timestamp.NewVirtual(0)
		sw, _, sink := pipelineOf(t, 1500, clk, variant)
		step := time.Millisecond
		if variant == overloadDrop || variant == overloadTrim {
			step = 2 * time.Microsecond // 2 µs: 1.6 frames at 10 Gbit/s, against a batch offered a pass
		}
		for i := 0; i < 100; i++ { // warm up: learn, fill slices
			clk.Advance(20_000_000) // the DualQ's PI2 updates every 16 ms
			sw.Poll()
		}
		if allocs := testing.AllocsPerRun(200, func() { clk.Advance(step); sw.Poll() }); allocs != 0 {
			t.Fatalf("%q: %v allocations per Poll of a %d-frame batch, want 0", variant, allocs, ports.BatchSize)
		}
		if sink.N == 0 {
			t.Fatalf("%q: nothing reached the sink", variant)
		}
		a := sw.Account()
		if !a.Balanced() {
			t.Fatalf("%q: accounting %+v not balanced", variant, a)
		}
		st := sw.Stats().Ports[1]
		refused := st.Queues[1].Drops["static_cap"]
		switch {
		case variant == dualQ && (st.DualQ == nil || st.DualQ.Updates == 0 || st.Queues[0].Dequeued == 0 || st.Queues[1].Dequeued == 0):
			t.Fatalf("the DualQ pipeline ran no PI2 update or left a queue unused: %+v", st)
		case variant == plain && a.Dropped != 0:
			t.Errorf("the plain pipeline dropped %d", a.Dropped)
		case (variant == overloadDrop || variant == overloadTrim) && refused < a.Received/2:
			t.Errorf("%q: queue 1 refused %d of %d received: not drop-heavy", variant, refused, a.Received)
		case (st.Trimmed > 0) != (variant == overloadTrim):
			t.Errorf("%q: %d trimmed", variant, st.Trimmed)
		}
		// Every frame that left the line got its record (those staged for the
		// device too), and every one grew to 1500 bytes.
		if variant == withINT && (st.INT == nil || st.INT.Added < uint64(sink.N) || st.INT.TxBytes != 1500*st.INT.Added || sink.Bytes != 1500*sink.N) {
			t.Fatalf("the INT pipeline sent %d frames, %d bytes, and counted %+v; want a record on each, 1500 bytes each", sink.N, sink.Bytes, st.INT)
		}
	}
}

// BenchmarkPipeline is the per-packet cost of the whole pipeline on one
// core: receive (one copy into the arena), parse, forward, classify, admit,
// RED, DWRR enqueue and dequeue, transmit, with the monotonic clock read
// once per batch. The dualq cases run the same switch with a DualQ port
// instead: ECN classification, the DualQ scheduler and its coupled AQM at
// dequeue (four chain members, the peer queue's view) instead of the
// classifier, DWRR and RED. The shaped cases shape the port to the sink
// far above the benchmark's rate, and the int cases add INT to that
// port (compare them with shaped's): every frame carries
// INT headers asking for HPCC's fields and leaves with a record (open the
// headers, move the rest of the frame up, write the record, fix the
// lengths and checksums): int-1500B's frames arrive with 1476 bytes and
// leave with 1500, int-64B's arrive with 64 and leave with 88.
func BenchmarkPipeline(b *testing.B) {
	for _, variant := range []string{plain, dualQ, shaped, withINT} {
		for _, size := range []int{64, 1500} {
			name := sizeName(size)
			if variant != plain {
				name = variant + "-" + name
			}
			b.Run(name, func(b *testing.B) {
				sw, _, sink := pipelineOf(b, size, timestamp.NewMonotonic(), variant)
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
}

// BenchmarkPipelineOverload is BenchmarkPipeline at a drop-heavy load,
// 1500 B frames at about ten times the sink's 10 Gbit/s line: "drop"
// drops what queue 1 refuses, "trim" trims it to queue 7. The cost is per
// packet received, whatever became of it; %refused and %trimmed say what
// share of them each fate took.
func BenchmarkPipelineOverload(b *testing.B) {
	for _, variant := range []string{overloadDrop, overloadTrim} {
		b.Run(variant+"/1500B", func(b *testing.B) {
			sw, gen, _ := pipelineOf(b, 1500, timestamp.NewMonotonic(), variant)
			b.ReportAllocs()
			b.ResetTimer()
			for gen.N < b.N {
				sw.Poll()
			}
			b.StopTimer()
			q := sw.Stats().Ports[1].Queues[1]
			ns := float64(b.Elapsed().Nanoseconds()) / float64(gen.N)
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(1e3/ns, "Mpps")
			b.ReportMetric(100*float64(q.Drops["static_cap"])/float64(gen.N), "%refused")
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
