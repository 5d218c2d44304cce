package bench

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/loadgen"
)

// modelDevice forwards at most capacity frames/s and drops the excess; the
// generator offers at most genMax unpaced. fails, when set, makes extra
// trials lose a frame (noise).
type modelDevice struct {
	capacity, genMax float64
	paceMax          float64 // most the generator keeps up paced; 0 no limit
	tolerance        float64
	fails            func(pps float64) bool
	trials           []float64
}

func (m *modelDevice) run(kind string, pps float64) (Trial, error) {
	offered := pps
	if kind == "max" {
		offered = m.genMax
	} else if m.paceMax > 0 {
		offered = min(offered, m.paceMax)
	}
	m.trials = append(m.trials, offered)
	fwd := min(offered, m.capacity)
	loss := (offered - fwd) / offered
	if m.fails != nil && m.fails(pps) {
		loss = max(loss, 1e-6)
	}
	return Trial{Kind: kind, TargetPPS: pps, OfferedPPS: offered, ForwardedPPS: fwd, LossRatio: loss,
		Sent: 1000, Pass: loss <= m.tolerance, Short: offered < pps*0.99, Latency: loadgen.Latency{P50: int64(offered)}}, nil
}

func TestSearchFindsThroughput(t *testing.T) {
	o := SwitchOptions{}
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	m := &modelDevice{capacity: 0.6e6, genMax: 1e6}
	res, err := search(o, m.run)
	if err != nil {
		t.Fatal(err)
	}
	// The sweep brackets the capacity in [0.5, 0.75]·genMax; five
	// bisection steps narrow that to 0.25/2⁵ of genMax.
	bracket := 0.25 * m.genMax / 32
	if res.ThroughputPPS > m.capacity || m.capacity-res.ThroughputPPS > bracket {
		t.Errorf("throughput %.0f pps, want within %.0f below the capacity %.0f", res.ThroughputPPS, bracket, m.capacity)
	}
	if res.MaxOfferedPPS != m.genMax || res.MaxForwardedPPS != m.capacity || math.Abs(res.MaxLossRatio-0.4) > 1e-12 {
		t.Errorf("max: %+v", res)
	}
	if want := 1 + len(o.Sweep) + o.Iterations; res.Trials != want || len(m.trials) != want {
		t.Errorf("%d trials, want 1 + %d + %d", res.Trials, len(o.Sweep), o.Iterations)
	}
	if res.ThroughputLatency.P50 != int64(res.ThroughputPPS) {
		t.Errorf("latency is not the passing trial's: %+v", res.ThroughputLatency)
	}
}

func TestSearchStopsAtResolution(t *testing.T) {
	o := SwitchOptions{Iterations: 30, Resolution: 0.001}
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	m := &modelDevice{capacity: 0.437e6, genMax: 1e6}
	res, _ := search(o, m.run)
	if e := (m.capacity - res.ThroughputPPS) / m.capacity; e < 0 || e > 0.001 {
		t.Errorf("throughput %.0f pps, %.4f%% below capacity; want within the 0.1%% resolution", res.ThroughputPPS, 100*e)
	}
	if res.Trials >= 1+len(o.Sweep)+o.Iterations {
		t.Errorf("%d trials: the search did not stop at its resolution", res.Trials)
	}
}

func TestSearchGeneratorBound(t *testing.T) {
	o := SwitchOptions{}
	o.setDefaults()
	m := &modelDevice{capacity: 2e6, genMax: 1e6}
	res, _ := search(o, m.run)
	if !res.GeneratorBound || res.ThroughputPPS != 1e6 || res.Trials != 1+len(o.Sweep) {
		t.Errorf("%+v: want throughput = the generator's 1 Mpps after the unpaced trial and the sweep", res)
	}
}

// TestSearchStopsWhereTheGeneratorFallsShort: paced, the generator keeps
// up only to 0.72 Mpps; the sweep's 0.75 and 0.9 trials offer 0.72 and
// pass. The throughput is what was offered, 0.72 Mpps, marked as a lower
// bound, and no search trial tries rates the generator cannot offer.
func TestSearchStopsWhereTheGeneratorFallsShort(t *testing.T) {
	o := SwitchOptions{}
	o.setDefaults()
	m := &modelDevice{capacity: 0.9e6, genMax: 1e6, paceMax: 0.72e6}
	res, _ := search(o, m.run)
	// The 0.75 and 0.9 sweep trials fall short, and so do their retries.
	if res.ThroughputPPS != 0.72e6 || !res.GeneratorBound || res.Trials != 1+len(o.Sweep)+2 {
		t.Errorf("%+v: want ≥ 0.72 Mpps after the sweep and its two retries", res)
	}
}

// TestSearchRetriesAShortTrial: one stall of the generator (a trial that
// falls short of its target once) is retried and does not end the search.
func TestSearchRetriesAShortTrial(t *testing.T) {
	o := SwitchOptions{}
	o.setDefaults()
	m := &modelDevice{capacity: 0.6e6, genMax: 1e6}
	stalled := false
	res, _ := search(o, func(kind string, pps float64) (Trial, error) {
		tr, err := m.run(kind, pps)
		if kind == "sweep" && pps == 0.25e6 && !stalled {
			stalled = true
			tr.OfferedPPS, tr.Short = 0.2e6, true
		}
		return tr, err
	})
	if res.GeneratorBound || res.ThroughputPPS > m.capacity || m.capacity-res.ThroughputPPS > 0.25*m.genMax/32 {
		t.Errorf("%+v: want the throughput found as without the stall", res)
	}
	if want := 1 + len(o.Sweep) + 1 + o.Iterations; res.Trials != want {
		t.Errorf("%d trials, want %d (one retry)", res.Trials, want)
	}
}

