package marking

import (
	"math"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// eqBCCPaper is 002 §V-A's setting: 100 Gbit/s, RTT 80 µs, λ = 0.72 for
// DCTCP, 128 KB static reserve per port, 3 MB pools shared by 8 ports,
// α = 4, h = 8 µs (the default).
func eqBCCPaper() BCCConfig {
	return BCCConfig{
		LineRate: 100e9,
		RTT:      80 * eqUS,
		Lambda:   0.72,
		Reserve:  128000,
		PoolSize: 3000000,
		Alpha:    4,
		Ports:    8,
	}
}

func TestBCCDeriveFormulas(t *testing.T) {
	cfg := eqBCCPaper()
	p, err := cfg.Derive()
	if err != nil {
		t.Fatal(err)
	}
	// The formulas in floating point (002 §IV-C, §V-A; Eq. 2 and 3).
	c, rtt, h := float64(cfg.LineRate)/8, float64(cfg.RTT)/1e9, float64(BCCDefaultH)/1e9 // C in bytes/s, times in s
	br := c*rtt*(1+cfg.Lambda) - float64(cfg.Reserve)
	kmax := float64(cfg.PoolSize) - br/cfg.Alpha
	kmin := kmax - c*float64(cfg.Ports)*h
	for _, tc := range []struct {
		name  string
		got   int64
		want  float64
		paper float64 // the rounded value 002 §V-A prints
	}{
		{"B_R = C·RTT·(1+λ) − S_min", p.BR, br, 1.6e6},
		{"K_max = B − B_R/α", p.KMax, kmax, 2.6e6},
		{"K_min = K_max − C·N·h", p.KMin, kmin, 1.8e6},
	} {
		if math.Abs(float64(tc.got)-tc.want) > 0.5 {
			t.Errorf("%s = %d, want %.1f", tc.name, tc.got, tc.want)
		}
		if math.Abs(float64(tc.got)-tc.paper) > 0.05e6 {
			t.Errorf("%s = %d, the paper says ≈ %.1f MB", tc.name, tc.got, tc.paper/1e6)
		}
	}
	if p.PMax != 0.1 {
		t.Errorf("P_max = %g, want 10%%", p.PMax)
	}
	// Eq. 3 as written: K_min = B − B_R/α − C·N·h.
	if want := cfg.PoolSize - int64(math.Round(float64(p.BR)/cfg.Alpha)) - cfg.LineRate/8*int64(cfg.Ports)*BCCDefaultH/1e9; p.KMin != want {
		t.Errorf("K_min = %d, Eq. 3 gives %d", p.KMin, want)
	}
	// K_max is where the DT threshold T(t) = α·(B − ΣQ) (Eq. 1) falls to B_R.
	if tt := cfg.Alpha * float64(cfg.PoolSize-p.KMax); math.Abs(tt-float64(p.BR)) > cfg.Alpha {
		t.Errorf("T at K_max = %.0f, want B_R = %d", tt, p.BR)
	}
}

func TestBCCDeriveEdges(t *testing.T) {
	// A reserve that covers C·RTT·(1+λ) leaves B_R = 0 and K_max = B.
	cfg := eqBCCPaper()
	cfg.Reserve = 2e6
	if p, err := cfg.Derive(); err != nil || p.BR != 0 || p.KMax != cfg.PoolSize {
		t.Errorf("large reserve: %+v, %v; want B_R = 0, K_max = B", p, err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*BCCConfig)
		want string
	}{
		{"no rate", func(c *BCCConfig) { c.LineRate = 0 }, "line_rate 0 bit/s out of range (0, ∞)"},
		{"no pool", func(c *BCCConfig) { c.PoolSize = 0 }, "pool_size 0 bytes out of range"},
		{"alpha", func(c *BCCConfig) { c.Alpha = 0 }, "alpha 0 out of range (0, 1024]"},
		{"ports", func(c *BCCConfig) { c.Ports = 0 }, "ports 0 out of range [1, 4096]"},
		{"reserve", func(c *BCCConfig) { c.Reserve = -1 }, "reserve -1 bytes out of range"},
		{"h", func(c *BCCConfig) { c.H = -5 }, "h -5 ns out of range"},
		{"rtt", func(c *BCCConfig) { c.RTT = 0 }, "rtt 0 ns out of range"},
		{"pool too small", func(c *BCCConfig) { c.PoolSize = 300000 }, "pool_size 300000 bytes must exceed B_R/α"},
		{"span too wide", func(c *BCCConfig) { c.H = 80 * eqUS }, "lower h (80000 ns) or ports (8)"},
	} {
		c := eqBCCPaper()
		tc.mod(&c)
		_, err := c.Derive()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "marking: bcc: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// eqBCCChain builds BCC's members into an enqueue chain.
func eqBCCChain(tb testing.TB, cfg BCCConfig) *Chain {
	tb.Helper()
	members, err := NewBCC(cfg, Enqueue, 8)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := NewChain(Enqueue, NonECTDrop, members...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestBCCPoolREDProfile(t *testing.T) {
	// With every port below its standard threshold, the pool RED alone
	// marks: none below K_min, more and more up to K_max, all at and above
	// K_max, on the instantaneous pool occupancy (002 §IV-C). It "follows
	// the original RED" (002 §IV-B), whose p_a = p_b/(1 − count·p_b) marks
	// about twice the linear profile p_b = P_max·(x − K_min)/(K_max − K_min)
	// at a steady occupancy (eqCountedFraction). (This test used to expect
	// p_b itself: RED without the count correction, the deviation issue 11
	// names.)
	cfg := eqBCCPaper()
	p, err := cfg.Derive()
	if err != nil {
		t.Fatal(err)
	}
	c := eqBCCChain(t, cfg)
	const n = 100000
	span := p.KMax - p.KMin
	for _, x := range []int64{0, p.KMin - 1, p.KMin, p.KMin + span/4, p.KMin + span/2, p.KMin + 3*span/4, p.KMax - 1, p.KMax, cfg.PoolSize} {
		want := 0.0
		switch {
		case x >= p.KMax:
			want = 1
		case x >= p.KMin:
			want = eqCountedFraction(p.PMax * float64(x-p.KMin) / float64(span))
		}
		marks := 0
		for range n {
			v := View{PoolBytes: x, PortBytes: 1000, QueueBytes: 1000, LineRate: cfg.LineRate}
			if c.Decide(&v, packet.ECT0) == Mark {
				marks++
			}
		}
		if got := float64(marks) / n; !eqWithin(got, want, n) {
			t.Errorf("pool occupancy %d: marked %.4f, want %.4f", x, got, want)
		}
	}
	counts := c.Counts(nil)
	if counts[0].Name != BCCPortMember || counts[0].Marks != 0 || counts[1].Name != BCCPoolMember || counts[1].Marks == 0 {
		t.Errorf("counts %+v: want marks from the pool member only", counts)
	}
}

func TestBCCPoolCountOff(t *testing.T) {
	// Count: CountOff gives the pool RED the linear profile p_b of WRED.
	cfg := eqBCCPaper()
	cfg.Count = CountOff
	p, err := cfg.Derive()
	if err != nil {
		t.Fatal(err)
	}
	c := eqBCCChain(t, cfg)
	const n = 100000
	x := p.KMin + (p.KMax-p.KMin)/2
	marks := 0
	for range n {
		v := View{PoolBytes: x, PortBytes: 1000, QueueBytes: 1000, LineRate: cfg.LineRate}
		if c.Decide(&v, packet.ECT0) == Mark {
			marks++
		}
	}
	if got, want := float64(marks)/n, p.PMax/2; !eqWithin(got, want, n) {
		t.Errorf("count off, pool half way from K_min to K_max: marked %.4f, want p_b = %.4f", got, want)
	}
}

func TestBCCPortMarkingStillApplies(t *testing.T) {
	// With a nearly empty pool, the per-port standard threshold
	// (720 KB = 0.72·C·RTT, 002 §V-A) still marks (002 §IV-B: "per-port
	// standard ECN configuration will take effect first").
	cfg := eqBCCPaper()
	c := eqBCCChain(t, cfg)
	k := Standard(cfg.RTT, cfg.Lambda).Bytes(cfg.LineRate, 0)
	if k != 720000 {
		t.Fatalf("port threshold %d, want 720000", k)
	}
	for _, tc := range []struct {
		port int64
		want Verdict
	}{{k - 1, Pass}, {k, Mark}, {2 * k, Mark}} {
		v := View{PortBytes: tc.port, QueueBytes: 100, PoolBytes: tc.port, LineRate: cfg.LineRate}
		if got := c.Decide(&v, packet.ECT0); got != tc.want {
			t.Errorf("port %d bytes, pool below K_min: %v, want %v", tc.port, got, tc.want)
		}
	}
	// PerQueue moves the standard threshold to the queue.
	cfg.PerQueue = true
	cq := eqBCCChain(t, cfg)
	v := View{PortBytes: 2 * k, QueueBytes: k - 1, LineRate: cfg.LineRate}
	if got := cq.Decide(&v, packet.ECT0); got != Pass {
		t.Errorf("per_queue: queue below K, port above: %v, want pass", got)
	}
}

func TestBCCByHand(t *testing.T) {
	// The testbed's single command (002 §V-B Fig. 8): K_min = K_max =
	// 500 KB, a cut-off on the pool, with a port threshold of 325 KB.
	cfg := BCCConfig{PortThreshold: Bytes(325000), KMin: Bytes(500000)}
	c := eqBCCChain(t, cfg)
	for _, tc := range []struct {
		pool, port int64
		want       Verdict
	}{{499999, 0, Pass}, {500000, 0, Mark}, {0, 325000, Mark}, {0, 324999, Pass}} {
		v := View{PoolBytes: tc.pool, PortBytes: tc.port}
		if got := c.Decide(&v, packet.ECT1); got != tc.want {
			t.Errorf("pool %d port %d: %v, want %v", tc.pool, tc.port, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		cfg  BCCConfig
		want string
	}{
		{"kmax alone", BCCConfig{PortThreshold: Bytes(1), KMax: Bytes(5)}, "kmax 5B given without kmin"},
		{"order", BCCConfig{PortThreshold: Bytes(1), KMin: Bytes(5), KMax: Bytes(4)}, "above kmax"},
		{"no port threshold", BCCConfig{KMin: Bytes(5)}, "needed for the default port_threshold"},
		{"stage", BCCConfig{PortThreshold: Bytes(1), KMin: Bytes(5)}, "not a stage"},
	} {
		stage := Enqueue
		if tc.name == "stage" {
			stage = 9
		}
		_, err := NewBCC(tc.cfg, stage, 8)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
