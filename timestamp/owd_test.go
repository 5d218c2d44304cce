package timestamp

import (
	"testing"
	"time"
)

// The example of 004 §III (Fig. 6): B's clock is 5 s behind A's, the
// path takes 1 s each way. A first packet meets no queue, a second waits
// 1 s in a queue; both ACKs leave B 0.5 s after their data arrived.
func TestDelayPaperExample(t *testing.T) {
	const s = int64(time.Second)
	idle := Stamps{T1: 10 * s, T2: 11*s - 5*s, T3: 11*s - 5*s + s/2, T4: 10*s + 3*s/2 + 1*s}
	queued := Stamps{T1: 20 * s, T2: 22*s - 5*s, T3: 22*s - 5*s + s/2, T4: 20*s + 5*s/2 + 1*s}
	if got := idle.OWD(); got != -4*s {
		t.Fatalf("idle OWD = %d, want −4 s (the paper's −4 seconds)", got)
	}
	if got := queued.OWD(); got != -3*s {
		t.Fatalf("queued OWD = %d, want −3 s", got)
	}
	if got := idle.RTT(); got != 2*s {
		t.Fatalf("idle RTT = %d, want 2 s (1 s each way, B's 0.5 s removed)", got)
	}
	if got := queued.RTT(); got != 3*s {
		t.Fatalf("queued RTT = %d, want 3 s", got)
	}
	var d Delay
	if q := d.Observe(idle.OWD(), idle.RTT()); q != 0 {
		t.Fatalf("first sample's queueing = %d, want 0", q)
	}
	if q := d.Observe(queued.OWD(), queued.RTT()); q != s {
		t.Fatalf("queueing = %d, want 1 s: −3 s − (−4 s)", q)
	}
	if b, ok := d.Base(); !ok || b != -4*s {
		t.Fatalf("OWD_base = %d, %v; want −4 s", b, ok)
	}
	if r, ok := d.MinRTT(); !ok || r != 2*s {
		t.Fatalf("min RTT = %d, %v; want 2 s", r, ok)
	}
}

// A hand-worked drift trace (004 §III, "Handling clock drift"): the path
// takes 1 µs each way and the RTT of an idle path is 2 µs. The receiver's
// clock drifts 40 ns/ms against the sender's, so after 10 ms a packet that
// met no queue shows an OWD 400 ns off the first. A packet 3 µs behind a
// queue must still read 3 µs, whichever way the clock drifts, because the
// base follows every re-observation of the minimum RTT.
func TestDelayFollowsDrift(t *testing.T) {
	for _, c := range []struct {
		name  string
		drift int64 // ns of skew gained in 10 ms
	}{
		{"receiver fast", +400},
		{"receiver slow", -400},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d Delay
			trace := []struct {
				owd, rtt, wantQ int64
			}{
				{1000, 2000, 0},                     // t = 0: the first base
				{1000 + 3000, 2000 + 3000, 3000},    // t = 0: 3 µs queued
				{1000 + c.drift, 2000, 0},           // t = 10 ms: idle again, the minimum re-observed
				{1000 + c.drift + 3000, 5000, 3000}, // t = 10 ms: 3 µs queued
			}
			for i, s := range trace {
				if q := d.Observe(s.owd, s.rtt); q != s.wantQ {
					t.Fatalf("sample %d (owd %d, rtt %d): queueing %d, want %d", i, s.owd, s.rtt, q, s.wantQ)
				}
			}
			if b, _ := d.Base(); b != 1000+c.drift {
				t.Fatalf("OWD_base = %d, want %d: it must follow the drift", b, 1000+c.drift)
			}
		})
	}

	// Either rule the paper rejects, a plain minimum of OWDs or a base
	// updated only on a strictly smaller RTT, keeps the base at 1000 on
	// the fast side and reads 3400 there.
}

func TestDelayTolerance(t *testing.T) {
	for _, c := range []struct {
		tol      int64
		wantBase int64
	}{
		{0, 1000}, // 2003 is not the minimum of 2000
		{5, 1200}, // within 5 ns of it: a re-observation
		{2, 1000}, // 3 ns above is outside 2
	} {
		d := Delay{Tolerance: c.tol}
		d.Observe(1000, 2000)
		d.Observe(1200, 2003)
		if b, _ := d.Base(); b != c.wantBase {
			t.Errorf("Tolerance %d: base %d, want %d", c.tol, b, c.wantBase)
		}
		if r, _ := d.MinRTT(); r != 2000 {
			t.Errorf("Tolerance %d: min RTT %d, want 2000 (a re-observation keeps the minimum)", c.tol, r)
		}
	}
}

