package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestXDPSinkThroughVeth: the live-frames generator in a testbed host
// sends IMIX over 8 flows in two DSCP×ECN classes, paced, through the
// host's veth to the XDP sink attached to the other end: every frame
// arrives once and in order, the bytes and the CE-free classes match
// what the generator sent, and every sampled latency is positive.
// Counted, not timed.
func TestXDPSinkThroughVeth(t *testing.T) {
	tb := testbedtest.New(t, 1)
	h := tb.Hosts()[0]
	clock, err := bench.NewSystemClock()
	if err != nil {
		t.Fatal(err)
	}
	s, err := bench.NewXDPSink(bench.SinkConfig{Run: 5, Flows: 16, Sample: 0.25}, "", h.SwitchIf, false, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	// The sink's program on the switch end lets the host end take live frames.
	if ok, err := bench.LiveUsable(h.Netns, h.HostIf); !ok {
		t.Fatalf("live frames unusable with the sink attached: %v", err)
	}
	ecn, _ := bench.ParseECN("ect0:1,notect:1")
	const count = 20000
	cfg := bench.GeneratorConfig{
		Addresses: bench.Addresses{SrcMAC: h.MAC, DstMAC: h.SwitchMAC, SrcIP: h.IPv4, DstIP: h.IPv4.Next()},
		Run:       5, Sizes: bench.IMIX(), ECN: ecn, Flows: 8, Rate: bench.Rate{Packets: 100_000}, Count: count,
	}
	g, err := bench.NewLiveGenerator(cfg, bench.LiveConfig{Netns: h.Netns, Iface: h.HostIf}, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	sinkDone := make(chan error, 1)
	go func() { sinkDone <- s.Run(ctx) }()
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := func() bench.Report {
		r, err := s.Report()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for deadline := time.Now().Add(5 * time.Second); rep().Received < count && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-sinkDone; err != nil {
		t.Fatal(err)
	}
	r, st := rep(), g.Stats()
	if st.Sent != count || r.Received != count || r.Lost != 0 || r.Reordered != 0 || r.Duplicated != 0 || r.Stale != 0 || r.Unknown != 0 {
		t.Errorf("sent %d; received %d, lost %d, reordered %d, duplicated %d, stale %d, unknown %d: want all %d once, in order",
			st.Sent, r.Received, r.Lost, r.Reordered, r.Duplicated, r.Stale, r.Unknown, count)
	}
	if r.Bytes != st.Bytes || r.CE != 0 || len(r.Flows) != 8 || r.Mode != bench.SinkXDP {
		t.Errorf("received %d bytes, %d CE, %d flows, mode %q; want the %d bytes sent, no CE, 8 flows, xdp", r.Bytes, r.CE, len(r.Flows), r.Mode, st.Bytes)
	}
	for _, f := range r.Flows {
		if f.Received != count/8 || f.Highest != count/8-1 {
			t.Errorf("flow %d: %d frames up to %d, want %d", f.Flow, f.Received, f.Highest, count/8)
		}
	}
	// Binomial(20000, 1/4): σ ≈ 61; 8σ bounds.
	if l := r.Latency; l.Negative != 0 || l.Min <= 0 || l.Count < 5000-500 || l.Count > 5000+500 || l.SamplesLost != 0 {
		t.Errorf("latency %+v: want about a quarter of the frames sampled, all positive", l)
	}
}
