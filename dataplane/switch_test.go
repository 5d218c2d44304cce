package dataplane_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

func TestLearningAndFlooding(t *testing.T) {
	r := dataplanetest.New(t, dataplanetest.Config(3, 1, 0, 1<<20), memport.Link{})
	f01 := dataplanetest.Frame(t, 0, 1, packettest.Options{})
	r.Send(0, f01)
	r.Step(1000, 1000)
	// Unknown unicast floods to every port but the ingress one.
	if got1, got2 := r.Recv(1), r.Recv(2); len(got1) != 1 || len(got2) != 1 || !bytes.Equal(got1[0], f01) || !bytes.Equal(got2[0], f01) {
		t.Fatalf("flood: port 1 got %d frames, port 2 got %d; want the frame once on each", len(got1), len(got2))
	}
	if n := len(r.Recv(0)); n != 0 {
		t.Fatalf("flood sent %d frames back out of the ingress port", n)
	}
	// The reply goes only to port 0, whose MAC was learned.
	r.Send(1, dataplanetest.Frame(t, 1, 0, packettest.Options{}))
	r.Step(1000, 1000)
	if n0, n2 := len(r.Recv(0)), len(r.Recv(2)); n0 != 1 || n2 != 0 {
		t.Fatalf("reply to a learned MAC: port 0 got %d, port 2 got %d; want 1 and 0", n0, n2)
	}
	// Now both are learned: 0 → 1 is unicast.
	r.Send(0, f01)
	r.Step(1000, 1000)
	if n1, n2 := len(r.Recv(1)), len(r.Recv(2)); n1 != 1 || n2 != 0 {
		t.Fatalf("learned unicast: port 1 got %d, port 2 got %d; want 1 and 0", n1, n2)
	}
	// Broadcast always floods.
	bc := packettest.UDP4(t, packettest.Options{SrcMAC: dataplanetest.MAC(2), DstMAC: packet.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
	r.Send(2, bc)
	r.Step(1000, 1000)
	if n0, n1 := len(r.Recv(0)), len(r.Recv(1)); n0 != 1 || n1 != 1 {
		t.Fatalf("broadcast: ports 0 and 1 got %d and %d; want 1 each", n0, n1)
	}
	st := r.Switch.Stats()
	if st.Ports[0].Flooded != 1 || st.Ports[2].Flooded != 1 {
		t.Errorf("flooded copies: port 0 %d, port 2 %d; want 1 each", st.Ports[0].Flooded, st.Ports[2].Flooded)
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("accounting %+v: want balanced and nothing held", a)
	}
}

func TestAging(t *testing.T) {
	cfg := dataplanetest.Config(3, 1, 0, 1<<20)
	cfg.Forwarding.AgeTime = 1_000_000 // 1 ms
	r := dataplanetest.New(t, cfg, memport.Link{})
	r.Send(1, dataplanetest.Frame(t, 1, 0, packettest.Options{})) // learn MAC 1 on port 1
	r.Step(1000, 1000)
	r.Recv(0)
	r.Recv(2)
	r.Clock.Advance(2_000_000)
	r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{}))
	r.Step(1000, 1000)
	if n := len(r.Recv(2)); n != 1 {
		t.Fatalf("after aging, a frame to the expired MAC reached port 2 %d times; want flooding (1)", n)
	}
}

func TestStaticRules(t *testing.T) {
	cfg := dataplanetest.Config(4, 1, 0, 1<<20)
	cfg.Forwarding = dataplane.Forwarding{
		Patches: []dataplane.Patch{{From: 3, To: 2}},
		MACs:    []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}},
		Prefixes: []dataplane.PrefixRule{
			{Prefix: netip.MustParsePrefix("198.18.0.0/16"), Port: 1},
			{Prefix: netip.MustParsePrefix("198.18.5.0/24"), Port: 2},
		},
	}
	r := dataplanetest.New(t, cfg, memport.Link{})
	cases := []struct {
		name string
		from int
		f    []byte
		want int
	}{
		{"mac rule", 0, dataplanetest.Frame(t, 0, 1, packettest.Options{Dst: netip.MustParseAddr("198.18.5.1")}), 1},
		{"longest prefix", 0, dataplanetest.Frame(t, 0, 3, packettest.Options{Dst: netip.MustParseAddr("198.18.5.1")}), 2},
		{"shorter prefix", 0, dataplanetest.Frame(t, 0, 3, packettest.Options{Dst: netip.MustParseAddr("198.18.9.1")}), 1},
		{"patch beats everything", 3, dataplanetest.Frame(t, 3, 1, packettest.Options{}), 2},
	}
	for _, c := range cases {
		r.Send(c.from, c.f)
		r.Step(1000, 1000)
		for h := range r.Hosts {
			n := len(r.Recv(h))
			if want := map[bool]int{true: 1, false: 0}[h == c.want]; n != want {
				t.Errorf("%s: port %d got %d frames, want %d", c.name, h, n, want)
			}
		}
	}
}

