package loadgen

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// sent is one frame a test injects: flow, wire sequence number, and
// whether the "switch" marked it CE on the way.
type sent struct {
	flow uint16
	seq  uint32
	ce   bool
}

// injector writes hand-made frame sequences onto a memory link toward a
// sink: the faults (loss, reordering, duplication, CE marks) are in the
// sequence itself, so the expected counts follow from it alone.
type injector struct {
	tb    testing.TB
	clk   *timestamp.Virtual
	tx    *memport.Port
	sink  *Sink
	addrs Addresses
	d     packet.Desc
}

func newInjector(tb testing.TB, cfg SinkConfig, delay int64) *injector {
	tb.Helper()
	clk := timestamp.NewVirtual(1_000_000)
	a, b, err := memport.Pair("gen", "sink", clk, memport.Link{Delay: delay, Capacity: 1 << 14})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := NewSink(cfg, b, clk)
	if err != nil {
		tb.Fatal(err)
	}
	g := GeneratorConfig{}
	if err := g.setDefaults(); err != nil {
		tb.Fatal(err)
	}
	return &injector{tb: tb, clk: clk, tx: a, sink: s, addrs: g.Addresses, d: packet.Desc{Buf: make([]byte, 2048)}}
}

// send transmits frames of run 0 stamped with the current time, one per
// microsecond, and lets the sink receive each.
func (in *injector) send(run uint16, size int, frames []sent) {
	in.tb.Helper()
	for _, f := range frames {
		in.d.Len = buildFrame(in.d.Buf, &in.addrs, size, 8, packet.ECT0, DefaultSrcPort+f.flow,
			Header{Run: run, Flow: f.flow, Seq: f.seq, TxTime: in.clk.Now()})
		if f.ce {
			if err := packet.Parse(&in.d); err != nil || !packet.SetCE(&in.d) {
				in.tb.Fatalf("cannot mark frame CE: %v", err)
			}
		}
		if n, err := in.tx.Transmit([]*packet.Desc{&in.d}); n != 1 || err != nil {
			in.tb.Fatalf("Transmit = %d, %v", n, err)
		}
		in.clk.Advance(1000)
		in.drain()
	}
}

// drain lets every frame on the wire arrive and the sink take it.
func (in *injector) drain() {
	rx := in.sink.port.(*memport.Port)
	for rx.InFlight() > 0 {
		if next, ok := rx.NextArrival(); ok && next > in.clk.Now() {
			in.clk.Set(next)
		}
		if _, err := in.sink.Poll(in.clk.Now()); err != nil {
			in.tb.Fatal(err)
		}
	}
}

func seqs(flow uint16, ss ...uint32) []sent {
	out := make([]sent, len(ss))
	for i, s := range ss {
		out[i] = sent{flow: flow, seq: s}
	}
	return out
}

// faultWant is what a sink must count of a faultCase.
type faultWant struct{ received, lost, reordered, duplicated, late, ce uint64 }

// faultCases are frame sequences with injected loss, reordering,
// duplicates and CE marks, and the counts they must give, in a window of
// the given size (0: the default).
var faultCases = []struct {
	name   string
	window int
	frames []sent
	want   faultWant
}{
	{"in order", 0, seqs(0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9), faultWant{received: 10}},
	{"loss: 2, 5 and 6 missing", 0, seqs(0, 0, 1, 3, 4, 7), faultWant{received: 5, lost: 3}},
	{"loss at the head", 0, seqs(0, 3, 4), faultWant{received: 2, lost: 3}},
	{"one swap", 0, seqs(0, 0, 2, 1, 3), faultWant{received: 4, reordered: 1}},
	{"reversed", 0, seqs(0, 4, 3, 2, 1, 0), faultWant{received: 5, reordered: 4}},
	{"duplicate in order", 0, seqs(0, 0, 1, 1, 2), faultWant{received: 4, duplicated: 1}},
	{"duplicate of the highest", 0, seqs(0, 0, 1, 2, 2, 2), faultWant{received: 5, duplicated: 2}},
	{"duplicate of a reordered frame", 0, seqs(0, 0, 2, 1, 1), faultWant{received: 4, reordered: 1, duplicated: 1}},
	{"reordering fills a gap, loss stays", 0, seqs(0, 0, 3, 1, 5), faultWant{received: 4, lost: 2, reordered: 1}},
	{"duplicate across a gap", 64, seqs(0, 0, 70, 70, 0), faultWant{received: 4, lost: 68, duplicated: 1, reordered: 1, late: 1}},
	// Window 64: sequence numbers down to top−63 are remembered.
	{"oldest remembered is a duplicate", 64, seqs(0, 0, 1, 64, 1), faultWant{received: 4, lost: 62, duplicated: 1}},
	{"one older is late, not a duplicate", 64, seqs(0, 0, 1, 65, 1), faultWant{received: 4, lost: 62, reordered: 1, late: 1}},
	{"late frame that was never seen", 64, seqs(0, 0, 100, 5), faultWant{received: 3, lost: 98, reordered: 1, late: 1}},
	{"a slot passes to the next sequence number", 64, seqs(0, 0, 63, 64, 0, 64), faultWant{received: 5, lost: 61, reordered: 1, late: 1, duplicated: 1}},
	{"bits reused after the window slides", 64, seqs(0, 0, 64, 128, 192, 129), faultWant{received: 5, lost: 188, reordered: 1}},
	{"wrap of the 32-bit sequence number", 0, seqs(0, 0xfffffffe, 0, 0xffffffff, 0),
		faultWant{received: 4, lost: 1<<32 + 1 - 3, reordered: 1, duplicated: 1}},
	// The XDP sink's window is a ring of 64-bit blocks (xdpsink): the
	// same counts across block boundaries, blocks last used a ring ago,
	// and jumps of many blocks.
	{"within the window across a block", 64, seqs(0, 0, 128, 65, 65), faultWant{received: 4, lost: 126, reordered: 1, duplicated: 1}},
	{"a block of an older tag", 64, seqs(0, 5, 69, 133, 70, 69), faultWant{received: 5, lost: 129, reordered: 2, late: 1}},
	{"a jump of many blocks", 64, seqs(0, 0, 1, 2, 1000, 999, 1), faultWant{received: 6, lost: 995, reordered: 2, late: 1}},
	{"CE marks", 0, []sent{{0, 0, false}, {0, 1, true}, {0, 2, true}, {0, 3, false}}, faultWant{received: 4, ce: 2}},
	{"CE on a duplicate counts", 0, []sent{{0, 0, false}, {0, 0, true}}, faultWant{received: 2, duplicated: 1, ce: 1}},
}

