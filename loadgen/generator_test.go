package loadgen

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// arrival is one frame as a virtual-time receiver saw it.
type arrival struct {
	at   int64
	size int // FCS included
	hdr  Header
	dscp uint8
	ecn  packet.ECN
}

// virtualRun drives g in virtual time over an instant memory link: it
// calls Step, takes every frame that has arrived, and moves the clock to
// the time Step asked for plus late() (the wake-up error of a real sleep).
// When the port is full it moves the clock to the next arrival.
func virtualRun(tb testing.TB, cfg GeneratorConfig, link memport.Link, late func() int64) (*Generator, []arrival) {
	tb.Helper()
	clk := timestamp.NewVirtual(5_000_000_000)
	a, b, err := memport.Pair("gen", "rx", clk, link)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := NewGenerator(cfg, a, clk)
	if err != nil {
		tb.Fatal(err)
	}
	rx := make([]*packet.Desc, 256)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, MaxSize)}
	}
	var got []arrival
	take := func() {
		for {
			n, _ := b.Receive(rx)
			for _, d := range rx[:n] {
				if err := packet.Parse(d); err != nil {
					tb.Fatalf("generated frame does not parse: %v", err)
				}
				h, ok := ReadHeader(d)
				if !ok {
					tb.Fatal("generated frame has no header")
				}
				got = append(got, arrival{at: d.RxTime, size: d.Len + FCS, hdr: h, dscp: d.DSCP, ecn: d.ECN})
			}
			if n < len(rx) {
				return
			}
		}
	}
	for steps := 0; !g.Done(); steps++ {
		if steps > 50_000_000 {
			tb.Fatal("generator never finished")
		}
		now := clk.Now()
		next, err := g.Step(now)
		if err != nil {
			tb.Fatal(err)
		}
		take()
		switch {
		case next > now:
			clk.Set(next + late())
		case !g.Done(): // unpaced or port full: let the link drain a frame
			if at, ok := b.NextArrival(); ok && at > now {
				clk.Set(at)
			}
		}
	}
	for b.InFlight() > 0 {
		at, _ := b.NextArrival()
		clk.Set(max(at, clk.Now()))
		take()
	}
	return g, got
}

func noLate() int64 { return 0 }

// dueCount is how many frames a paced generator sends in d: frame k is
// due when frames 0..k−1 have had time at rate bits (their sizes plus
// overhead, in bits) — so k frames are sent where the bits of frames
// 0..k−2 fit in d·rate, computed exactly with big integers.
func dueCount(sizes []int, overhead int, bits float64, d time.Duration) int {
	limit := new(big.Int).Mul(big.NewInt(int64(d)), big.NewInt(int64(bits+0.5))) // ns·bit/s
	sum := new(big.Int)
	for k := 0; ; k++ {
		// frame k is due at ⌊sum·1e9/rate⌋ ns after the start; sent if < d.
		t := new(big.Int).Mul(sum, big.NewInt(1e9))
		if t.Cmp(limit) >= 0 {
			return k
		}
		sum.Add(sum, big.NewInt(int64((sizes[k%len(sizes)]+overhead)*8)))
	}
}

// windowRates returns the bit rate (sizes plus overhead) of arrivals in
// consecutive windows of w from start, over d.
func windowRates(got []arrival, overhead int, start int64, w, d time.Duration) []float64 {
	n := int(d / w)
	bits := make([]float64, n)
	for _, a := range got {
		i := int((a.at - start) / int64(w))
		if i >= 0 && i < n {
			bits[i] += float64((a.size + overhead) * 8)
		}
	}
	for i := range bits {
		bits[i] /= w.Seconds()
	}
	return bits
}