func TestClassification(t *testing.T) {
	cfg := dataplanetest.Config(2, 4, 0, 1<<20)
	cfg.Classifier.DSCP = map[uint8]int{46: 2}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	r := dataplanetest.New(t, cfg, memport.Link{})
	for _, c := range []struct {
		dscp  uint8
		queue int
	}{{0, 0}, {8, 1}, {16, 2}, {24, 3}, {56, 3}, {46, 2}} {
		before := r.Switch.Stats().Ports[1].Queues[c.queue].Enqueued
		r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{DSCP: c.dscp}))
		r.Step(1000, 1000)
		if got := r.Switch.Stats().Ports[1].Queues[c.queue].Enqueued - before; got != 1 {
			t.Errorf("DSCP %d: queue %d enqueued %d, want 1", c.dscp, c.queue, got)
		}
	}
}

func TestMalformedCountedAndDropped(t *testing.T) {
	cfg := dataplanetest.Config(2, 1, 0, 1<<20)
	r := dataplanetest.New(t, cfg, memport.Link{})
	good := dataplanetest.Frame(t, 0, 1, packettest.Options{})
	bad := append([]byte(nil), good...)
	bad[14] = 0x43 // IPv4 with IHL 3 < 5
	r.Send(0, bad, good[:20], good)
	r.Step(1000, 1000)
	if got := r.Switch.Stats().Ports[0].Drops["malformed"]; got != 2 {
		t.Fatalf("malformed drops = %d, want 2", got)
	}
	if n := len(r.Recv(1)); n != 1 {
		t.Fatalf("port 1 got %d frames, want the 1 good one", n)
	}
	if a := r.Switch.Account(); !a.Balanced() {
		t.Fatalf("accounting %+v not balanced", a)
	}
}

// TestTwoToOneCongestion offers 2×C from two ports to one egress port shaped
// at C: the egress delivers C within 1%, the queue stays within the buffer,
// ECN marks and buffer drops happen, and every packet is accounted for.
func TestTwoToOneCongestion(t *testing.T) {
	const (
		rate = 1_000_000_000 // C, bit/s
		pool = 200_000       // B, bytes
		k    = 30_000        // marking threshold, bytes
	)
	cfg := dataplanetest.Config(3, 2, rate, pool)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, q)
	}
	cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "dctcp", New: red}}
	r := dataplanetest.New(t, cfg, memport.Link{Rate: rate})

	f := [][]byte{
		dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1500, ECN: packet.ECT0}),
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1500, ECN: packet.ECT0, DSCP: 8}),
	}
	var received int64
	const dt, warm, end = 1_000, 20_000_000, 120_000_000 // ns
	var peak int64
	for r.Clock.Now() < end {
		for h := 0; h < 2; h++ { // keep both ingress links busy
			for r.Backlog(h) < 32 && r.Send(h, f[h]) == 1 {
			}
		}
		r.Clock.Advance(dt)
		r.Switch.Poll()
		for _, fr := range r.Recv(2) {
			if r.Clock.Now() > warm {
				received += int64(len(fr))
			}
		}
		st := r.Switch.Stats()
		peak = max(peak, st.Pools[0].Bytes)
		if a := r.Switch.Account(); !a.Balanced() {
			t.Fatalf("at %d ns: accounting %+v not balanced", r.Clock.Now(), a)
		}
	}
	want := float64(rate) / 8 * float64(end-warm) / 1e9
	if got := float64(received); got < want*0.99 || got > want*1.01 {
		t.Errorf("egress delivered %.0f bytes in %d ms, want %.0f ± 1%%", got, (end-warm)/1_000_000, want)
	}
	if peak > pool {
		t.Errorf("pool peaked at %d bytes, above its size %d", peak, pool)
	}
	r.Drain(1_000)
	r.Recv(2)
	st := r.Switch.Stats()
	p := st.Ports[2]
	var marks, drops uint64
	for _, q := range p.Queues {
		marks += q.MarkedEnq
		for _, n := range q.Drops {
			drops += n
		}
	}
	if marks == 0 || drops == 0 {
		t.Errorf("marks %d, buffer drops %d: with 2×C offered both must happen", marks, drops)
	}
	// No packet can wait longer than a full pool takes to drain at C (plus
	// the shaper's bucket), and under 2×C the queue is never empty for long.
	bound := int64((pool + 2500 + 1500) * 8 * 1e9 / rate)
	for q, qs := range p.Queues {
		if qs.Sojourn.Count != qs.Dequeued || qs.Sojourn.Max > bound || qs.Sojourn.Mean < bound/10 {
			t.Errorf("queue %d sojourn %+v: want count = %d dequeued, max ≤ %d ns, mean ≥ %d ns", q, qs.Sojourn, qs.Dequeued, bound, bound/10)
		}
	}
	if p.Drops["dynamic_threshold"]+p.Drops["pool_full"] != drops {
		t.Errorf("port drops %v disagree with queue drops %d", p.Drops, drops)
	}
	var in, out uint64
	for _, ps := range st.Ports {
		in += ps.RxPackets
		out += ps.TxPackets
	}
	if hs := r.Hosts[2].Stats(); hs.RxPackets != p.TxPackets {
		t.Errorf("host 2 received %d packets, switch sent %d", hs.RxPackets, p.TxPackets)
	}
	t.Logf("rx %d tx %d marks %d drops %d pool peak %d", in, out, marks, drops, peak)
}

