package loadgen

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/loadgen/xdpsink"
	"github.com/ecnswitch/ecnswitch/packet"
)

// xdpInjector runs hand-made frame sequences through an XDPSink's program
// with BPF_PROG_RUN, from memory, on one CPU, as a device would deliver
// them: the expected counts follow from the sequences alone.
type xdpInjector struct {
	tb    testing.TB
	sink  *XDPSink
	addrs Addresses
	d     packet.Desc
}

func newXDPInjector(tb testing.TB, cfg SinkConfig) *xdpInjector {
	tb.Helper()
	testenv.MustBeRoot(tb, "BPF programs")
	pinThread(tb, 0)
	s, err := newXDPSink(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	g := GeneratorConfig{}
	if err := g.setDefaults(); err != nil {
		tb.Fatal(err)
	}
	return &xdpInjector{tb: tb, sink: s, addrs: g.Addresses, d: packet.Desc{Buf: make([]byte, 2048)}}
}

// pinThread keeps the test's goroutine on its thread and the thread on
// cpu until the test ends: the program counts per CPU.
func pinThread(tb testing.TB, cpu int) {
	tb.Helper()
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		tb.Fatal(err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := unix.SchedSetaffinity(0, &old); err != nil {
			tb.Error(err)
		}
		runtime.UnlockOSThread()
	})
}

// send runs frames of run through the program, each stamped with txTime.
func (in *xdpInjector) send(run uint16, size int, frames []sent, txTime int64) {
	in.tb.Helper()
	for _, f := range frames {
		in.d.Len = buildFrame(in.d.Buf, &in.addrs, size, 8, packet.ECT0, DefaultSrcPort+f.flow,
			Header{Run: run, Flow: f.flow, Seq: f.seq, TxTime: txTime})
		if f.ce {
			if err := packet.Parse(&in.d); err != nil || !packet.SetCE(&in.d) {
				in.tb.Fatalf("cannot mark frame CE: %v", err)
			}
		}
		in.inject(in.d.Buf[:in.d.Len], xdpsink.Drop)
	}
}

func (in *xdpInjector) inject(frame []byte, want xdpsink.Action) {
	in.tb.Helper()
	a, err := in.sink.prog.Inject(frame)
	if err != nil {
		in.tb.Fatal(err)
	}
	if a != want {
		in.tb.Fatalf("action %d, want %d", a, want)
	}
}

func (in *xdpInjector) report() Report {
	in.tb.Helper()
	r, err := in.sink.Report()
	if err != nil {
		in.tb.Fatal(err)
	}
	return r
}

// TestXDPSinkCountsInjectedFaults: the XDP sink counts every injected
// fault sequence exactly as the AF_XDP sink must (the same table).
func TestXDPSinkCountsInjectedFaults(t *testing.T) {
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) {
			in := newXDPInjector(t, SinkConfig{Window: c.window})
			in.send(0, 64, c.frames, 1)
			r := in.report()
			got := faultWant{r.Received, r.Lost, r.Reordered, r.Duplicated, r.Late, r.CE}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
			if len(r.Flows) != 1 || r.Flows[0].Received != c.want.received || r.Flows[0].DSCP != 8 || r.Flows[0].CPUs != 1 {
				t.Errorf("flows = %+v, want one flow with DSCP 8 and %d frames, on one CPU", r.Flows, c.want.received)
			}
			if r.Mode != SinkXDP || r.Bytes != 64*c.want.received {
				t.Errorf("mode %q, %d bytes: want xdp, %d", r.Mode, r.Bytes, 64*c.want.received)
			}
		})
	}
}

// TestXDPSinkMatchesSink runs random fault sequences of three interleaved
// flows (loss, duplicates, displacements beyond the 64-number window, CE)
// through both sinks: every count of every flow agrees.
func TestXDPSinkMatchesSink(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 10 {
		var frames []sent
		for s := uint32(0); s < 1500; s++ {
			for fl := range uint16(3) {
				switch x := rng.IntN(100); {
				case x < 5: // lost
				case x < 8:
					frames = append(frames, sent{flow: fl, seq: s}, sent{flow: fl, seq: s, ce: x == 7})
				default:
					frames = append(frames, sent{flow: fl, seq: s, ce: x >= 90})
				}
			}
		}
		for range 150 {
			i := rng.IntN(len(frames))
			j := min(len(frames)-1, i+rng.IntN(400))
			frames[i], frames[j] = frames[j], frames[i]
		}
		af := newInjector(t, SinkConfig{Window: 64}, 0)
		af.send(0, 100, frames)
		want := af.sink.Report()
		x := newXDPInjector(t, SinkConfig{Window: 64})
		x.send(0, 100, frames, 1)
		got := x.report()
		if got.Received != want.Received || got.Lost != want.Lost || got.Reordered != want.Reordered ||
			got.Duplicated != want.Duplicated || got.Late != want.Late || got.CE != want.CE || got.Bytes != want.Bytes {
			t.Fatalf("trial %d: XDP sink %+v\nAF_XDP sink %+v", trial, got, want)
		}
		if want.Late == 0 || want.Duplicated == 0 || want.Lost == 0 {
			t.Fatalf("trial %d: %+v: want late, duplicated and lost frames in the sequence", trial, want)
		}
		for i := range want.Flows {
			w := want.Flows[i]
			w.CPUs = 1
			if got.Flows[i] != w {
				t.Errorf("trial %d flow %d: XDP %+v\nAF_XDP %+v", trial, i, got.Flows[i], w)
			}
		}
	}
}