func TestGeneratorPacesBitRates(t *testing.T) {
	cases := []struct {
		name     string
		rate     float64
		sizes    []Share[int]
		overhead int
		d        time.Duration
	}{
		{"1 Mbit/s, 64 B", 1e6, []Share[int]{{64, 1}}, 0, 2 * time.Second},
		{"10 Mbit/s, 1518 B", 10e6, []Share[int]{{1518, 1}}, 0, 2 * time.Second},
		{"10 Mbit/s, 1518 B, L1", 10e6, []Share[int]{{1518, 1}}, L1Overhead, 2 * time.Second},
		{"100 Mbit/s, IMIX", 100e6, IMIX(), 0, time.Second},
		{"1 Gbit/s, 512 B", 1e9, []Share[int]{{512, 1}}, 0, 200 * time.Millisecond},
		{"1 Gbit/s, 64 B", 1e9, []Share[int]{{64, 1}}, 0, 100 * time.Millisecond},
		{"10 Gbit/s, 64/512/1500", 10e9, []Share[int]{{64, 1}, {512, 1}, {1500, 1}}, 0, 100 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := GeneratorConfig{Rate: Rate{Bits: c.rate}, Sizes: c.sizes, Overhead: c.overhead, Duration: c.d, Flows: 4}
			g, got := virtualRun(t, cfg, memport.Link{Capacity: 1 << 14}, noLate)
			pat, _ := pattern(weights(c.sizes))
			seq := make([]int, len(pat))
			for i, p := range pat {
				seq[i] = c.sizes[p].Value
			}
			if want := dueCount(seq, c.overhead, c.rate, c.d); len(got) != want || g.Stats().Sent != uint64(want) {
				t.Fatalf("%d frames received, %d sent; want exactly %d (⌈d·rate/size⌉ by the schedule)", len(got), g.Stats().Sent, want)
			}
			// Every window of 1/10 of the run (≥ 100 gaps, so sending up to
			// Gap early moves < 1% of a window) carries the rate within 1%.
			start := got[0].at
			for i, r := range windowRates(got, c.overhead, start, c.d/10, c.d) {
				if e := math.Abs(r-c.rate) / c.rate; e > 0.01 {
					t.Errorf("window %d: %.6g bit/s, %.3f%% off %.6g", i, r, 100*e, c.rate)
				}
			}
			if st := g.Stats(); st.Late != 0 {
				t.Errorf("late %v with no stall", time.Duration(st.Late))
			}
		})
	}
}

func weights[T any](s []Share[T]) []int {
	w := make([]int, len(s))
	for i, x := range s {
		w[i] = x.Weight
	}
	return w
}

func TestGeneratorPacesPacketRates(t *testing.T) {
	for _, c := range []struct {
		pps float64
		d   time.Duration
	}{{1000, 2 * time.Second}, {12345.678, time.Second}, {1.5e6, 100 * time.Millisecond}} {
		cfg := GeneratorConfig{Rate: Rate{Packets: c.pps}, Sizes: IMIX(), Duration: c.d}
		_, got := virtualRun(t, cfg, memport.Link{Capacity: 1 << 14}, noLate)
		// Frame k is due at ⌊k·1e9/pps⌋ ns (in milli-frames, exactly):
		// ⌈d·pps⌉ frames are due before d.
		want := int(math.Ceil(c.d.Seconds()*c.pps - 1e-9))
		if len(got) != want {
			t.Errorf("%v pps for %v: %d frames, want %d", c.pps, c.d, len(got), want)
		}
		w := c.d / 10
		n := make([]int, 10)
		for _, a := range got {
			if i := int((a.at - got[0].at) / int64(w)); i < 10 {
				n[i]++
			}
		}
		for i, k := range n {
			if r := float64(k) / w.Seconds(); math.Abs(r-c.pps)/c.pps > 0.01 {
				t.Errorf("%v pps: window %d carries %.6g pps", c.pps, i, r)
			}
		}
	}
}

