package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/loadgen"
)

// TestLiveGeneratorThroughTestbed: the live-frames generator in one
// testbed host sends, through ecnswitch (two AF_XDP ports patched), to an
// AF_XDP sink in the other: IMIX in 4 DSCP×ECN classes over 16 flows,
// from one thread and then from two, paced, and unpaced. Paced, every
// frame arrives once and in order in its flow (each thread sends its own
// flows), every flow keeps its class, the sizes and classes keep their
// shares, and every latency is positive (the program stamps
// CLOCK_MONOTONIC, which the sink reads) — or, where a loaded machine
// starved the switch or the sink, is counted as dropped on the way, and
// each flow misses at most the drops. Unpaced, the program sends exactly
// Count, and the switch may drop some. Counted, not timed.
func TestLiveGeneratorThroughTestbed(t *testing.T) {
	r := newPatchRig(t, true)
	if ok, err := loadgen.LiveUsable(r.genNetns, r.genIf); !ok {
		t.Skipf("live frames unusable here: %v", err)
	}
	dscp, _ := loadgen.ParseDSCP("0:50,8:50")
	ecn, _ := loadgen.ParseECN("ect0:3,notect:1")
	for _, c := range []struct {
		name  string
		rate  loadgen.Rate
		count uint64
		cpus  []int
	}{
		{"paced, one thread", loadgen.Rate{Packets: 5000}, 9600, nil},
		{"unpaced, one thread", loadgen.Rate{}, 9600, nil},
		{"paced, two threads", loadgen.Rate{Packets: 5000}, 9600, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.runs++
			cfg := loadgen.GeneratorConfig{Addresses: r.addrs, Run: r.runs, Sizes: loadgen.IMIX(), DSCP: dscp, ECN: ecn,
				Flows: 16, Rate: c.rate, Count: c.count}
			g, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: r.genNetns, Iface: r.genIf, CPUs: c.cpus}, r.clock)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s, err := loadgen.NewSink(loadgen.SinkConfig{Run: r.runs}, r.sink, r.clock)
			if err != nil {
				t.Fatal(err)
			}
			s.Prepare(16)
			ctx, cancel := context.WithCancel(context.Background())
			sinkDone := make(chan error, 1)
			go func() { sinkDone <- s.Run(ctx) }()
			dropped0 := r.dropped()
			if err := g.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c.rate == (loadgen.Rate{}) {
				time.Sleep(300 * time.Millisecond) // some are lost uncounted: veth drops what overflows its ring
			} else {
				r.waitDelivered(s, c.count+dropped0)
			}
			cancel()
			if err := <-sinkDone; err != nil {
				t.Fatal(err)
			}
			rep, st := s.Report(), g.Stats()
			if c.rate == (loadgen.Rate{}) {
				// Unpaced, the program outruns the switch, which drops
				// what it cannot take: what arrives is checked, not how much.
				if st.Sent != c.count || rep.Received == 0 || rep.Received > c.count || rep.Reordered != 0 || rep.Duplicated != 0 {
					t.Errorf("sent %d, received %d, reordered %d, duplicated %d; want the %d of Count sent, each received at most once, in order",
						st.Sent, rep.Received, rep.Reordered, rep.Duplicated, c.count)
				}
				return
			}
			if st.Sent != c.count || st.Bytes == 0 {
				t.Errorf("the program sent %d frames (%d bytes), want the %d of Count", st.Sent, st.Bytes, c.count)
			}
			dropped := r.dropped() - dropped0
			t.Logf("received %d, %d counted as dropped", rep.Received, dropped)
			if rep.Received+dropped != c.count || rep.Lost > dropped || rep.Reordered != 0 || rep.Duplicated != 0 {
				t.Errorf("received %d, lost %d, reordered %d, duplicated %d, %d counted as dropped; want all %d once, in order, or counted",
					rep.Received, rep.Lost, rep.Reordered, rep.Duplicated, dropped, c.count)
			}
			if dropped == 0 && rep.Bytes != st.Bytes {
				t.Errorf("received %d bytes, sent %d", rep.Bytes, st.Bytes)
			}
			if l := rep.Latency; l.Negative != 0 || l.Count != int64(rep.Received) || l.Min <= 0 {
				t.Errorf("latency %+v: want every frame's, all positive", l)
			}
			if len(rep.Flows) != 16 {
				t.Fatalf("%d flows, want 16", len(rep.Flows))
			}
			// 4 classes of weights 3:1:3:1 over 16 flows (4 each): the
			// ECT(0) flows carry 3/8 of the frames per class.
			classes := g.Classes()
			for _, f := range rep.Flows {
				cl := classes[int(f.Flow)%len(classes)]
				if f.DSCP != cl.DSCP {
					t.Errorf("flow %d: DSCP %d, want its class's %d", f.Flow, f.DSCP, cl.DSCP)
				}
				want := uint64(float64(c.count) * cl.Share / float64(len(cl.Flows)))
				if f.Received > want || f.Received+dropped < want {
					t.Errorf("flow %d: %d frames, want %d (share %.3f over %d flows), less at most the %d dropped", f.Flow, f.Received, want, cl.Share, len(cl.Flows), dropped)
				}
			}
		})
	}
}
