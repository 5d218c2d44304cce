package experiment

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// TestStats: nearest-rank quantiles, the interpolated median, the sample
// standard deviation and the p1–p99 spread, worked by hand.
func TestStats(t *testing.T) {
	xs := []int64{5, 1, 4, 2, 3}
	if q := []int64{quantile(xs, 0), quantile(xs, 0.2), quantile(xs, 0.21), quantile(xs, 0.5), quantile(xs, 1)}; !slices.Equal(q, []int64{1, 1, 2, 3, 5}) {
		t.Errorf("quantiles 0, 0.2, 0.21, 0.5, 1 of %v: %v, want 1 1 2 3 5", xs, q)
	}
	if !slices.Equal(xs, []int64{5, 1, 4, 2, 3}) {
		t.Errorf("quantile sorted its input: %v", xs)
	}
	if m, s := mean(xs), stddev(xs); m != 3 || math.Abs(s-math.Sqrt(2.5)) > 1e-12 {
		t.Errorf("mean %g, σ %g; want 3, √2.5", m, s)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 4 values %g, want 2.5", m)
	}
	if quantile([]int64(nil), 0.5) != 0 || mean([]int64(nil)) != 0 || median([]float64(nil)) != 0 || stddev([]int64{7}) != 0 {
		t.Error("empty or single inputs: want zeros")
	}
	var ds []time.Duration
	for i := range 200 {
		ds = append(ds, time.Duration(i+1)*time.Microsecond)
	}
	if m, p := meanP99(ds); m != 100500*time.Nanosecond || p != 198*time.Microsecond {
		t.Errorf("meanP99 of 1…200 µs: %v, %v; want 100.5 µs, 198 µs", m, p)
	}
	if s := spread(ds); s != 196*time.Microsecond {
		t.Errorf("spread of 1…200 µs: %v, want 196 µs (p99 198 − p1 2)", s)
	}
}

// TestRuns: a measurement repeated gives its median and spread, and the
// report prints both with the count; no runs give NaN, which fails a rule.
func TestRuns(t *testing.T) {
	f := func(x float64) string { return num(x) }
	rs := Runs{1.41, 1.2, 1.32}
	if lo, hi := rs.Spread(); rs.Median() != 1.32 || lo != 1.2 || hi != 1.41 {
		t.Errorf("median %g, spread %g–%g", rs.Median(), lo, hi)
	}
	if got := rs.Format(f); got != "1.32 (1.2–1.41 over 3 runs)" {
		t.Errorf("Format = %q", got)
	}
	if got := (Runs{2}).Format(f); got != "2" {
		t.Errorf("one run: %q", got)
	}
	if got := (Runs{2, 2.0001, 2}).Format(f); got != "2 (each of 3 runs)" {
		t.Errorf("runs that format alike: %q", got)
	}
	if inRange("ratio", Runs{}.Median(), 0, 10).Holds() {
		t.Error("a rule holds on no runs")
	}

	type run struct{ ratio float64 }
	got, err := repeat(context.Background(), 3, func(_ context.Context, i int) (run, error) { return run{float64(i + 1)}, nil })
	if err != nil || len(got) != 3 || over(got, func(r run) float64 { return r.ratio }).Median() != 2 {
		t.Errorf("repeat: %v, %v", got, err)
	}
	boom := errors.New("boom")
	got, err = repeat(context.Background(), 3, func(_ context.Context, i int) (run, error) {
		if i == 1 {
			return run{}, boom
		}
		return run{1}, nil
	})
	if !errors.Is(err, boom) || len(got) != 1 || err.Error() != "run 2 of 3: boom" {
		t.Errorf("repeat stopping at run 2: %v, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := repeat(ctx, 3, func(context.Context, int) (run, error) { return run{}, nil }); len(got) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("repeat on a cancelled context: %v, %v", got, err)
	}
}
