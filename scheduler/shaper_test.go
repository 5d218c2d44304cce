package scheduler

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestShaperRate: a backlogged port sending whenever the shaper allows
// delivers the configured rate over 1 s of virtual time, within 0.5% and
// within the token-bucket bound: Rate·T − one frame ≤ bits sent ≤
// Rate·T + Bucket + one frame, in exact integer arithmetic.
func TestShaperRate(t *testing.T) {
	type tc struct {
		rate     int64
		frame    int
		overhead Overhead
	}
	var cases []tc
	for _, rate := range []int64{1e9, 995e6} { // 995e6: the MQ-ECN prototype's 99.5% of 1 GbE (001 §4.2)
		for _, frame := range []int{64, 1500} {
			for _, o := range []Overhead{OverheadNone, OverheadEthernet} {
				cases = append(cases, tc{rate, frame, o})
			}
		}
	}
	cases = append(cases, tc{10e9, 1500, OverheadEthernet}, tc{25e9 + 7, 1514, OverheadNone})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%g/%dB/%v", float64(c.rate), c.frame, c.overhead), func(t *testing.T) {
			const bucket, second = 2500, int64(1e9)
			sh := mustShaper(t, ShaperConfig{Rate: c.rate, Bucket: bucket, Overhead: c.overhead})
			wire := int64(c.overhead.Wire(c.frame))
			var now, sent int64 // sent in wire bytes
			for {
				now = sh.Next(now)
				if now >= second {
					break
				}
				if !sh.Ready(now) {
					t.Fatalf("t=%d: Next returned a time at which Ready is false", now)
				}
				sh.Take(now, c.frame)
				sent += wire
			}
			got := float64(sent * 8) // bits in 1 s
			if math.Abs(got/float64(c.rate)-1) > 0.005 {
				t.Errorf("delivered %.6g bit/s, want %g ± 0.5%%", got, float64(c.rate))
			}
			// Exact bound, in units of 10⁻⁹ bit.
			sentU := sent * 8e9
			allowed := c.rate * second
			if sentU > allowed+bucket*8e9+wire*8e9 || sentU < allowed-wire*8e9 {
				t.Errorf("sent %d B in 1 s; token bucket allows [%d, %d]", sent,
					(allowed-wire*8e9)/8e9, (allowed+bucket*8e9+wire*8e9)/8e9)
			}
		})
	}
}

// TestShaperBurstAndPacing: after an idle period a port may send its bucket
// plus one frame at once, and then exactly one frame per frame time.
func TestShaperBurstAndPacing(t *testing.T) {
	for _, tc := range []struct {
		bucket int64
		burst  int // 1500-byte frames that may leave at once
	}{
		{0, 1}, {1499, 1}, {1500, 2}, {2500, 2}, {3000, 3}, {15000, 11},
	} {
		sh := mustShaper(t, ShaperConfig{Rate: 1e9, Bucket: tc.bucket})
		now := int64(5e9) // long idle: the bucket is full, not more
		n := 0
		for sh.Ready(now) {
			sh.Take(now, 1500)
			n++
		}
		if n != tc.burst {
			t.Errorf("bucket %d: burst of %d frames, want %d", tc.bucket, n, tc.burst)
		}
		// Then one frame every 12 µs (1500 B at 1 Gbit/s); Next is exact.
		prev := int64(-1)
		for range 5 {
			next := sh.Next(now)
			if sh.Ready(next - 1) {
				t.Fatalf("bucket %d: ready at %d, before Next %d", tc.bucket, next-1, next)
			}
			if !sh.Ready(next) {
				t.Fatalf("bucket %d: not ready at Next %d", tc.bucket, next)
			}
			sh.Take(next, 1500)
			if prev >= 0 && next-prev != 12000 {
				t.Fatalf("bucket %d: frames %d ns apart, want 12000", tc.bucket, next-prev)
			}
			prev, now = next, next
		}
	}
}

func TestShaperEdgeCases(t *testing.T) {
	// Unshaped: always ready.
	sh := mustShaper(t, ShaperConfig{})
	for range 10 {
		sh.Take(0, 9000)
	}
	if !sh.Ready(0) || sh.Next(7) != 7 || sh.Rate() != 0 {
		t.Fatal("unshaped shaper is not always ready")
	}

	// A stale now neither adds credit nor moves Next backwards.
	sh = mustShaper(t, ShaperConfig{Rate: 1e9})
	sh.Take(1000, 1500) // ready again at 13000
	if sh.Ready(500) || sh.Next(500) != 13000 {
		t.Fatalf("stale now: Ready(500)=%v Next(500)=%d, want false, 13000", sh.Ready(500), sh.Next(500))
	}

	// Hours of idle at the top rate and the largest bucket do not overflow.
	sh = mustShaper(t, ShaperConfig{Rate: MaxLineRate, Bucket: MaxBucket})
	if !sh.Ready(3600e9) {
		t.Fatal("not ready after an hour")
	}
	n := int64(0)
	for sh.Ready(3600e9) {
		sh.Take(3600e9, MaxMTU)
		n++
	}
	if want := int64(MaxBucket/MaxMTU) + 1; n != want {
		t.Fatalf("burst of %d frames, want %d", n, want)
	}

	// Deep debt from a batch is paid back in full, not forgotten.
	sh = mustShaper(t, ShaperConfig{Rate: 1e9})
	for range 64 {
		sh.Take(0, 1500)
	}
	if got := sh.Next(0); got != 64*12000 {
		t.Fatalf("after a 64-frame batch, Next = %d, want %d", got, 64*12000)
	}

	for _, tc := range []struct {
		cfg  ShaperConfig
		want string
	}{
		{ShaperConfig{Rate: -1}, "shaper.rate: -1 outside [1000, 1e+13]"},
		{ShaperConfig{Rate: 2e13}, "shaper.rate: 20000000000000 outside"},
		{ShaperConfig{Rate: 1e9, Bucket: -1}, "shaper.bucket: -1 outside [0, 268435456]"},
		{ShaperConfig{Rate: 1e9, Overhead: 3}, "shaper.overhead: overhead(3)"},
	} {
		_, err := NewShaper(tc.cfg, 0)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewShaper(%+v) error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func BenchmarkShaper(b *testing.B) {
	sh := mustShaper(b, ShaperConfig{Rate: 10e9, Bucket: 2500, Overhead: OverheadEthernet})
	b.ReportAllocs()
	var now int64
	for range b.N {
		now = sh.Next(now)
		if sh.Ready(now) {
			sh.Take(now, 1500)
		}
	}
}
