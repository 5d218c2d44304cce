package marking

import (
	"math"
	"strings"
	"testing"
)

const eqUS = int64(1000) // ns per µs

func TestThresholdBytes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		t        Threshold
		rate     int64
		mtu      int64
		want     int64
		rateDeps bool
	}{
		{"bytes", Bytes(32000), 0, 0, 32000, false},
		// 001 §2.2.1: 16 packets; DCTCP's 65 packets at 10G (001 §2.2 footnote 3).
		{"packets of the mtu", Packets(16), 1e9, 1500, 16 * 1500, false},
		{"packets, default mtu", Packets(65), 0, 0, 65 * 1500, false},
		{"packets of jumbo mtu", Packets(2), 0, 9000, 18000, false},
		{"packets of a given size", PacketsOf(16, 1024), 0, 9000, 16 * 1024, false},
		// 003 §II-C pairs a 16-packet DCTCP threshold with a 19.2 µs TCN
		// threshold: 19.2 µs at 10 Gbit/s drain 24000 B, 16 packets of 1500 B.
		{"delay at 10G", Delay(19200), 10e9, 0, 24000, true},
		{"delay floors", Delay(1), 1e9, 0, 0, true},
		// 002 §V-A: 0.72·BDP with C = 100 Gbit/s, RTT = 80 µs is 720 KB.
		{"standard, BCC's DCTCP", Standard(80*eqUS, 0.72), 100e9, 0, 720000, true},
		{"standard, λ = 1 at 10G", Standard(100*eqUS, 1), 10e9, 0, 125000, true},
		{"standard without a rate", Standard(100*eqUS, 1), 0, 0, 0, true},
		{"saturates", Delay(thresholdTimeMax), math.MaxInt64, 0, math.MaxInt64, true},
		{"packets saturate", Packets(math.MaxInt64), 0, 9000, math.MaxInt64, false},
		{"zero threshold", Threshold{}, 1e9, 1500, 0, false},
	} {
		if got := tc.t.Bytes(tc.rate, tc.mtu); got != tc.want {
			t.Errorf("%s: %v.Bytes(%d, %d) = %d, want %d", tc.name, tc.t, tc.rate, tc.mtu, got, tc.want)
		}
		if got := tc.t.RateDependent(); got != tc.rateDeps {
			t.Errorf("%s: RateDependent() = %v, want %v", tc.name, got, tc.rateDeps)
		}
	}
}

func TestThresholdStandardFormula(t *testing.T) {
	// K = λ·C·RTT (001 §2.2 Eq. 1) in bytes, across rates, RTTs and λ.
	for _, c := range []int64{1e9, 10e9, 25e9, 40e9, 100e9, 400e9} {
		for _, rtt := range []int64{10 * eqUS, 80 * eqUS, 100 * eqUS, 256 * eqUS} {
			for _, lambda := range []float64{0.17, 0.72, 1, 2} {
				want := int64(math.Round(lambda * float64(c) * float64(rtt) / 8e9))
				if got := Standard(rtt, lambda).Bytes(c, 0); got != want {
					t.Errorf("Standard(%d ns, %g).Bytes(%d) = %d, want λ·C·RTT = %d", rtt, lambda, c, got, want)
				}
				// Delay(λ·RTT) is the same amount of bytes when λ·RTT is whole ns.
				if d := lambda * float64(rtt); d == math.Trunc(d) {
					if got := Delay(int64(d)).Bytes(c, 0); got != want {
						t.Errorf("Delay(%g ns).Bytes(%d) = %d, want %d", d, c, got, want)
					}
				}
			}
		}
	}
}

func TestThresholdZeroAndString(t *testing.T) {
	var z Threshold
	if !z.IsZero() || Bytes(0).IsZero() {
		t.Errorf("IsZero: zero %v, Bytes(0) %v", z.IsZero(), Bytes(0).IsZero())
	}
	for _, tc := range []struct {
		t    Threshold
		want string
	}{
		{Bytes(32000), "32000B"},
		{Packets(16), "16pkt"},
		{PacketsOf(16, 1024), "16x1024B"},
		{Delay(25600), "25600ns"},
		{Standard(100000, 0.72), "0.72*C*RTT(100000ns)"},
		{z, "unset"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestThresholdCheck(t *testing.T) {
	for _, tc := range []struct {
		t    Threshold
		want string // substring of the error; "" for valid
	}{
		{Bytes(0), ""},
		{Packets(16), ""},
		{Standard(100*eqUS, 1), ""},
		{Threshold{}, "kmin is not set"},
		{Bytes(-1), "kmin -1 bytes out of range"},
		{Packets(-2), "kmin -2 packets out of range"},
		{PacketsOf(2, -5), "packet size -5 bytes out of range"},
		{Delay(-1), "kmin -1 ns out of range [0, 10000000000] ns"},
		{Delay(thresholdTimeMax + 1), "out of range"},
		{Standard(0, 1), "rtt 0 ns out of range (0, 10000000000] ns"},
		{Standard(100*eqUS, 0), "lambda 0 out of range (0, 16]"},
		{Standard(100*eqUS, math.NaN()), "lambda NaN out of range"},
		{Standard(100*eqUS, 17), "lambda 17 out of range"},
	} {
		err := tc.t.check("red", "kmin")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: unexpected error %v", tc.t, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one containing %q", tc.t, err, tc.want)
		}
	}
}

func TestMulDivSat(t *testing.T) {
	for _, tc := range []struct{ a, b, c, want int64 }{
		{7, 3, 2, 10},
		{100e9, 80 * eqUS, 8e9, 1000000},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 4, 2, math.MaxInt64},
		{-1, 5, 1, 0},
		{5, 5, 0, 0},
	} {
		if got := mulDivSat(tc.a, tc.b, tc.c); got != tc.want {
			t.Errorf("mulDivSat(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.c, got, tc.want)
		}
	}
}

func TestLevelFollowsLineRate(t *testing.T) {
	// A rate-dependent threshold without a configured rate follows the
	// View's line rate; with one, or in bytes, it stays put.
	l := newLevel(Standard(100*eqUS, 1), 0, 1500)
	for _, c := range []int64{0, 10e9, 10e9, 1e9, 0, 40e9} {
		want := c * 100 * eqUS / 8e9
		if c == 0 {
			want = math.MaxInt64 // C unknown: the threshold is out of reach
		}
		if got := l.at(c); got != want {
			t.Errorf("at(%d) = %d, want %d", c, got, want)
		}
	}
	fixed := newLevel(Standard(100*eqUS, 1), 10e9, 1500)
	if got := fixed.at(1e9); got != 125000 {
		t.Errorf("configured rate: at(1e9) = %d, want 125000 (resolved at 10G)", got)
	}
	b := newLevel(Packets(10), 0, 9000)
	if got := b.at(1e9); got != 90000 {
		t.Errorf("packets: at(1e9) = %d, want 90000", got)
	}
}
