package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/race"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
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
	lv, ok := levels(r.dx, r.inject)
	want := []float64{5700, 17_700, 29_700, 41_700, 53_700}
	if !ok || len(lv) != len(want) {
		t.Fatalf("levels %v (%v), want %v", lv, ok, want)
	}
	for i := range want {
		if lv[i] != want[i] {
			t.Errorf("level %d = %g, want %g", i, lv[i], want[i])
		}
	}
	for i, s := range steps(lv) {
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
	rep := dxStepsReport(Env{Command: "test"}, o, time.Second, dxStepsDefault, staircase(dxSteps, 3000, tx, -500))
	for _, c := range rep.Claims {
		if !c.Holds() {
			t.Errorf("%s: does not hold with steps of one transmission time (ours %s)", c.What, c.Ours)
		}
	}
	half := staircase(dxSteps, 3000, tx, 0)
	for i := range half.dx {
		half.dx[i].d /= 2
	}
	rep = dxStepsReport(Env{Command: "test"}, o, time.Second, dxStepsDefault, half)
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
		rate: demo.DefaultRate / dxNoiseShare, duration: time.Second, busy: 0.01,
		rtt:     []int64{10_000, 10_200, 9800, 10_000},
		host:    []int64{10_000, 14_000, 8000, 12_000},
		sojourn: []int64{0, 0, 100},
	}
	c := noiseClaim(n)
	if !c.Holds() || !strings.Contains(c.Ours, "σ 0.16 µs from the stamps against 2.58 µs") || !strings.Contains(c.Ours, "p1–p99 0.40 against 6.00 µs") {
		t.Errorf("claim holds %v, ours %q; want it to hold with σ 0.16 against 2.58 µs, p1–p99 0.40 against 6.00 µs", c.Holds(), c.Ours)
	}
	n.rtt, n.host = n.host, n.rtt
	if noiseClaim(n).Holds() {
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
	if noiseClaim(n).Holds() {
		t.Errorf("the claim holds with σ %.0f ns from the stamps against %.0f ns", stddev(n.rtt), stddev(n.host))
	}
	r := staircase(dxSteps, 3000, timestamp.TransmissionTime(wireFrame, demo.DefaultRate), 0)
	r.noise = n
	rep := dxStepsReport(Env{Command: "test"}, demo.Options{Rate: demo.DefaultRate, Buffer: demo.DefaultBuffer}, time.Second, dxStepsDefault, r)
	if len(rep.Claims) != 3 || len(rep.Plots) != 2 {
		t.Fatalf("%d claims and %d plots with the unloaded phase, want 3 and 2", len(rep.Claims), len(rep.Plots))
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
	if _, ok := levels(r.sw, r.inject); !ok {
		t.Error("an interval without a switch sample")
	}
	// DX's samples need the sender's ACKs, which a loaded machine can
	// hold up past an interval: most intervals, not all. Under the race
	// detector the endpoints run several times slower and fall behind
	// C, so only some samples are required.
	lv, _ := levels(r.dx, r.inject)
	empty := 0
	for _, l := range lv {
		if l == 0 {
			empty++
		}
	}
	if len(r.dx) == 0 || !race.Enabled && empty > len(lv)/4 {
		t.Errorf("%d DX samples, %d of %d intervals without one", len(r.dx), empty, len(lv))
	}

	// The unloaded phase: every single-packet ACK gives both RTTs, and
	// the sender reads an ACK no earlier than the kernel stamped it.
	n, err := runNoise(context.Background(), b, 300*time.Millisecond, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.rtt) < 10 || len(n.rtt) != len(n.host) || len(n.sojourn) == 0 {
		t.Fatalf("%d stamped and %d host-time RTTs, %d sojourns; want ≥ 10 pairs and some sojourns", len(n.rtt), len(n.host), len(n.sojourn))
	}
	for i := range n.rtt {
		if n.rtt[i] <= 0 || n.host[i] < n.rtt[i] {
			t.Errorf("sample %d: RTT %d ns from the stamps, %d ns with the receive path; want 0 < stamped ≤ host", i, n.rtt[i], n.host[i])
		}
	}
}