// TestXDPSinkSkipsForeignAndStale: frames that are not a generator's pass
// to the kernel and are counted as foreign (malformed if their headers
// are cut short), other runs' as stale, flows beyond the table as
// unknown; none reaches the flow counters; Totals counts them all.
func TestXDPSinkSkipsForeignAndStale(t *testing.T) {
	in := newXDPInjector(t, SinkConfig{Run: 7, Flows: 4})
	in.send(7, 64, seqs(0, 0), 1)
	in.send(6, 64, seqs(0, 5, 6), 1) // a previous trial's stragglers
	in.send(7, 64, seqs(4, 0), 1)    // beyond the 4 flows
	n := buildFrame(in.d.Buf, &in.addrs, 64, 0, packet.ECT0, 1, Header{Run: 7})
	in.d.Buf[headerOff] ^= 0xff
	in.inject(in.d.Buf[:n], xdpsink.Pass)
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	in.inject(arp, xdpsink.Pass)
	n = buildFrame(in.d.Buf, &in.addrs, 64, 0, packet.ECT0, 1, Header{Run: 7})
	in.inject(in.d.Buf[:headerOff+HeaderLen-1], xdpsink.Pass) // the header cut short
	in.send(7, 64, seqs(0, 1), 1)
	r := in.report()
	if r.Received != 2 || r.Lost != 0 || r.Stale != 2 || r.Foreign != 3 || r.Malformed != 1 || r.Unknown != 1 || len(r.Flows) != 1 {
		t.Errorf("received %d lost %d stale %d foreign %d malformed %d unknown %d flows %d; want 2, 0, 2, 3, 1, 1, 1",
			r.Received, r.Lost, r.Stale, r.Foreign, r.Malformed, r.Unknown, len(r.Flows))
	}
	if tot := in.sink.Totals(); tot.Packets != 8 || tot.Bytes != 7*64+uint64(headerOff+HeaderLen-1+FCS) {
		t.Errorf("Totals() = %+v, want every frame (8) and its bytes", tot)
	}
}

// TestXDPSinkLatency: with every frame sampled, each frame's one-way
// latency (the program's receive time minus the TX stamp) reaches the
// histogram; Run reads the samples left when its context is done.
func TestXDPSinkLatency(t *testing.T) {
	in := newXDPInjector(t, SinkConfig{Sample: 1})
	clk, err := NewSystemClock()
	if err != nil {
		t.Fatal(err)
	}
	const age = 3_000_000 // stamped 3 ms before the frames are sent
	in.send(0, 64, seqs(0, 0, 1, 2, 3, 4, 5, 6, 7), clk.Now()-age)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := in.sink.Run(ctx); err != nil {
		t.Fatal(err)
	}
	l := in.report().Latency
	if l.Count != 8 || l.Min < age || l.Max > age+int64(1e9) || l.Negative != 0 || l.Sample != 1 || l.SamplesLost != 0 {
		t.Errorf("latency %+v, want 8 frames, each at least 3 ms, all sampled", l)
	}
}

// TestXDPSinkReset: a new trial forgets the last: its sequence numbers
// are new again, and the last trial's frames are stale.
func TestXDPSinkReset(t *testing.T) {
	in := newXDPInjector(t, SinkConfig{Run: 1})
	in.send(1, 64, seqs(0, 0, 1, 2), 1)
	if err := in.sink.Reset(2); err != nil {
		t.Fatal(err)
	}
	in.send(1, 64, seqs(0, 3), 1)
	in.send(2, 64, seqs(0, 0, 1), 1)
	r := in.report()
	if r.Run != 2 || r.Received != 2 || r.Duplicated != 0 || r.Stale != 1 || r.Lost != 0 {
		t.Errorf("after Reset(2): %+v; want run 2's 2 frames new, run 1's one stale", r)
	}
}

func TestXDPSinkReportText(t *testing.T) {
	in := newXDPInjector(t, SinkConfig{})
	in.send(0, 1518, []sent{{0, 0, false}, {0, 2, true}, {1, 0, false}}, 1)
	r := in.report()
	r.Flows[1].CPUs = 2 // as if flow 1 had arrived on two CPUs
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"(xdp sink)", "lost 1", "CE 1", "sampled, 0.0156 of all", "1*", "1 flows arrived on more than one CPU"} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, txt.String())
		}
	}
}
