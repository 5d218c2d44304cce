package loadgen_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/testbed"
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
	clock, err := loadgen.NewSystemClock()
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadgen.NewXDPSink(loadgen.SinkConfig{Run: 5, Flows: 16, Sample: 0.25}, "", h.SwitchIf, false, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	// The sink's program on the switch end lets the host end take live frames.
	if ok, err := loadgen.LiveUsable(h.Netns, h.HostIf); !ok {
		t.Fatalf("live frames unusable with the sink attached: %v", err)
	}
	ecn, _ := loadgen.ParseECN("ect0:1,notect:1")
	const count = 20000
	cfg := loadgen.GeneratorConfig{
		Addresses: loadgen.Addresses{SrcMAC: h.MAC, DstMAC: h.SwitchMAC, SrcIP: h.IPv4, DstIP: h.IPv4.Next()},
		Run:       5, Sizes: loadgen.IMIX(), ECN: ecn, Flows: 8, Rate: loadgen.Rate{Packets: 100_000}, Count: count,
	}
	g, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: h.Netns, Iface: h.HostIf}, clock)
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
	settle(s, 5*time.Second)
	cancel()
	if err := <-sinkDone; err != nil {
		t.Fatal(err)
	}
	r, err := s.Report()
	if err != nil {
		t.Fatal(err)
	}
	st := g.Stats()
	if st.Sent != count || r.Received != count || r.Lost != 0 || r.Reordered != 0 || r.Duplicated != 0 || r.Stale != 0 || r.Unknown != 0 {
		t.Errorf("sent %d; received %d, lost %d, reordered %d, duplicated %d, stale %d, unknown %d: want all %d once, in order",
			st.Sent, r.Received, r.Lost, r.Reordered, r.Duplicated, r.Stale, r.Unknown, count)
	}
	if r.Bytes != st.Bytes || r.CE != 0 || len(r.Flows) != 8 || r.Mode != loadgen.SinkXDP {
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

// settle waits, at most d, until the sink has counted nothing new for
// 100 ms: the frames in flight have arrived. It reads Totals, which may be
// read while Run runs; Report may not (it reads the latency histogram Run
// writes).
func settle(s *loadgen.XDPSink, d time.Duration) {
	last, quiet := s.Totals(), 0
	for deadline := time.Now().Add(d); quiet < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if t := s.Totals(); t == last {
			quiet++
		} else {
			last, quiet = t, 0
		}
	}
}