// A sample below the base (noise, or drift since the last update) is no
// queue, not a negative one.
func TestDelayNeverNegative(t *testing.T) {
	var d Delay
	d.Observe(1000, 2000)
	if q := d.Observe(900, 2100); q != 0 {
		t.Fatalf("queueing %d, want 0", q)
	}
	if b, _ := d.Base(); b != 1000 {
		t.Fatalf("base moved to %d on a sample whose RTT is not the minimum", b)
	}
}

// ObserveMean keeps a provisional base until a single packet's sample,
// which replaces it, and then never moves the base.
func TestDelayObserveMean(t *testing.T) {
	var d Delay
	if q := d.ObserveMean(1500, 2000); q != 0 {
		t.Fatalf("first mean: queueing %d, want 0 (it is the base)", q)
	}
	if q := d.ObserveMean(1400, 1900); q != 0 || !d.provisional {
		t.Fatalf("a lower RTT: queueing %d, provisional %v; want a new provisional base", q, d.provisional)
	}
	if b, ok := d.Base(); !ok || b != 1400 {
		t.Fatalf("provisional base %d (%v), want 1400", b, ok)
	}
	// A single packet's sample, though its RTT is higher, replaces it.
	if q := d.Observe(1000, 2500); q != 0 {
		t.Fatalf("first single sample: queueing %d, want 0", q)
	}
	if b, _ := d.Base(); b != 1000 || d.provisional {
		t.Fatalf("base %d, provisional %v; want 1000, false", b, d.provisional)
	}
	// Now means only measure, however low their RTT.
	if q := d.ObserveMean(1700, 100); q != 700 {
		t.Fatalf("queueing %d, want 700", q)
	}
	if b, _ := d.Base(); b != 1000 {
		t.Fatalf("a mean moved the base to %d", b)
	}
	if r, _ := d.MinRTT(); r != 2500 {
		t.Fatalf("a mean moved the minimum RTT to %d", r)
	}
}

func TestCalibrate(t *testing.T) {
	const gbit = 1_000_000_000 // 1500 B take 12 µs
	for _, c := range []struct {
		name      string
		in, want  []int64
		bytes     []int
		wantMoved int
	}{
		{"one batch, one stamp", []int64{1000, 1100, 1200}, []int64{1000, 13000, 25000}, []int{1500, 1500, 1500}, 2},
		{"spaced already", []int64{0, 12000, 40000}, []int64{0, 12000, 40000}, []int{1500, 1500, 1500}, 0},
		{"moved stamp pushes the next", []int64{0, 5000, 20000}, []int64{0, 12000, 24000}, []int{1500, 1500, 1500}, 2},
		{"the later packet's size counts", []int64{0, 100}, []int64{0, 512}, []int{1500, 64}, 1},
		{"empty", nil, nil, nil, 0},
	} {
		got := append([]int64(nil), c.in...)
		if moved := Calibrate(got, c.bytes, gbit); moved != c.wantMoved {
			t.Errorf("%s: moved %d, want %d", c.name, moved, c.wantMoved)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: stamps %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestTransmissionTime(t *testing.T) {
	for _, c := range []struct {
		bytes int
		rate  int64
		want  int64
	}{
		{1500, 1e9, 12000},
		{1500, 10e9, 1200}, // the paper's 1.2 µs MSS at 10 Gbit/s (§III)
		{64, 10e9, 51},     // 51.2, rounded down
	} {
		if got := TransmissionTime(c.bytes, c.rate); got != c.want {
			t.Errorf("TransmissionTime(%d, %d) = %d, want %d", c.bytes, c.rate, got, c.want)
		}
	}
}

func TestCalibrateAllocs(t *testing.T) {
	s := make([]int64, 10)
	b := make([]int, 10)
	for i := range b {
		b[i] = 1500
	}
	if n := testing.AllocsPerRun(100, func() { Calibrate(s, b, 1e9) }); n != 0 {
		t.Fatalf("Calibrate allocates %v times", n)
	}
}