func TestSearchLossTolerance(t *testing.T) {
	o := SwitchOptions{LossTolerance: 0.1, Iterations: 20}
	o.setDefaults()
	m := &modelDevice{capacity: 0.6e6, genMax: 1e6, tolerance: 0.1}
	res, _ := search(o, m.run)
	// Loss (o−C)/o ≤ 0.1 up to o = C/0.9.
	want := m.capacity / 0.9
	if e := (want - res.ThroughputPPS) / want; e < 0 || e > o.Resolution {
		t.Errorf("throughput %.0f pps, want within %.1f%% below %.0f", res.ThroughputPPS, 100*o.Resolution, want)
	}
}

// TestSearchNeverReportsAboveAFailure: a trial that fails below a passing
// one (noise) caps the throughput: RFC 2544 throughput is a rate with no
// loss, and a lower rate lost frames.
func TestSearchNeverReportsAboveAFailure(t *testing.T) {
	o := SwitchOptions{}
	o.setDefaults()
	m := &modelDevice{capacity: 0.8e6, genMax: 1e6, fails: func(pps float64) bool { return pps == 0.25e6 }}
	res, _ := search(o, m.run)
	if res.ThroughputPPS >= 0.25e6 || res.ThroughputPPS < 0.1e6 {
		t.Errorf("throughput %.0f pps, want in [0.1, 0.25) Mpps below the failed 0.25 Mpps trial", res.ThroughputPPS)
	}
}

func TestSwitchReportWrite(t *testing.T) {
	rep := &SwitchReport{Start: time.Unix(1e9, 0), Kernel: "6.18", CPUs: 2, Seconds: 100, Generator: GeneratorXDP, Sink: loadgen.SinkXDP}
	rep.Options.Sizes = []int{64, 1500}
	rep.Options.Devices = []Device{DeviceSwitch, DeviceBridge}
	rep.Options.Sweep = []float64{0.5}
	for _, size := range rep.Options.Sizes {
		for i, dev := range rep.Options.Devices {
			capacity := 0.3e6 * float64(i+1)
			m := &modelDevice{capacity: capacity, genMax: 1e6}
			o := SwitchOptions{}
			o.setDefaults()
			res, _ := search(o, func(kind string, pps float64) (Trial, error) {
				tr, err := m.run(kind, pps)
				tr.Device, tr.Size = dev, size
				tr.Latency = loadgen.Latency{Count: 1, P50: 20_000, P99: 80_000}
				rep.Trials = append(rep.Trials, tr)
				return tr, err
			})
			res.Device, res.Size = dev, size
			rep.Results = append(rep.Results, res)
		}
	}
	dir := t.TempDir()
	if err := rep.Write(dir, "ecnswitch bench switch --out x"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rate-64.png", "latency-64.png", "rate-1500.png", "latency-1500.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 300 {
			t.Errorf("%s: %v", name, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// ecnswitch forwards 0.3 Mpps at most, the bridge 0.6: ratio 0.50.
	// The generator offered 1 Mpps to both: each row is device-bound.
	for _, want := range []string{"ecnswitch bench switch --out x", "| 64 B | ecnswitch | 0.3000 Mpps | 0.154 Gbit/s",
		"| 70.000% | device |", "| 40.000% | device |", "| 0.50 |", "rate-1500.png", "as XDP live frames",
		"to a sink counting in an XDP program", "for a random 0.0156 of the frames"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Error(err)
	}
}

func TestSwitchOptionsSink(t *testing.T) {
	o := SwitchOptions{}
	if err := o.setDefaults(); err != nil || o.Sink != loadgen.SinkAuto {
		t.Errorf("default sink %q (%v), want auto", o.Sink, err)
	}
	o = SwitchOptions{Sink: "socket"}
	if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), `sink: "socket"`) {
		t.Errorf("sink socket: error %v, want one naming it", err)
	}
}

func TestResultBoundBy(t *testing.T) {
	for _, c := range []struct {
		offered, forwarded float64
		want               string
	}{{1e6, 0.3e6, "device"}, {1e6, 1e6, "generator"}, {0.5e6, 0.5e6, "generator"}} {
		if got := (Result{MaxOfferedPPS: c.offered, MaxForwardedPPS: c.forwarded}).BoundBy(); got != c.want {
			t.Errorf("offered %g, forwarded %g: bound by %s, want %s", c.offered, c.forwarded, got, c.want)
		}
	}
}

// TestSearchSweepsBelowAFarSlowerDevice: a generator 50 times faster than
// the device (live frames into a bridge) sweeps fractions of what the
// device forwarded, not of what it offered, so the sweep finds passing
// loads and the throughput is within the top sweep step of the capacity.
func TestSearchSweepsBelowAFarSlowerDevice(t *testing.T) {
	o := SwitchOptions{}
	o.setDefaults()
	m := &modelDevice{capacity: 0.1e6, genMax: 5e6}
	res, _ := search(o, m.run)
	for i, f := range o.Sweep {
		if got := m.trials[1+i]; got != f*m.capacity {
			t.Errorf("sweep %d offered %.0f pps, want %.2f of the 0.1 Mpps forwarded", i, got, f)
		}
	}
	if res.ThroughputPPS > m.capacity || res.ThroughputPPS < 0.9*m.capacity {
		t.Errorf("throughput %.0f pps, want within the top sweep step (0.9) of the capacity %.0f", res.ThroughputPPS, m.capacity)
	}
}