// TestGeneratorKeepsRateWhenWokenLate: a real sleep wakes late by up to a
// few hundred µs; the schedule makes the frames up at once, so every
// 100 ms window still carries the rate within 1% and nothing is given up.
func TestGeneratorKeepsRateWhenWokenLate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	late := func() int64 { return rng.Int64N(300_000) }
	for _, c := range []struct {
		rate float64
		size int
	}{{1e6, 64}, {10e6, 512}, {100e6, 1518}} {
		const d = 2 * time.Second
		cfg := GeneratorConfig{Rate: Rate{Bits: c.rate}, Sizes: []Share[int]{{c.size, 1}}, Duration: d}
		g, got := virtualRun(t, cfg, memport.Link{Capacity: 1 << 14}, late)
		// Windows of 200 ms hold ≥ 390 frames, so one frame is < 0.3%.
		for i, r := range windowRates(got, 0, got[0].at, d/10, d) {
			if e := math.Abs(r-c.rate) / c.rate; e > 0.01 {
				t.Errorf("%g bit/s: window %d: %.6g bit/s, %.2f%% off", c.rate, i, r, 100*e)
			}
		}
		if want := dueCount([]int{c.size}, 0, c.rate, d); len(got) != want {
			t.Errorf("%g bit/s: %d frames, want %d", c.rate, len(got), want)
		}
		if st := g.Stats(); st.Late != 0 {
			t.Errorf("%g bit/s: %v given up", c.rate, time.Duration(st.Late))
		}
	}
}

// TestGeneratorGivesUpBeyondBurst: one wake-up 50 ms late with a 10 ms
// Burst gives up exactly 40 ms of the schedule, sends 10 ms worth at once,
// and then paces again.
func TestGeneratorGivesUpBeyondBurst(t *testing.T) {
	const rate = 10e6
	steps := 0
	late := func() int64 {
		if steps++; steps == 100 {
			return int64(50 * time.Millisecond)
		}
		return 0
	}
	cfg := GeneratorConfig{Rate: Rate{Bits: rate}, Sizes: []Share[int]{{1000, 1}}, Duration: time.Second, Burst: 10 * time.Millisecond}
	g, got := virtualRun(t, cfg, memport.Link{Capacity: 1 << 14}, late)
	st := g.Stats()
	if st.Late != int64(40*time.Millisecond) {
		t.Errorf("late %v, want 40ms", time.Duration(st.Late))
	}
	// 1000-byte frames at 10 Mbit/s: one per 800 µs, 1250 in a second, 50
	// of them in the 40 ms given up.
	if len(got) != 1250-50 {
		t.Errorf("%d frames, want 1200", len(got))
	}
	// The catch-up burst: 10 ms of schedule (12.5 frames) at one instant.
	burst, run := 1, 1
	for i := 1; i < len(got); i++ {
		if got[i].at == got[i-1].at {
			run++
		} else {
			run = 1
		}
		burst = max(burst, run)
	}
	if burst < 12 || burst > 14 {
		t.Errorf("largest burst %d frames, want the 12–14 of a 10 ms Burst", burst)
	}
}

