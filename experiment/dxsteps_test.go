package experiment

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/timestamp"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// staircase is a synthetic run: a queue of base ns that grows by step ns
// at each of n injections 1 ms apart, sampled every 10 µs, DX reading it
// off by dxOff ns.
func staircase(n int, base, step, dxOff int64) *dxStepsRun {
	r := &dxStepsRun{rate: demo.DefaultRate, busy: 0.99, sent: n}
	for k := range n {
		r.inject = append(r.inject, int64(k+1)*1e6)
	}
	for t := int64(0); t < int64(n+1)*1e6; t += 10_000 {
		d := base
		for _, in := range r.inject {
			if t >= in {
				d += step
			}
		}
		r.sw = append(r.sw, stepSample{t, d})
		r.dx = append(r.dx, stepSample{t, d + dxOff})
	}
	return r
}

func TestLevelsAndSteps(t *testing.T) {
	r := staircase(4, 5000, 12_000, 700)
	at, k := groups(r.sw, r.inject)
	if !slices.Equal(at, r.inject) || !slices.Equal(k, []int{1, 1, 1, 1}) {
		t.Fatalf("groups %v of %v; want every injection its own", at, k)
	}
	lv, ok := levels(r.dx, at)
	want := []float64{5700, 17_700, 29_700, 41_700, 53_700}
	if !ok || len(lv) != len(want) {
		t.Fatalf("levels %v (%v), want %v", lv, ok, want)
	}
	for i := range want {
		if lv[i] != want[i] {
			t.Errorf("level %d = %g, want %g", i, lv[i], want[i])
		}
	}
	for i, s := range steps(lv, k) {
		if s != 12_000 {
			t.Errorf("step %d = %g, want 12000", i, s)
		}
	}
	if _, ok := levels(r.dx[:10], r.inject); ok {
		t.Error("levels reported every interval sampled with samples only before the first injection")
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median of 1, 2, 3, 10 = %g, want 2.5", m)
	}
}

// Injections that the host path held and let go together — no data
// packet entered between them — form one group, whose step counts per
// packet: three probes entering at once lift the queue three steps.
func TestGroupedInjections(t *testing.T) {
	r := staircase(4, 5000, 12_000, 0)
	// Probes 2 and 3 held back and entered with probe 4, at 4 ms: no
	// data packet between them, and the queue jumps by three there.
	r.inject = []int64{1e6, 4e6, 4e6, 4e6}
	for i := range r.sw {
		d := int64(5000)
		switch t := r.sw[i].t; {
		case t >= 4e6:
			d += 4 * 12_000
		case t >= 1e6:
			d += 12_000
		}
		r.sw[i].d = d
	}
	at, k := groups(r.sw, r.inject)
	if !slices.Equal(at, []int64{1e6, 4e6}) || !slices.Equal(k, []int{1, 3}) {
		t.Fatalf("groups at %v of %v, want [1ms 4ms] of [1 3]", at, k)
	}
	lv, ok := levels(r.sw, at)
	if !ok {
		t.Fatal("an interval between groups without a sample")
	}
	if st := steps(lv, k); !slices.Equal(st, []float64{12_000, 12_000}) {
		t.Errorf("steps per packet %v, want 12000 each", st)
	}
	if iqr([]int64{1, 2, 3, 4, 5, 6, 7, 8}) != 4 {
		t.Errorf("IQR of 1..8 = %d, want 6 − 2 = 4", iqr([]int64{1, 2, 3, 4, 5, 6, 7, 8}))
	}
}

// placeSteps puts an ACK at its newest packet's entry into the queue and
// keeps the probes apart.
func TestPlaceSteps(t *testing.T) {
	recs := []tapRecord{
		{t: 1000, sojourn: 100, flow: 1, seq: 7},
		{t: 1500, sojourn: 300, flow: 0},
		{t: 2000, sojourn: 200, flow: 1, seq: 8},
	}
	inject, sw, dx := placeSteps(recs, []flowSample{{seq: 8, n: 2, queue: 250}, {seq: 99, n: 1, queue: 5}})
	if len(inject) != 1 || inject[0] != 1200 {
		t.Errorf("injections %v, want [1200]", inject)
	}
	if len(sw) != 2 || sw[0] != (stepSample{900, 100}) || sw[1] != (stepSample{1800, 200}) {
		t.Errorf("switch samples %v", sw)
	}
	if len(dx) != 1 || dx[0] != (stepSample{1800, 250}) {
		t.Errorf("DX samples %v, want one at 1800 (packet 8's entry); packet 99 was never seen", dx)
	}
}