func TestSinkCountsInjectedFaults(t *testing.T) {
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) {
			in := newInjector(t, SinkConfig{Window: c.window}, 0)
			in.send(0, 64, c.frames)
			r := in.sink.Report()
			got := faultWant{r.Received, r.Lost, r.Reordered, r.Duplicated, r.Late, r.CE}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
			if len(r.Flows) != 1 || r.Flows[0].Received != c.want.received || r.Flows[0].DSCP != 8 {
				t.Errorf("flows = %+v, want one flow with DSCP 8 and %d frames", r.Flows, c.want.received)
			}
		})
	}
}

// TestSinkKeepsFlowsApart interleaves three flows with different faults:
// each flow's counters see only its own.
func TestSinkKeepsFlowsApart(t *testing.T) {
	in := newInjector(t, SinkConfig{}, 0)
	in.send(0, 512, []sent{
		{0, 0, false}, {1, 0, false}, {2, 0, false},
		{0, 1, false}, {1, 2, false}, {2, 1, true},
		{0, 2, false}, {1, 1, false}, {2, 1, false},
		{0, 4, false}, {1, 3, false}, {2, 2, false},
	})
	r := in.sink.Report()
	want := []FlowReport{
		{Flow: 0, DSCP: 8, Received: 4, Lost: 1, Bytes: 4 * 512, Highest: 4},
		{Flow: 1, DSCP: 8, Received: 4, Reordered: 1, Bytes: 4 * 512, Highest: 3},
		{Flow: 2, DSCP: 8, Received: 4, Duplicated: 1, CE: 1, Bytes: 4 * 512, Highest: 2},
	}
	if len(r.Flows) != len(want) {
		t.Fatalf("%d flows, want %d", len(r.Flows), len(want))
	}
	for i := range want {
		if r.Flows[i] != want[i] {
			t.Errorf("flow %d: %+v\nwant %+v", i, r.Flows[i], want[i])
		}
	}
}

// TestSinkSkipsForeignAndStale: frames that are not a generator's, and a
// generator's frames of another run, never reach the flow counters.
func TestSinkSkipsForeignAndStale(t *testing.T) {
	in := newInjector(t, SinkConfig{Run: 7}, 0)
	in.send(7, 64, seqs(0, 0))
	in.send(6, 64, seqs(0, 5, 6)) // a previous trial's stragglers
	// A frame with the generator's layout but a wrong magic, and an ARP frame.
	in.d.Len = buildFrame(in.d.Buf, &in.addrs, 64, 0, packet.ECT0, 1, Header{Run: 7})
	in.d.Buf[headerOff] ^= 0xff
	in.tx.Transmit([]*packet.Desc{&in.d})
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	in.d.Len = copy(in.d.Buf, arp)
	in.tx.Transmit([]*packet.Desc{&in.d})
	in.drain()
	in.send(7, 64, seqs(0, 1))
	r := in.sink.Report()
	if r.Received != 2 || r.Lost != 0 || r.Stale != 2 || r.Foreign != 2 {
		t.Errorf("received %d lost %d stale %d foreign %d; want 2, 0, 2, 2", r.Received, r.Lost, r.Stale, r.Foreign)
	}
	if tot := in.sink.Totals(); tot.Packets != 6 {
		t.Errorf("Totals().Packets = %d, want every frame received (6)", tot.Packets)
	}
}