// TestGeneratorFrames checks what the frames carry: each flow's sequence
// numbers run from 0 without a gap, a flow keeps its class (DSCP, ECN) and
// source port, classes get their share of frames, sizes follow the mix,
// and the TX time is the send time.
func TestGeneratorFrames(t *testing.T) {
	dscp, _ := ParseDSCP("0:50,8:50")
	ecn, _ := ParseECN("ect0:3,notect:1")
	cfg := GeneratorConfig{
		Rate: Rate{Packets: 100_000}, Count: 9600, Sizes: IMIX(), DSCP: dscp, ECN: ecn, Flows: 16, Run: 3,
	}
	g, got := virtualRun(t, cfg, memport.Link{Delay: 1000, Capacity: 1 << 14}, noLate)
	if len(got) != 9600 {
		t.Fatalf("%d frames, want the 9600 of Count", len(got))
	}
	next := make([]uint32, 16)
	class := map[uint16][2]int{}
	share := map[[2]int]int{}
	sizes := map[int]int{}
	for i, a := range got {
		f := a.hdr.Flow
		if a.hdr.Run != 3 || f >= 16 {
			t.Fatalf("frame %d: run %d flow %d", i, a.hdr.Run, f)
		}
		if a.hdr.Seq != next[f] {
			t.Fatalf("frame %d: flow %d seq %d, want %d", i, f, a.hdr.Seq, next[f])
		}
		next[f]++
		c := [2]int{int(a.dscp), int(a.ecn)}
		if old, ok := class[f]; ok && old != c {
			t.Fatalf("flow %d changed class %v → %v", f, old, c)
		}
		class[f] = c
		share[c]++
		sizes[a.size]++
		if a.at-a.hdr.TxTime != 1000 {
			t.Fatalf("frame %d: TX time %d, arrival %d: want the 1 µs link delay between them", i, a.hdr.TxTime, a.at)
		}
	}
	// 2 DSCPs × 2 ECNs = 4 classes with weights 50·3, 50·1, 50·3, 50·1: 3/8, 1/8, 3/8, 1/8.
	want := map[[2]int]int{
		{0, int(packet.ECT0)}: 3600, {0, int(packet.NotECT)}: 1200,
		{8, int(packet.ECT0)}: 3600, {8, int(packet.NotECT)}: 1200,
	}
	for c, n := range want {
		if share[c] != n {
			t.Errorf("class %v: %d frames, want %d", c, share[c], n)
		}
	}
	if len(class) != 16 {
		t.Errorf("%d flows seen, want 16", len(class))
	}
	// IMIX 7:4:1 over 9600 = 800 patterns.
	if sizes[64] != 5600 || sizes[594] != 3200 || sizes[1518] != 800 {
		t.Errorf("sizes %v, want 64:5600 594:3200 1518:800", sizes)
	}
	for _, c := range g.Classes() {
		if len(c.Flows) != 4 {
			t.Errorf("class %+v has %d flows, want 16/4", c, len(c.Flows))
		}
	}
}

// TestGeneratorFrameHeaders: a generated frame is a valid IPv4/UDP datagram
// with the configured addresses.
func TestGeneratorFrameHeaders(t *testing.T) {
	cfg := GeneratorConfig{}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64, 512, 1518} {
		d := &packet.Desc{Buf: make([]byte, 2048)}
		d.Len = buildFrame(d.Buf, &cfg.Addresses, size, 46, packet.ECT1, 10005, Header{Run: 1, Flow: 5, Seq: 9, TxTime: -2})
		if d.Len != size-FCS {
			t.Fatalf("len %d, want %d", d.Len, size-FCS)
		}
		if err := packet.Parse(d); err != nil {
			t.Fatal(err)
		}
		f := d.Frame()
		if packet.IPv4Checksum(f[14:34]) != 0 {
			t.Errorf("%d B: IPv4 header checksum does not verify", size)
		}
		if d.DSCP != 46 || d.ECN != packet.ECT1 || d.SrcPort != 10005 || d.DstPort != DefaultDstPort ||
			d.SrcAddr() != cfg.SrcIP || d.DstAddr() != cfg.DstIP {
			t.Errorf("%d B: parsed %+v", size, d)
		}
		if ipLen, udpLen := int(f[16])<<8|int(f[17]), int(f[38])<<8|int(f[39]); ipLen != d.Len-14 || udpLen != d.Len-34 {
			t.Errorf("%d B: IP length %d, UDP length %d", size, ipLen, udpLen)
		}
		if h, ok := ReadHeader(d); !ok || h != (Header{Run: 1, Flow: 5, Seq: 9, TxTime: -2}) {
			t.Errorf("%d B: header %+v %v", size, h, ok)
		}
	}
}

