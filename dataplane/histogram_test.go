package dataplane

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<20; v++ {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("index of %d is %d, below the previous %d", v, i, prev)
		}
		if lo := histLower(i); lo > v || (i+1 < len(histogram{}.buckets) && histLower(i+1) <= v) {
			t.Fatalf("%d falls in bucket %d = [%d, %d)", v, i, lo, histLower(i+1))
		}
		prev = i
	}
	if i := histIndex(1<<62 + 12345); i >= len(histogram{}.buckets) {
		t.Fatalf("2^62 indexes bucket %d beyond the array", i)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []int64
	var sum int64
	for i := 0; i < 100_000; i++ {
		v := rng.Int64N(1_000_000)
		vals = append(vals, v)
		sum += v
		h.add(v)
	}
	slices.Sort(vals)
	s := h.summary()
	if s.Count != 100_000 || s.Mean != sum/100_000 || s.Max != vals[len(vals)-1] {
		t.Fatalf("summary %+v: count, mean or max wrong", s)
	}
	for _, q := range []struct {
		got  int64
		want int64
	}{{s.P50, vals[49_999]}, {s.P99, vals[98_999]}} {
		// The reported value is its bucket's lower bound: within 25% below.
		if q.got > q.want || float64(q.got) < 0.75*float64(q.want) {
			t.Errorf("quantile %d, true value %d: outside the bucket's 25%% bound", q.got, q.want)
		}
	}
}

func TestHistogramReset(t *testing.T) {
	var h histogram
	h.add(1_000_000)
	h.reset()
	h.add(10)
	if s := h.summary(); s.Count != 1 || s.Max != 10 || s.P99 != 10 || s.Mean != 10 {
		t.Fatalf("after reset and one value of 10: %+v", s)
	}
}