// flakyPort fails Transmit while down is set.
type flakyPort struct {
	dataplanetest.Sink
	down bool
}

func (f *flakyPort) Transmit(ds []*packet.Desc) (int, error) {
	if f.down {
		return 0, errLinkDown
	}
	return f.Sink.Transmit(ds)
}

var errLinkDown = errors.New("link down")

// TestLinkDownLoggedOnce checks that a device error is counted per packet
// but logged once when it appears and once when the link recovers.
func TestLinkDownLoggedOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	cfg := dataplanetest.Config(2, 1, 0, 1<<20)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	cfg.Ports[1].Coalesce = -1 // every pass transmits its batch: the clock stands still
	gen := &dataplanetest.Gen{Frame: dataplanetest.Frame(t, 0, 1, packettest.Options{})}
	out := &flakyPort{down: true}
	sw, err := dataplane.New(cfg, []ports.Port{gen, out}, timestamp.NewVirtual(0), zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		sw.Poll()
	}
	out.down = false
	for i := 0; i < 10; i++ {
		sw.Poll()
	}
	if got := sw.Stats().Ports[1].Drops["tx_error"]; got != 10*ports.BatchSize {
		t.Errorf("tx_error drops = %d, want %d", got, 10*ports.BatchSize)
	}
	if n := logs.FilterMessage("port device error; retrying").Len(); n != 1 {
		t.Errorf("device error logged %d times, want once", n)
	}
	if n := logs.FilterMessage("port recovered").Len(); n != 1 {
		t.Errorf("recovery logged %d times, want once", n)
	}
	if a := sw.Account(); !a.Balanced() {
		t.Errorf("accounting %+v not balanced", a)
	}
}

// TestIngressInterleaved sends bursts that arrive at the same instant on two
// ports toward a third: the switch must process them one packet per source
// at a time, alternating which goes first, so that neither port's packets
// always find the buffer the other's just filled. With two workers the
// packets of port 0 cross from worker 0 to worker 1, and must still be
// interleaved with worker 1's own, not queued after them.
func TestIngressInterleaved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		owners  [3]int
	}{
		{"one worker", 1, [3]int{-1, -1, -1}},
		{"across workers", 2, [3]int{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := dataplanetest.Config(3, 1, 0, 1<<20)
			cfg.Workers = tc.workers
			for i, w := range tc.owners {
				cfg.Ports[i].Worker = w
			}
			cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
			r := dataplanetest.New(t, cfg, memport.Link{})
			a, b := dataplanetest.Frame(t, 0, 2, packettest.Options{}), dataplanetest.Frame(t, 1, 2, packettest.Options{})
			var order []byte
			for pass := 0; pass < 4; pass++ {
				r.Send(0, a, a, a)
				r.Send(1, b, b, b)
				r.Step(1000, 1000)
				for _, f := range r.Recv(2) {
					order = append(order, '0'+f[11]-0x10) // source MAC's last byte: 0x10 + port
				}
			}
			got := string(order)
			if a, b := "010101101010010101101010", "101010010101101010010101"; got != a && got != b {
				t.Fatalf("egress order by ingress port %s, want %s or %s: one packet per source at a time, the first alternating between passes", got, a, b)
			}
		})
	}
}

// viewCheck is a marker that checks, for every packet, that the view's
// queue, port and pool occupancies equal the buffer's own accounting. At
// the enqueue stage the chain runs after admission, so the buffer holds
// the packet itself on top of the backlog the view shows.
type viewCheck struct {
	t       *testing.T
	sw      **dataplane.Switch
	enqueue bool
	checks  int
}

