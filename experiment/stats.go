package experiment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// number is what the statistics take: counts, nanoseconds (time.Duration
// among them) and rates.
type number interface{ ~int64 | ~float64 }

// mean returns the mean of xs, 0 when it is empty.
func mean[T number](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

// stddev returns the sample standard deviation of xs (over n − 1), 0 for
// fewer than two values.
func stddev[T number](xs []T) float64 {
	m := mean(xs)
	var v float64
	for _, x := range xs {
		v += (float64(x) - m) * (float64(x) - m)
	}
	return math.Sqrt(v / float64(max(len(xs)-1, 1)))
}

// quantile returns the q-quantile of xs by nearest rank, q in [0, 1]: the
// smallest value no fewer than a fraction q of xs are at most; q = 0 gives
// the least. 0 when xs is empty.
func quantile[T number](xs []T, q float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// median returns the median of xs: the middle value, or the mean of the
// two middle ones; 0 when xs is empty.
func median[T number](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (float64(s[n/2-1]) + float64(s[n/2])) / 2
	}
	return float64(s[len(s)/2])
}

// spread returns the distance from the 1st to the 99th percentile of xs:
// σ follows the rare late sample (a descheduled thread), this does not.
func spread[T number](xs []T) T { return quantile(xs, 0.99) - quantile(xs, 0.01) }

// meanDuration returns the mean of ds in whole nanoseconds, 0 when it is
// empty.
func meanDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// meanP99 returns the mean and the 99th percentile (nearest rank) of ds,
// zeros if it is empty: what the reports print of RTTs and completion
// times.
func meanP99(ds []time.Duration) (mean, p99 time.Duration) {
	return meanDuration(ds), quantile(ds, 0.99)
}

// Runs are the values one measurement took over repeated runs of it, in
// the order they ran: a verdict rests on their median, and the report
// prints their spread beside it.
type Runs []float64

// over returns f of every run as Runs.
func over[T any](runs []T, f func(T) float64) Runs {
	rs := make(Runs, len(runs))
	for i, r := range runs {
		rs[i] = f(r)
	}
	return rs
}

// Median returns the runs' median, NaN when there are none: a rule fails
// on it.
func (r Runs) Median() float64 {
	if len(r) == 0 {
		return math.NaN()
	}
	return median(r)
}

// Spread returns the lowest and the highest run, NaN when there are none.
func (r Runs) Spread() (lo, hi float64) {
	if len(r) == 0 {
		return math.NaN(), math.NaN()
	}
	return slices.Min(r), slices.Max(r)
}

// Format formats the median with f and, for more than one run, the spread
// and the count: "1.32 (1.20–1.41 over 3 runs)", or "1.32 (each of 3
// runs)" when they all format alike.
func (r Runs) Format(f func(float64) string) string {
	if len(r) < 2 {
		return f(r.Median())
	}
	lo, hi := r.Spread()
	if f(lo) == f(hi) {
		return fmt.Sprintf("%s (each of %d runs)", f(r.Median()), len(r))
	}
	return fmt.Sprintf("%s (%s–%s over %d runs)", f(r.Median()), f(lo), f(hi), len(r))
}

// repeat runs measure n times in turn and returns what each run returned.
// It stops at the first error, or when ctx ends, and returns the runs
// finished so far with it.
func repeat[T any](ctx context.Context, n int, measure func(ctx context.Context, run int) (T, error)) ([]T, error) {
	var out []T
	for i := range n {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		x, err := measure(ctx, i)
		if err != nil {
			return out, fmt.Errorf("run %d of %d: %w", i+1, n, err)
		}
		out = append(out, x)
	}
	return out, nil
}