// TestLiveSentExactOnSharedQueue: two generator threads, on two CPUs,
// sending into one veth queue, count exactly what they send: every frame
// Stats().Sent counts reaches the XDP sink once, or the veth refused it
// with its ring full and counted it (tx_queue_0_xdp_xmit_errors; paced at
// 200,000 frames/s, well below what the sink takes, it refuses frames only
// when a CPU stalls). The veth's count of frames into that queue
// (tx_queue_0_xdp_xmit) can fall short here: both CPUs add to it after the
// ring's lock is released, and the 2026-11-23 runs that saw Sent exceed it
// by 2,528 of 20 M had found lost updates of the kernel's counter, not
// frames the generator counted twice. Counted, not timed.
func TestLiveSentExactOnSharedQueue(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	tb := testbedtest.New(t, 1, func(o *testbed.Options) { o.Queues = 1 })
	h := tb.Hosts()[0]
	clock, err := loadgen.NewSystemClock()
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadgen.NewXDPSink(loadgen.SinkConfig{Run: 6, Flows: 16}, "", h.SwitchIf, false, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	const count = 200_000
	cfg := loadgen.GeneratorConfig{
		Addresses: loadgen.Addresses{SrcMAC: h.MAC, DstMAC: h.SwitchMAC, SrcIP: h.IPv4, DstIP: h.IPv4.Next()},
		Run:       6, Sizes: []loadgen.Share[int]{{Value: 64, Weight: 1}}, Flows: 16,
		Rate: loadgen.Rate{Packets: 200_000}, Count: count,
	}
	g, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: h.Netns, Iface: h.HostIf, CPUs: []int{0, 1}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	xmit0, refused0 := vethXmit(t, h.Netns, h.HostIf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sinkDone := make(chan error, 1)
	go func() { sinkDone <- s.Run(ctx) }()
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := g.Stats()
	xmit, refused := vethXmit(t, h.Netns, h.HostIf)
	xmit, refused = xmit-xmit0, refused-refused0
	settle(s, 5*time.Second)
	cancel()
	if err := <-sinkDone; err != nil {
		t.Fatal(err)
	}
	r, err := s.Report()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d: the sink received %d, the veth refused %d; it counted %d into its queue", st.Sent, r.Received, refused, xmit)
	if st.Sent != count || r.Received+refused != count || r.Duplicated != 0 || r.Stale != 0 || r.Unknown != 0 {
		t.Errorf("sent %d; received %d + refused by the veth %d, duplicated %d, stale %d, unknown %d: want the %d sent, each once",
			st.Sent, r.Received, refused, r.Duplicated, r.Stale, r.Unknown, count)
	}
}

// BenchmarkXDPSinkRate: the live-frames generator, one thread per CPU,
// sends b.N frames unpaced from a testbed host into its veth (one queue
// per CPU), and the XDP sink attached to the other end counts them. The
// veth delivers each CPU's frames to its own queue, whose receive (and so
// the sink's program) runs inside that CPU's generator call: one pipeline
// per CPU, generator and sink together. "drop" attaches a program that
// only drops, on the same path: the ratio of the rates is the sink's cost.
// With the sink it fails unless its counts are exact: every frame the
// generator's veth end put in the sink end's ring (ethtool's
// tx_queue_N_xdp_xmit) was received once. It reports the sink's rate (frames over the first to the
// last sampled receive time, as the program saw them), the generator's,
// the frames the veth dropped (its peer's ring full: xdp_xmit_errors) and
// those the generator's kernel path dropped before the veth (sent −
// xdp_xmit − xdp_xmit_errors; each CPU has a queue of its own here, as
// with a shared one the veth's counters lose updates: see
// TestLiveSentExactOnSharedQueue).
//
//	flock -x /tmp/ecnswitch-quiet.lock go test -run '^$' -bench XDPSinkRate -benchtime 20000000x ./loadgen
func BenchmarkXDPSinkRate(b *testing.B) {
	for _, size := range []int{64, 1518} {
		for _, cpus := range [][]int{{0}, {0, 1}} {
			if len(cpus) > runtime.NumCPU() {
				continue
			}
			for _, sink := range []bool{true, false} {
				what := "sink"
				if !sink {
					what = "drop"
				}
				b.Run(fmt.Sprintf("%dB/%dcpu/%s", size, len(cpus), what), func(b *testing.B) { benchSinkRate(b, size, cpus, sink) })
			}
		}
	}
}

func benchSinkRate(b *testing.B, size int, cpus []int, sink bool) {
	tb := testbedtest.New(b, 1, func(o *testbed.Options) { o.Queues = len(cpus) })
	h := tb.Hosts()[0]
	clock, err := loadgen.NewSystemClock()
	if err != nil {
		b.Fatal(err)
	}
	var s *loadgen.XDPSink
	if sink {
		if s, err = loadgen.NewXDPSink(loadgen.SinkConfig{Run: 1, Flows: 16}, "", h.SwitchIf, false, clock); err != nil {
			b.Fatal(err)
		}
		defer s.Close()
	} else {
		detach, err := attachDrop(h.SwitchIf)
		if err != nil {
			b.Fatal(err)
		}
		defer detach()
	}
	cfg := loadgen.GeneratorConfig{
		Addresses: loadgen.Addresses{SrcMAC: h.MAC, DstMAC: h.SwitchMAC, SrcIP: h.IPv4, DstIP: h.IPv4.Next()},
		Run:       1, Sizes: []loadgen.Share[int]{{Value: size, Weight: 1}}, Flows: 16, Count: uint64(b.N),
	}
	g, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: h.Netns, Iface: h.HostIf, CPUs: cpus}, clock)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	xmit0, dropped0 := vethXmit(b, h.Netns, h.HostIf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sinkDone := make(chan error, 1)
	if sink {
		go func() { sinkDone <- s.Run(ctx) }()
	}
	b.ResetTimer()
	if err := g.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := g.Stats()
	time.Sleep(100 * time.Millisecond) // the frames in flight
	xmit, dropped := vethXmit(b, h.Netns, h.HostIf)
	xmit, dropped = xmit-xmit0, dropped-dropped0
	b.ReportMetric(float64(st.Sent)/st.Elapsed().Seconds()/1e6, "gen-Mpps")
	b.ReportMetric(float64(dropped), "veth-drops")
	b.ReportMetric(float64(st.Sent-xmit-dropped), "gen-path-drops")
	b.ReportMetric(0, "ns/op")
	if !sink {
		return
	}
	cancel()
	if err := <-sinkDone; err != nil {
		b.Fatal(err)
	}
	rep, err := s.Report()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Received != xmit || rep.Duplicated != 0 || rep.Stale != 0 || rep.Unknown != 0 {
		b.Fatalf("the generator's veth end put %d frames in the sink end's ring (of %d sent, %d refused, ring full); "+
			"the sink received %d (%d duplicated, %d stale, %d unknown)",
			xmit, st.Sent, dropped, rep.Received, rep.Duplicated, rep.Stale, rep.Unknown)
	}
	split := 0
	for _, f := range rep.Flows {
		if f.CPUs > 1 {
			split++
		}
	}
	b.ReportMetric(float64(rep.Received)/rep.Seconds/1e6, "sink-Mpps")
	b.ReportMetric(float64(rep.Received), "received")
	b.ReportMetric(float64(rep.Lost), "lost")
	b.ReportMetric(float64(rep.Reordered), "reordered")
	b.ReportMetric(float64(split), "split-flows")
}

// ethtoolStats reads ifname's `ethtool -S` counters in the named netns
// ("" the caller's).
// vethXmit returns the live frames the veth end ifname put in its peer's
// rings (ethtool's tx_queue_N_xdp_xmit, summed over its queues) and those
// it refused, a ring full (tx_queue_N_xdp_xmit_errors).
func vethXmit(tb testing.TB, netns, ifname string) (xmit, refused uint64) {
	tb.Helper()
	for k, v := range ethtoolStats(tb, netns, ifname) {
		switch {
		case strings.HasPrefix(k, "tx_queue_") && strings.HasSuffix(k, "_xdp_xmit"):
			xmit += v
		case strings.HasPrefix(k, "tx_queue_") && strings.HasSuffix(k, "_xdp_xmit_errors"):
			refused += v
		}
	}
	return xmit, refused
}

func ethtoolStats(tb testing.TB, netns, ifname string) map[string]uint64 {
	tb.Helper()
	cmd := exec.Command("ethtool", "-S", ifname)
	if netns != "" {
		cmd = exec.Command("ip", "netns", "exec", netns, "ethtool", "-S", ifname)
	}
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("ethtool -S %s: %v", ifname, err)
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			m[k] = n
		}
	}
	return m
}

// attachDrop attaches a program that drops every frame to ifname.
func attachDrop(ifname string) (func() error, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}})
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, err
	}
	return l.Close, nil
}
