package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// patchRig is a generator in one testbed host sending over AF_XDP through
// ecnswitch (two AF_XDP ports patched) to a sink in the other host.
type patchRig struct {
	tb         testing.TB
	gen, sink  *loadgen.NetnsPort
	genNetns   string // the generator's host
	genIf      string
	addrs      loadgen.Addresses
	clock      *loadgen.SystemClock
	runs       uint16
	sinkCancel context.CancelFunc
	sw         *node.Switch
}

// dropped returns every frame counted as dropped on the way from the
// generator's host to the sink so far: by the switch (with a reason), by
// its ports' devices and the kernel below them, and by the kernel below
// the sink.
func (r *patchRig) dropped() uint64 {
	var n uint64
	for _, p := range r.sw.Stats().Ports {
		for _, d := range p.Drops {
			n += d
		}
		if p.Device != nil {
			n += p.Device.RxDropped + p.Device.RxOversize + p.Device.TxErrors
		}
	}
	st := r.sink.Stats()
	return n + st.RxDropped + st.RxOversize
}

// waitDelivered waits until the sink has received, or the path counted as
// dropped, count frames, and a little more for duplicates. It is counted,
// not timed: a loaded machine delays frames; the timeout only ends a hang.
func (r *patchRig) waitDelivered(s *loadgen.Sink, count uint64) {
	r.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.Totals().Packets+r.dropped() < count {
		if time.Now().After(deadline) {
			r.tb.Fatalf("after a minute the sink has %d frames and %d were dropped, of %d", s.Totals().Packets, r.dropped(), count)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// newPatchRig opens the AF_XDP generator's port unless live (a live
// generator's program is attached to the generator's interface instead).
func newPatchRig(tb testing.TB, live bool) *patchRig {
	tbd := testbedtest.New(tb, 2)
	hosts := tbd.Hosts()
	clock, err := loadgen.NewSystemClock()
	if err != nil {
		tb.Fatal(err)
	}
	ifaces := []string{hosts[0].SwitchIf, hosts[1].SwitchIf}
	sw, err := node.Start(bench.PatchConfig(ifaces), node.Devices(ifaces, bench.PortOptions(nil)), clock, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := sw.Stop(); err != nil {
			tb.Error(err)
		}
	})
	r := &patchRig{tb: tb, sw: sw, clock: clock, genNetns: hosts[0].Netns, genIf: hosts[0].HostIf,
		addrs: loadgen.Addresses{SrcMAC: hosts[0].MAC, DstMAC: hosts[1].MAC, SrcIP: hosts[0].IPv4, DstIP: hosts[1].IPv4}}
	if !live {
		if r.gen, err = loadgen.OpenPort(hosts[0].Netns, hosts[0].HostIf, bench.PortOptions(nil)); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { r.gen.Close() })
	}
	if r.sink, err = loadgen.OpenPort(hosts[1].Netns, hosts[1].HostIf, bench.SinkPortOptions(nil)); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.sink.Close() })
	return r
}

