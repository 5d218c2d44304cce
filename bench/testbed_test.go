package bench_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestGeneratorRateThroughTestbed: the generator in one testbed host sends
// IMIX at 100 Mbit/s and then 10 Mbit/s over AF_XDP through ecnswitch (two
// AF_XDP ports patched) to a sink in the other host; the bit rate the sink
// receives over a fixed 2 s interval, after 0.5 s of warm-up, is within 1%
// of the target. Every frame arrives once and in order, and the one-way
// latency is positive: generator and sink share CLOCK_MONOTONIC across
// the two namespaces.
func TestGeneratorRateThroughTestbed(t *testing.T) {
	tbd := testbedtest.New(t, 2)
	hosts := tbd.Hosts()
	clock, err := bench.NewSystemClock()
	if err != nil {
		t.Fatal(err)
	}
	ifaces := []string{hosts[0].SwitchIf, hosts[1].SwitchIf}
	sw, err := node.Start(bench.PatchConfig(ifaces), node.Devices(ifaces, bench.PortOptions(nil)), clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sw.Stop(); err != nil {
			t.Error(err)
		}
	})
	gen, err := bench.OpenPort(hosts[0].Netns, hosts[0].HostIf, bench.PortOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gen.Close() })
	sinkPort, err := bench.OpenPort(hosts[1].Netns, hosts[1].HostIf, bench.SinkPortOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sinkPort.Close() })

	const (
		warmup   = 500 * time.Millisecond
		interval = 2 * time.Second
	)
	for i, rate := range []float64{100e6, 10e6} {
		run := uint16(i + 1)
		sink, err := bench.NewSink(bench.SinkConfig{Run: run}, sinkPort, clock)
		if err != nil {
			t.Fatal(err)
		}
		sink.Prepare(4)
		g, err := bench.NewGenerator(bench.GeneratorConfig{
			Addresses: bench.Addresses{SrcMAC: hosts[0].MAC, DstMAC: hosts[1].MAC, SrcIP: hosts[0].IPv4, DstIP: hosts[1].IPv4},
			Sizes:     bench.IMIX(), Flows: 4, Rate: bench.Rate{Bits: rate}, Duration: warmup + interval + 300*time.Millisecond, Run: run,
		}, gen, clock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		sinkDone, genDone := make(chan error, 1), make(chan error, 1)
		go func() { sinkDone <- sink.Run(ctx) }()
		go func() { genDone <- g.Run(ctx) }()

		time.Sleep(warmup)
		t0, b0 := clock.Now(), sink.Totals().Bytes
		time.Sleep(interval)
		t1, b1 := clock.Now(), sink.Totals().Bytes
		if err := <-genDone; err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // stragglers
		stop()
		if err := <-sinkDone; err != nil {
			t.Fatal(err)
		}

		got := float64(b1-b0) * 8 / (float64(t1-t0) / 1e9)
		e := (got - rate) / rate
		rep, st := sink.Report(), g.Stats()
		t.Logf("%g bit/s: %.6g bit/s at the sink over %v (%+.3f%%); sent %d, received %d, late %v, latency p50 %v p99 %v",
			rate, got, time.Duration(t1-t0), 100*e, st.Sent, rep.Received, time.Duration(st.Late),
			time.Duration(rep.Latency.P50), time.Duration(rep.Latency.P99))
		if math.Abs(e) > 0.01 {
			t.Errorf("%g bit/s: the sink received %.6g bit/s, %+.2f%% off", rate, got, 100*e)
		}
		if rep.Received != st.Sent || rep.Lost != 0 || rep.Reordered != 0 || rep.Duplicated != 0 {
			t.Errorf("%g bit/s: sent %d, received %d, lost %d, reordered %d, duplicated %d; want every frame once, in order",
				rate, st.Sent, rep.Received, rep.Lost, rep.Reordered, rep.Duplicated)
		}
		if l := rep.Latency; l.Negative != 0 || l.Count != int64(rep.Received) || l.Min <= 0 || l.P50 > int64(10*time.Millisecond) {
			t.Errorf("%g bit/s: latency %+v: want every frame's positive and the median under 10 ms", rate, l)
		}
	}
}
