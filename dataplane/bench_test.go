package dataplane_test

import (
	"testing"

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

// pipeline builds gen → switch (8 DWRR queues, DCTCP-style RED on the
// queue, L2 rule to the sink) → sink, with frames of size bytes.
func pipeline(tb testing.TB, size int, clock timestamp.Clock) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	return pipelineOf(tb, size, clock, plain)
}

// variant is a variant of the pipeline benchmark's switch.
type variant int

const (
	plain   variant = iota
	dualq           // the port to the sink is a DualQ Coupled AQM port (RFC 9332) fed ECT(1) and ECT(0) frames in turn
	shaped          // the port to the sink is shaped far above the benchmark's rate: the virtual line's arithmetic, no queue
	withINT         // shaped, and it adds an INT record (HPCC's fields) to every frame, which carry INT headers
)

// pipelineOf is pipeline in variant v. With INT, a frame of size bytes
// arrives 24 bytes short of it and leaves with its record; one too short
// to carry INT headers so arrives at size and leaves 24 bytes longer.
func pipelineOf(tb testing.TB, size int, clock timestamp.Clock, v variant) (*dataplane.Switch, *dataplanetest.Gen, *dataplanetest.Sink) {
	tb.Helper()
	cfg := dataplanetest.Config(2, 8, 0, 4<<20)
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(20_000), KMax: marking.Bytes(200_000), PMax: 0.1}, marking.Enqueue, q)
	}
	cfg.Ports[1].Enqueue = []dataplane.MarkerSpec{{Name: "red", New: red}}
	gen := &dataplanetest.Gen{Frame: dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, DSCP: 8})}
	switch v {
	case dualq:
		p := &cfg.Ports[1]
		p.Scheduler = scheduler.Config{Kind: scheduler.DualQ}
		p.Queues = p.Queues[:2]
		p.Enqueue = nil
		gen.Frames = [][]byte{dataplanetest.Frame(tb, 0, 1, packettest.Options{Size: size, ECN: packet.ECT1, DSCP: 8}), gen.Frame}
	case shaped:
		// Far faster than the benchmark: the shaper's arithmetic, and no
		// frame held back.
		cfg.Ports[1].Shaper = scheduler.ShaperConfig{Rate: 400e9, Bucket: 1 << 20}
	case withINT:
		// INT needs a shaped port: shaped's.
		p := &cfg.Ports[1]
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

func TestPipelineAllocatesNothing(t *testing.T) {
	for _, v := range []variant{plain, dualq, withINT} {
		clk := timestamp.NewVirtual(0)
		sw, _, sink := pipelineOf(t, 1500, clk, v)
		for i := 0; i < 100; i++ { // warm up: learn, fill slices
			clk.Advance(20_000_000) // the DualQ's PI2 updates every 16 ms
			sw.Poll()
		}
		if allocs := testing.AllocsPerRun(200, func() { clk.Advance(1_000_000); sw.Poll() }); allocs != 0 {
			t.Fatalf("%v: %v allocations per Poll of a %d-frame batch, want 0", v, allocs, ports.BatchSize)
		}
		if sink.N == 0 {
			t.Fatalf("%v: nothing reached the sink", v)
		}
		if a := sw.Account(); !a.Balanced() {
			t.Fatalf("%v: accounting %+v not balanced", v, a)
		}
		st := sw.Stats().Ports[1]
		if v == dualq && (st.DualQ == nil || st.DualQ.Updates == 0 || st.Queues[0].Dequeued == 0 || st.Queues[1].Dequeued == 0) {
			t.Fatalf("the DualQ pipeline ran no PI2 update or left a queue unused: %+v", st)
		}
		// Every frame that left the line got its record (those staged for the
		// device too), and every one grew to 1500 bytes.
		if v == withINT && (st.INT == nil || st.INT.Added < uint64(sink.N) || st.INT.TxBytes != 1500*st.INT.Added || sink.Bytes != 1500*sink.N) {
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
	for _, v := range []variant{plain, dualq, shaped, withINT} {
		for _, size := range []int{64, 1500} {
			name := sizeName(size)
			if v != plain {
				name = v.String() + "-" + name
			}
			b.Run(name, func(b *testing.B) {
				sw, _, sink := pipelineOf(b, size, timestamp.NewMonotonic(), v)
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

func (v variant) String() string {
	switch v {
	case dualq:
		return "dualq"
	case shaped:
		return "shaped"
	case withINT:
		return "int"
	}
	return "plain"
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