func (c *viewCheck) Mark(v *marking.View) marking.Verdict {
	b := (*c.sw).Buffer()
	var n, pk int64
	if c.enqueue {
		n, pk = int64(v.Len), 1
	}
	if qb, qp := b.QueueBytes(v.Port, v.Queue), b.QueuePackets(v.Port, v.Queue); v.QueueBytes+n != qb || v.QueuePackets+pk != qp {
		c.t.Fatalf("view queue %d B / %d pkts, buffer %d B / %d pkts", v.QueueBytes, v.QueuePackets, qb, qp)
	}
	if pb, pp := b.PortBytes(v.Port), b.PortPackets(v.Port); v.PortBytes+n != pb || v.PortPackets+pk != pp {
		c.t.Fatalf("view port %d B / %d pkts, buffer %d B / %d pkts", v.PortBytes, v.PortPackets, pb, pp)
	}
	if v.PoolBytes+n != b.PoolSharedBytes(0) {
		c.t.Fatalf("view pool %d B, buffer's shared pool %d B", v.PoolBytes, b.PoolSharedBytes(0))
	}
	c.checks++
	return marking.Pass
}

// TestViewMatchesBuffer congests a port with two queues and checks at every
// enqueue (before admission) and dequeue (after release) that the marker
// view's occupancies are the buffer's.
func TestViewMatchesBuffer(t *testing.T) {
	const rate = 100_000_000
	cfg := dataplanetest.Config(3, 2, rate, 40_000)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	var sw *dataplane.Switch
	enq, deq := &viewCheck{t: t, sw: &sw, enqueue: true}, &viewCheck{t: t, sw: &sw}
	cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "check", New: func(int) (marking.Marker, error) { return enq, nil }}}
	cfg.Ports[2].Dequeue = []dataplane.MarkerSpec{{Name: "check", New: func(int) (marking.Marker, error) { return deq, nil }}}
	r := dataplanetest.New(t, cfg, memport.Link{Rate: rate})
	sw = r.Switch
	for i := 0; i < 300; i++ {
		r.Send(0, dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 700 + i%800}))
		r.Send(1, dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1400, DSCP: 8}))
	}
	r.Drain(1000)
	st := r.Switch.Stats().Ports[2]
	if enq.checks != int(st.Queues[0].Enqueued+st.Queues[1].Enqueued) || deq.checks != int(st.TxPackets) || len(st.Drops) == 0 {
		t.Fatalf("%d enqueue and %d dequeue checks, %d enqueued, %d sent, drops %v: want every admitted packet checked at both stages, and a full buffer",
			enq.checks, deq.checks, st.Queues[0].Enqueued+st.Queues[1].Enqueued, st.TxPackets, st.Drops)
	}
}

// TestDelayedPacketsAreHeldNotBuffered sends frames into a port with a 1 ms
// delay line: while they wait they are held, not in the buffer, and each
// reaches the far host exactly 1 ms after it reached the switch.
func TestDelayedPacketsAreHeldNotBuffered(t *testing.T) {
	cfg := dataplanetest.Config(2, 1, 0, 1<<20)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	cfg.Ports[1].Delay = dataplane.Delay{Fixed: time.Millisecond}
	r := dataplanetest.New(t, cfg, memport.Link{})
	f := dataplanetest.Frame(t, 0, 1, packettest.Options{})
	r.Clock.Set(5000) // the frames arrive at 5 µs, between two polls
	for i := 0; i < 10; i++ {
		r.Send(0, f)
	}
	r.Step(500_000, 3000)
	if a, pb := r.Switch.Account(), r.Switch.Buffer().PortBytes(1); a.Held != 10 || pb != 0 || !a.Balanced() {
		t.Fatalf("half way: held %d, buffered %d B, %+v; want 10 held, 0 B in the buffer", a.Held, pb, a)
	}
	if got := len(r.Recv(1)); got != 0 {
		t.Fatalf("%d frames arrived before the delay", got)
	}
	r.Clock.Set(1_005_000 - 1)
	r.Switch.Poll()
	if got := len(r.Recv(1)); got != 0 {
		t.Fatalf("%d frames left 1 ns before their delay was up", got)
	}
	r.Clock.Set(1_005_000)
	r.Switch.Poll()
	rx := []*packet.Desc{{Buf: make([]byte, 2048)}}
	for i := 0; i < 10; i++ {
		if n, _ := r.Hosts[1].Receive(rx); n != 1 || rx[0].RxTime != 1_005_000 {
			t.Fatalf("frame %d: received %d, at %d ns; want at 1.005 ms", i, n, rx[0].RxTime)
		}
	}
}