// TestSinkMatchesOracle checks the counters against a direct count on
// random fault sequences: lost = highest+1 − distinct, duplicated = frames
// whose sequence number came before, reordered = first arrivals below the
// highest so far. The window is larger than any displacement, so nothing
// is late.
func TestSinkMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		var frames []sent
		for s := uint32(0); s < 2000; s++ {
			switch x := rng.IntN(100); {
			case x < 5: // lost
			case x < 8: // duplicated, right away or later
				frames = append(frames, sent{seq: s}, sent{seq: s})
			default:
				frames = append(frames, sent{seq: s, ce: x >= 90})
			}
		}
		for range 100 { // displace frames by up to 300 positions
			i := rng.IntN(len(frames))
			j := min(len(frames)-1, i+rng.IntN(300))
			frames[i], frames[j] = frames[j], frames[i]
		}
		seen := map[uint32]bool{}
		var top int64 = -1
		var dup, reord, ce uint64
		for _, f := range frames {
			if f.ce {
				ce++
			}
			switch {
			case seen[f.seq]:
				dup++
			case int64(f.seq) < top:
				reord++
			}
			seen[f.seq] = true
			top = max(top, int64(f.seq))
		}
		lost := uint64(top+1) - uint64(len(seen))

		in := newInjector(t, SinkConfig{Window: 1024}, 0)
		in.send(0, 64, frames)
		r := in.sink.Report()
		if r.Received != uint64(len(frames)) || r.Lost != lost || r.Duplicated != dup || r.Reordered != reord || r.CE != ce || r.Late != 0 {
			t.Fatalf("trial %d: received %d lost %d dup %d reord %d ce %d late %d\nwant %d, %d, %d, %d, %d, 0",
				trial, r.Received, r.Lost, r.Duplicated, r.Reordered, r.CE, r.Late, len(frames), lost, dup, reord, ce)
		}
	}
}

// TestSinkLatency: over a link with a fixed 37.5 µs delay, every frame's
// one-way latency is the delay (the memory port stamps RxTime with the
// arrival time, the injector stamps TxTime with the send time).
func TestSinkLatency(t *testing.T) {
	const delay = 37_500
	in := newInjector(t, SinkConfig{}, delay)
	in.send(0, 64, seqs(0, 0, 1, 2, 3, 4, 5, 6, 7))
	l := in.sink.Report().Latency
	// HDR with 3 significant digits: equivalent values are within 0.1%.
	near := func(v int64) bool { return v >= delay-delay/1000 && v <= delay+delay/1000 }
	if l.Count != 8 || !near(l.Min) || !near(l.P50) || !near(l.P999) || !near(l.Max) || l.Negative != 0 {
		t.Errorf("latency %+v, want 8 frames at %d ns", l, delay)
	}
}

func TestSinkReportFormats(t *testing.T) {
	in := newInjector(t, SinkConfig{}, 1000)
	in.send(0, 1518, []sent{{0, 0, false}, {0, 2, true}, {1, 0, false}})
	r := in.sink.Report()
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Received != 3 || back.Lost != 1 || back.CE != 1 || len(back.Flows) != 2 || back.Bytes != 3*1518 {
		t.Errorf("JSON round trip: %+v", back)
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"lost 1", "CE 1", "p99", "flow"} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, txt.String())
		}
	}
}

func TestSinkPollAllocatesNothing(t *testing.T) {
	in := newInjector(t, SinkConfig{}, 0)
	in.sink.Prepare(4)
	frames := make([]*packet.Desc, 64)
	for i := range frames {
		frames[i] = &packet.Desc{Buf: make([]byte, 2048)}
		frames[i].Len = buildFrame(frames[i].Buf, &in.addrs, 64, 0, packet.ECT0, 1, Header{Flow: uint16(i % 4)})
	}
	seq := uint32(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i, d := range frames {
			putHeader(d.Buf, Header{Seq: seq + uint32(i/4), TxTime: in.clk.Now()}, false)
		}
		seq += 16
		in.tx.Transmit(frames)
		in.sink.Poll(in.clk.Now())
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 64-frame Poll, want 0", allocs)
	}
	if r := in.sink.Report(); r.Lost != 0 || r.Duplicated != 0 || r.Reordered != 0 || r.Received < 64*100 {
		t.Errorf("steady stream miscounted: %+v", r)
	}
}

// BenchmarkSinkPoll is the sink's cost per frame: receive from a memory
// link, parse, read the header, count, record latency.
func BenchmarkSinkPoll(b *testing.B) {
	in := newInjector(b, SinkConfig{}, 0)
	in.sink.Prepare(16)
	frames := make([]*packet.Desc, 64)
	for i := range frames {
		frames[i] = &packet.Desc{Buf: make([]byte, 2048)}
		frames[i].Len = buildFrame(frames[i].Buf, &in.addrs, 64, 0, packet.ECT0, 1, Header{Flow: uint16(i % 16)})
	}
	seq := uint32(0)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += len(frames) {
		for i, d := range frames {
			putHeader(d.Buf, Header{Seq: seq + uint32(i/16), TxTime: in.clk.Now()}, false)
		}
		seq += 4
		in.tx.Transmit(frames)
		in.sink.Poll(in.clk.Now())
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "ns/frame")
	b.ReportMetric(1e3/ns, "Mpps")
	b.ReportMetric(0, "ns/op")
}