// TestGeneratorUnpaced: with no Rate the generator fills the link as fast
// as it drains, loses nothing to a full port, and stops at Duration.
func TestGeneratorUnpaced(t *testing.T) {
	cfg := GeneratorConfig{Sizes: []Share[int]{{1000, 1}}, Duration: 10 * time.Millisecond}
	g, got := virtualRun(t, cfg, memport.Link{Rate: 1e9, Capacity: 64}, noLate)
	st := g.Stats()
	if uint64(len(got)) != st.Sent {
		t.Fatalf("sent %d, received %d", st.Sent, len(got))
	}
	for i, a := range got {
		if a.hdr.Seq != uint32(i) {
			t.Fatalf("frame %d has seq %d", i, a.hdr.Seq)
		}
	}
	// 996-byte frames at 1 Gbit/s take 7.968 µs: 10 ms is 1255 of them;
	// the 64 the link holds when the time is up and the batch the port
	// had not taken yet still go out.
	if n := len(got); n < 1255+64 || n > 1255+64+64 {
		t.Errorf("%d frames in 10 ms of a 1 Gbit/s link, want 1255 + the 64 in flight + up to a batch pending", n)
	}
}

func TestGeneratorStepAllocatesNothing(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, _ := memport.Pair("gen", "rx", clk, memport.Link{Capacity: 1 << 12})
	g, err := NewGenerator(GeneratorConfig{Rate: Rate{Bits: 1e9}, Sizes: IMIX(), Flows: 8}, a, clk)
	if err != nil {
		t.Fatal(err)
	}
	rx := make([]*packet.Desc, 512)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	allocs := testing.AllocsPerRun(200, func() {
		clk.Advance(100 * time.Microsecond)
		if _, err := g.Step(clk.Now()); err != nil {
			t.Fatal(err)
		}
		b.Receive(rx)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Step, want 0", allocs)
	}
}

func TestGeneratorConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  GeneratorConfig
		want string
	}{
		{GeneratorConfig{Sizes: []Share[int]{{60, 1}}}, "sizes[0]"},
		{GeneratorConfig{DSCP: []Share[uint8]{{0, 1}, {8, 1}}, Flows: 1}, "flows"},
		{GeneratorConfig{Flows: 60000}, "src_port"},
		{GeneratorConfig{Rate: Rate{Bits: 1e6, Packets: 10}}, "rate"},
		{GeneratorConfig{Batch: 5000}, "batch"},
		{GeneratorConfig{Sizes: []Share[int]{{64, 0}}}, "weight"},
		{GeneratorConfig{Sizes: []Share[int]{{64, math.MaxInt}, {65, 1}}}, "sizes[0]: weight"}, // Σw overflowed into a panic
		{GeneratorConfig{DSCP: []Share[uint8]{{0, 1}, {8, MaxWeight + 1}}}, "dscp[1]: weight"},
	} {
		_, err := NewGenerator(c.cfg, nil, timestamp.NewVirtual(0))
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// BenchmarkGeneratorStep is the generator's cost per frame, unpaced, over
// an instant memory link whose other end is drained: build (template copy
// skipped when the slot already holds it), stamp, Transmit.
func BenchmarkGeneratorStep(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			clk := timestamp.NewVirtual(0)
			tx, rx, _ := memport.Pair("gen", "rx", clk, memport.Link{Capacity: 1 << 12})
			g, err := NewGenerator(GeneratorConfig{Sizes: []Share[int]{{size, 1}}, Flows: 16}, tx, clk)
			if err != nil {
				b.Fatal(err)
			}
			ds := make([]*packet.Desc, 64)
			for i := range ds {
				ds[i] = &packet.Desc{Buf: make([]byte, 2048)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < b.N; {
				clk.Advance(time.Microsecond)
				g.Step(clk.Now())
				n, _ := rx.Receive(ds)
				sent += n
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns, "ns/frame")
			b.ReportMetric(1e3/ns, "Mpps")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestGeneratorAccuracy is the generator's rate accuracy at the issue's
// three offered rates, 10 Mbit/s, 1 Gbit/s and 10 Gbit/s, measured against
// its own schedule on the virtual clock, with every sleep waking up to
// 60 µs late (what clock_nanosleep does here under load). Each frame's
// send time is checked against the instant the schedule gives it,
// computed here independently of the generator (frame k is due when the
// bits of frames 0..k−1 have had time at the rate, exactly, with big
// integers): never more than Gap early, never later than the wake-up
// error. The rate offered over the run, and over each tenth of it (at
// least 20 ms, so a frame up to Gap early or 60 µs late moves < 1% of it),
// is within 1% of the target. The wall-clock version of this check, through
// a testbed, is BenchmarkGeneratorRateThroughTestbed (docs/load-testing.md).
func TestGeneratorAccuracy(t *testing.T) {
	const maxLate = 60_000
	for _, c := range []struct {
		name     string
		rate     float64
		sizes    []Share[int]
		overhead int
		d        time.Duration
	}{
		{"10 Mbit/s IMIX", 10e6, IMIX(), 0, 2 * time.Second},
		{"1 Gbit/s IMIX", 1e9, IMIX(), 0, 200 * time.Millisecond},
		{"1 Gbit/s 64 B L1", 1e9, []Share[int]{{64, 1}}, L1Overhead, 200 * time.Millisecond},
		{"10 Gbit/s 1518 B", 10e9, []Share[int]{{1518, 1}}, 0, 200 * time.Millisecond},
		{"10 Gbit/s 64 B L1", 10e9, []Share[int]{{64, 1}}, L1Overhead, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, uint64(c.rate)))
			late := func() int64 { return rng.Int64N(maxLate + 1) }
			cfg := GeneratorConfig{Rate: Rate{Bits: c.rate}, Sizes: c.sizes, Overhead: c.overhead, Duration: c.d, Flows: 4}
			g, got := virtualRun(t, cfg, memport.Link{Capacity: 1 << 16}, late)
			if st := g.Stats(); st.Late != 0 || st.Sent != uint64(len(got)) {
				t.Fatalf("sent %d, received %d, %v given up: want every scheduled frame", st.Sent, len(got), time.Duration(st.Late))
			}
			pat, _ := pattern(weights(c.sizes))
			rate := big.NewInt(int64(c.rate + 0.5))
			start := got[0].at
			bits := new(big.Int)
			gap := int64(DefaultGap)
			var early, lateMax int64
			for k, a := range got {
				size := c.sizes[pat[k%len(pat)]].Value
				if a.size != size {
					t.Fatalf("frame %d: %d B, want %d B of the size pattern", k, a.size, size)
				}
				due := start + new(big.Int).Div(new(big.Int).Mul(bits, big.NewInt(1e9)), rate).Int64()
				early = max(early, due-a.at)
				lateMax = max(lateMax, a.at-due)
				bits.Add(bits, big.NewInt(int64((size+c.overhead)*8)))
			}
			if early > gap || lateMax > maxLate {
				t.Errorf("frames up to %v early and %v late against the schedule; want ≤ Gap (%v) early, ≤ the %v wake-up error late",
					time.Duration(early), time.Duration(lateMax), DefaultGap, time.Duration(maxLate))
			}
			if want := dueCount(sizesOf(c.sizes, pat), c.overhead, c.rate, c.d); len(got) != want {
				t.Errorf("%d frames, want the %d the schedule has in %v", len(got), want, c.d)
			}
			offered := float64(bits.Int64()) / c.d.Seconds()
			if e := math.Abs(offered-c.rate) / c.rate; e > 0.01 {
				t.Errorf("offered %.6g bit/s over %v, %.3f%% off", offered, c.d, 100*e)
			}
			for i, r := range windowRates(got, c.overhead, start, c.d/10, c.d) {
				if e := math.Abs(r-c.rate) / c.rate; e > 0.01 {
					t.Errorf("window %d: %.6g bit/s, %.3f%% off", i, r, 100*e)
				}
			}
			t.Logf("%d frames; at most %v early, %v late against the schedule; offered %.6g bit/s",
				len(got), time.Duration(early), time.Duration(lateMax), offered)
		})
	}
}

// sizesOf expands a size mix's pattern into the sizes it sends in turn.
func sizesOf(sizes []Share[int], pat []int) []int {
	out := make([]int, len(pat))
	for i, p := range pat {
		out[i] = sizes[p].Value
	}
	return out
}
