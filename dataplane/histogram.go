package dataplane

import (
	"math/bits"
	"sync/atomic"
)

// histogram counts durations in log-linear buckets: each power of two is
// split into histSub buckets, so a reported quantile is within 1/histSub
// (25%) of the true value, from 1 ns up to 2^63 ns. One writer (the port's
// worker) adds with atomics; readers take quantiles at any time.
type histogram struct {
	buckets [64 * histSub]atomic.Uint64
	count   atomic.Uint64
	sum     atomic.Uint64 // ns
	max     atomic.Int64
}

const (
	histSubBits = 2
	histSub     = 1 << histSubBits
)

func histIndex(v int64) int {
	if v < histSub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 1 // 2^e ≤ v < 2^(e+1)
	sub := int(uint64(v)>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// histLower returns the smallest value of bucket i.
func histLower(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := i % histSub
	return int64(histSub+sub) << (e - histSubBits)
}

func (h *histogram) add(v int64) {
	h.buckets[histIndex(v)].Add(1)
	h.count.Add(1)
	h.sum.Add(uint64(max(v, 0)))
	if v > h.max.Load() {
		h.max.Store(v) // one writer: no lost update
	}
}

// Summary is a histogram's digest, in ns.
type Summary struct {
	Count uint64 `json:"count"`
	Mean  int64  `json:"mean_ns"`
	P50   int64  `json:"p50_ns"`
	P99   int64  `json:"p99_ns"`
	Max   int64  `json:"max_ns"`
}

// quantile returns the lower bound of the bucket holding quantile q of the
// values counted.
func (h *histogram) quantile(q float64) int64 {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return histLower(i)
		}
	}
	return h.max.Load()
}

func (h *histogram) summary() Summary {
	n := h.count.Load()
	if n == 0 {
		return Summary{}
	}
	return Summary{
		Count: n, Mean: int64(h.sum.Load() / n),
		P50: h.quantile(0.50), P99: h.quantile(0.99), Max: h.max.Load(),
	}
}

// reset zeroes the histogram. Racing with add it may lose or half-count
// the few values added meanwhile, which a measurement window can afford.
func (h *histogram) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.count.Store(0)
	h.sum.Store(0)
	h.max.Store(0)
}