// The claims follow the steps: one transmission time per injection holds,
// half of one does not.
func TestDXStepsReport(t *testing.T) {
	tx := timestamp.TransmissionTime(wireFrame, demo.DefaultRate)
	o := demo.Options{Rate: demo.DefaultRate, Buffer: demo.DefaultBuffer}
	three := func(r *dxStepsRun) []*dxStepsRun { return []*dxStepsRun{r, r, r} }
	rep := dxStepsReport(Env{Command: "test"}, o, time.Second, dxStepsDefault, three(staircase(dxSteps, 3000, tx, -500)), nil)
	for _, c := range rep.Claims {
		if !c.Holds() {
			t.Errorf("%s: does not hold with steps of one transmission time (ours %s)", c.What, c.Ours)
		}
	}
	half := staircase(dxSteps, 3000, tx, 0)
	for i := range half.dx {
		half.dx[i].d /= 2
	}
	rep = dxStepsReport(Env{Command: "test"}, o, time.Second, dxStepsDefault, three(half), nil)
	if rep.Claims[0].Holds() || !rep.Claims[1].Holds() {
		t.Errorf("DX reading half the steps: claims hold %v, %v; want false, true", rep.Claims[0].Holds(), rep.Claims[1].Holds())
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

// The unloaded phase's claim compares the two RTTs' σ, worked by hand:
// stamped RTTs 10.0, 10.2, 9.8, 10.0 µs have σ 0.16 µs; host-time RTTs
// 10, 14, 8, 12 µs have σ 2.58 µs.
func TestNoiseClaim(t *testing.T) {
	n := &rttNoise{
		path: noiseSwitch, rate: demo.DefaultRate / dxNoiseShare, duration: time.Second, busy: 0.01,
		rtt:     []int64{10_000, 10_200, 9800, 10_000},
		host:    []int64{10_000, 14_000, 8000, 12_000},
		sojourn: []int64{0, 0, 100},
	}
	one := func(n *rttNoise) []*rttNoise { return []*rttNoise{n} }
	c := noiseClaim(one(n))
	if !c.Holds() || !strings.Contains(c.Ours, "σ 0.16 µs from the stamps against 2.58 µs") || !strings.Contains(c.Ours, "p1–p99 0.40 against 6.00 µs") ||
		!strings.Contains(c.Ours, "IQR 0.20 against 4.00 µs") {
		t.Errorf("claim holds %v, ours %q; want it to hold with σ 0.16 against 2.58 µs, IQR 0.20 against 4.00, p1–p99 0.40 against 6.00 µs", c.Holds(), c.Ours)
	}
	n.rtt, n.host = n.host, n.rtt
	if noiseClaim(one(n)).Holds() {
		t.Error("the claim holds with the stamped RTT the noisier")
	}
	// One sample 1 ms late among 200 makes the stamped σ the larger while
	// the stamped p1–p99 spread stays the smaller: the spread alone does
	// not save the claim.
	n.rtt, n.host = nil, nil
	for i := range 200 {
		n.rtt = append(n.rtt, 10_000+200*int64(i%2))
		n.host = append(n.host, 8000+6000*int64(i%2))
	}
	n.rtt[199] = 1_000_000
	if spread(n.rtt) >= spread(n.host) || stddev(n.rtt) <= stddev(n.host) {
		t.Fatalf("the case does not isolate σ: spread %d vs %d ns, σ %.0f vs %.0f ns", spread(n.rtt), spread(n.host), stddev(n.rtt), stddev(n.host))
	}
	if noiseClaim(one(n)).Holds() {
		t.Errorf("the claim holds with σ %.0f ns from the stamps against %.0f ns", stddev(n.rtt), stddev(n.host))
	}
	r := staircase(dxSteps, 3000, timestamp.TransmissionTime(wireFrame, demo.DefaultRate), 0)
	direct := *n
	direct.path, direct.sojourn = noiseDirect, nil
	rep := dxStepsReport(Env{Command: "test"}, demo.Options{Rate: demo.DefaultRate, Buffer: demo.DefaultBuffer}, time.Second, dxStepsDefault,
		[]*dxStepsRun{r}, []*rttNoise{&direct, n})
	if len(rep.Claims) != 4 || len(rep.Plots) != 2 {
		t.Fatalf("%d claims and %d plots with the unloaded phase, want 4 (steps twice, noise direct and through the switch) and 2", len(rep.Claims), len(rep.Plots))
	}
	if !strings.Contains(rep.Claims[2].What, noiseDirect) || !strings.Contains(rep.Claims[3].What, noiseSwitch) {
		t.Errorf("noise claims %q, %q: want the direct pair's, then the switch's", rep.Claims[2].What, rep.Claims[3].What)
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestIsProbe(t *testing.T) {
	f := packettest.UDP4(t, packettest.Options{Size: 14 + 20 + 8 + udp.DefaultSize})
	copy(f[14+20+8:], dxProbe)
	if !isProbe(f, dxProbe) {
		t.Error("a probe frame not taken for one")
	}
	g := packettest.UDP4(t, packettest.Options{Size: 14 + 20 + 8 + udp.DefaultSize})
	if isProbe(g, dxProbe) || isProbe(f[:50], dxProbe) {
		t.Error("a zero payload or a truncated frame taken for a probe")
	}
}

// A short run through ecnswitch: every probe reaches the tap, and both
// DX and the switch have samples in every interval. Steps are not
// asserted: they need the quiet machine `make experiments` runs on.
func TestStepsThroughSwitch(t *testing.T) {
	o := dxOptions()
	o.Rate = 100e6 // light on the CPU the other packages' tests share
	b := testBed(t, o)
	r, err := runSteps(context.Background(), b, 300*time.Millisecond, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// A probe the tap did not see was dropped at the full port: on a
	// loaded machine the sender catches up in bursts.
	if r.sent != dxSteps || len(r.inject) == 0 || len(r.inject) > r.sent || len(r.inject) < r.sent && r.drops == 0 {
		t.Errorf("sent %d probes, the tap saw %d, the port dropped %d packets; want %d sent, each seen or a drop", r.sent, len(r.inject), r.drops, dxSteps)
	}
	at, _ := groups(r.sw, r.inject)
	if _, ok := levels(r.sw, at); !ok {
		t.Error("an interval between groups of injections without a switch sample")
	}
	// DX's samples need ACKs of packets sent once: a loaded machine that
	// has the sender catch up in bursts overflows the port, and the
	// go-back-N recovery that follows gives none for a while (Karn). So
	// only their placement is checked: samples on both sides of the
	// first group of injections, never before the data they describe.
	lv, _ := levels(r.dx, at)
	after := slices.ContainsFunc(lv[1:], func(l float64) bool { return l != 0 })
	if len(r.dx) == 0 || !after {
		t.Errorf("%d DX samples, levels %v: want samples after the first injection", len(r.dx), lv)
	}
	if len(r.dx) > 0 && len(r.sw) > 0 && r.dx[0].t < r.sw[0].t {
		t.Errorf("a DX sample placed at %d ns, before the first data packet entered (%d ns)", r.dx[0].t, r.sw[0].t)
	}

	// The unloaded phase, through the switch and over a direct pair:
	// every single-packet ACK gives both RTTs, t1 is the kernel's
	// transmit stamp, and the sender's own times hold the stamps'.
	n, err := runNoise(context.Background(), b, 300*time.Millisecond, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	checkNoise(t, n, true)
	hs := b.hosts()
	id, err := testbed.RandomID()
	if err != nil {
		t.Fatal(err)
	}
	remove, err := directPair(hs[0], hs[demo.Bottleneck], "dt"+id)
	if err != nil {
		t.Fatal(err)
	}
	n, err = runNoiseDirect(context.Background(), b, 300*time.Millisecond, 500*time.Millisecond)
	if rerr := remove(); rerr != nil {
		t.Error(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkNoise(t, n, false)
	// The pair and its routes are gone: the same pair can be made again.
	again, err := directPair(hs[0], hs[demo.Bottleneck], "dt"+id)
	if err != nil {
		t.Fatalf("the direct pair made again after its removal: %v", err)
	}
	if err := again(); err != nil {
		t.Error(err)
	}
}

// checkNoise checks one unloaded phase's samples.
func checkNoise(t *testing.T, n *rttNoise, sojourns bool) {
	t.Helper()
	if len(n.rtt) < 10 || len(n.rtt) != len(n.host) || sojourns != (len(n.sojourn) > 0) {
		t.Fatalf("%s: %d stamped and %d host-time RTTs, %d sojourns; want ≥ 10 pairs, and sojourns only through the switch",
			n.path, len(n.rtt), len(n.host), len(n.sojourn))
	}
	if n.stamped < len(n.rtt)*9/10 {
		t.Errorf("%s: %d of %d samples with a transmit stamp as t1; want nearly all", n.path, n.stamped, len(n.rtt))
	}
	for i := range n.rtt {
		if n.rtt[i] <= 0 || n.host[i] < n.rtt[i] {
			t.Errorf("%s: sample %d: RTT %d ns from the stamps, %d ns with the sender's paths; want 0 < stamped ≤ host", n.path, i, n.rtt[i], n.host[i])
		}
	}
}