// start runs a new sink and a generator of cfg (addresses and run filled
// in); stop ends the sink after the generator is done and the frames in
// flight had linger to arrive.
func (r *patchRig) start(cfg loadgen.GeneratorConfig) (g *loadgen.Generator, s *loadgen.Sink, stop func(linger time.Duration)) {
	r.tb.Helper()
	r.runs++
	cfg.Addresses, cfg.Run = r.addrs, r.runs
	s, err := loadgen.NewSink(loadgen.SinkConfig{Run: r.runs}, r.sink, r.clock)
	if err != nil {
		r.tb.Fatal(err)
	}
	s.Prepare(cfg.Flows)
	if g, err = loadgen.NewGenerator(cfg, r.gen, r.clock); err != nil {
		r.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sinkDone, genDone := make(chan error, 1), make(chan error, 1)
	go func() { sinkDone <- s.Run(ctx) }()
	go func() { genDone <- g.Run(ctx) }()
	return g, s, func(linger time.Duration) {
		r.tb.Helper()
		if err := <-genDone; err != nil {
			r.tb.Error(err)
		}
		time.Sleep(linger)
		cancel()
		if err := <-sinkDone; err != nil {
			r.tb.Error(err)
		}
	}
}

// TestGeneratorThroughTestbed: 20000 IMIX frames of 4 flows at 10 Mbit/s
// over AF_XDP through ecnswitch reach a sink in another namespace, every
// frame once and in order, each with a positive one-way latency
// (generator and sink share CLOCK_MONOTONIC across the namespaces), or
// are counted as dropped on the way (a loaded machine may starve the
// switch or the sink). The frames are counted, not timed: how close the
// rate comes to its target on the wall clock is
// BenchmarkGeneratorRateThroughTestbed, and on the generator's own
// schedule TestGeneratorAccuracy.
func TestGeneratorThroughTestbed(t *testing.T) {
	r := newPatchRig(t, false)
	const count = 20000
	g, s, stop := r.start(loadgen.GeneratorConfig{Sizes: loadgen.IMIX(), Flows: 4, Rate: loadgen.Rate{Bits: 10e6}, Count: count})
	// Totals counts every frame the sink got, a host's own (IPv6 neighbour
	// discovery, say) too, so it can reach count while this run's last
	// frame is still on its way: stop lingers a second more.
	r.waitDelivered(s, count)
	stop(time.Second)
	rep, st, dropped := s.Report(), g.Stats(), r.dropped()
	if st.Sent != count || rep.Received+dropped != count || rep.Lost > dropped || rep.Reordered != 0 || rep.Duplicated != 0 {
		t.Errorf("sent %d, received %d, lost %d, reordered %d, duplicated %d, %d counted as dropped; want all %d received once, in order, or counted",
			st.Sent, rep.Received, rep.Lost, rep.Reordered, rep.Duplicated, dropped, count)
	}
	if l := rep.Latency; l.Negative != 0 || l.Count != int64(rep.Received) || l.Min <= 0 {
		t.Errorf("latency %+v: want every frame's, all positive", l)
	}
}

// rateCases are the rates the generator benchmarks offer through a testbed.
var rateCases = []struct {
	rate  float64
	sizes []loadgen.Share[int]
	name  string
}{
	{10e6, loadgen.IMIX(), "IMIX"},
	{1e9, loadgen.IMIX(), "IMIX"},
	{10e9, []loadgen.Share[int]{{Value: 1518, Weight: 1}}, "1518B"},
}

// reportRate reports the offered and received rates' errors against rate,
// and the loss, of a window of ns nanoseconds in which the generator
// offered offered bytes and the sink received received.
func reportRate(b *testing.B, rate float64, ns int64, offered, received uint64, rep loadgen.Report, st loadgen.GeneratorStats) {
	secs := float64(ns) / 1e9
	off, rcv := float64(offered)*8/secs, float64(received)*8/secs
	b.ReportMetric(100*(off-rate)/rate, "offered_err_%")
	b.ReportMetric(100*(rcv-rate)/rate, "received_err_%")
	b.ReportMetric(100*float64(rep.Lost)/float64(max(st.Sent, 1)), "loss_%")
	b.ReportMetric(0, "ns/op")
	b.Logf("%g bit/s: offered %.6g, received %.6g bit/s over %v; sent %d, received %d, lost %d, late %v, latency p50 %v p99 %v",
		rate, off, rcv, time.Duration(ns), st.Sent, rep.Received, rep.Lost, time.Duration(st.Late),
		time.Duration(rep.Latency.P50), time.Duration(rep.Latency.P99))
}

// BenchmarkGeneratorRateThroughTestbed measures the generator's rate
// accuracy on the wall clock, through a testbed: the offered rate (what
// the port took, by the generator's counters) and the rate a sink
// received through ecnswitch, over 2 s after 0.5 s of warm-up, at
// 10 Mbit/s and 1 Gbit/s (IMIX) and 10 Gbit/s (1518 B), as offered_err_%
// and received_err_% (the signed error against the target) and loss_%.
// A measurement, not a test: run it on a quiet machine
// (docs/load-testing.md):
//
//	flock -x /tmp/ecnswitch-quiet.lock go test -run '^$' -bench RateThroughTestbed -benchtime 1x ./bench
func BenchmarkGeneratorRateThroughTestbed(b *testing.B) {
	r := newPatchRig(b, false)
	const (
		warmup   = 500 * time.Millisecond
		interval = 2 * time.Second
	)
	for _, c := range rateCases {
		b.Run(fmt.Sprintf("%gbit/s_%s", c.rate, c.name), func(b *testing.B) {
			for range b.N {
				g, s, stop := r.start(loadgen.GeneratorConfig{
					Sizes: c.sizes, Flows: 4, Rate: loadgen.Rate{Bits: c.rate}, Duration: warmup + interval + 300*time.Millisecond,
				})
				time.Sleep(warmup)
				t0, o0, r0 := r.clock.Now(), g.Stats().Bytes, s.Totals().Bytes
				time.Sleep(interval)
				t1, o1, r1 := r.clock.Now(), g.Stats().Bytes, s.Totals().Bytes
				stop(200 * time.Millisecond)
				reportRate(b, c.rate, t1-t0, o1-o0, r1-r0, s.Report(), g.Stats())
			}
		})
	}
}

// BenchmarkLiveGeneratorRateThroughTestbed is
// BenchmarkGeneratorRateThroughTestbed for the live-frames generator
// (one thread): the offered rate is the program's count of what it sent.
//
//	flock -x /tmp/ecnswitch-quiet.lock go test -run '^$' -bench LiveGeneratorRate -benchtime 1x ./bench
func BenchmarkLiveGeneratorRateThroughTestbed(b *testing.B) {
	r := newPatchRig(b, true)
	const (
		warmup   = 500 * time.Millisecond
		interval = 2 * time.Second
	)
	for _, c := range rateCases {
		b.Run(fmt.Sprintf("%gbit/s_%s", c.rate, c.name), func(b *testing.B) {
			for range b.N {
				r.runs++
				cfg := loadgen.GeneratorConfig{Addresses: r.addrs, Run: r.runs, Sizes: c.sizes, Flows: 4,
					Rate: loadgen.Rate{Bits: c.rate}, Duration: warmup + interval + 300*time.Millisecond}
				g, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: r.genNetns, Iface: r.genIf, CPUs: []int{0}}, r.clock)
				if err != nil {
					b.Fatal(err)
				}
				s, err := loadgen.NewSink(loadgen.SinkConfig{Run: r.runs}, r.sink, r.clock)
				if err != nil {
					b.Fatal(err)
				}
				s.Prepare(4)
				ctx, cancel := context.WithCancel(context.Background())
				sinkDone, genDone := make(chan error, 1), make(chan error, 1)
				go func() { sinkDone <- s.Run(ctx) }()
				go func() { genDone <- g.Run(context.Background()) }()
				time.Sleep(warmup)
				t0, o0, r0 := r.clock.Now(), g.Stats().Bytes, s.Totals().Bytes
				time.Sleep(interval)
				t1, o1, r1 := r.clock.Now(), g.Stats().Bytes, s.Totals().Bytes
				if err := <-genDone; err != nil {
					b.Error(err)
				}
				time.Sleep(200 * time.Millisecond)
				cancel()
				if err := <-sinkDone; err != nil {
					b.Error(err)
				}
				g.Close()
				reportRate(b, c.rate, t1-t0, o1-o0, r1-r0, s.Report(), g.Stats())
			}
		})
	}
}
