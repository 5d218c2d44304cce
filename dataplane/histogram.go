package dataplane

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/internal/counter"
)

// histogram counts durations in log-linear buckets: each power of two is
// split into histSub buckets, so a reported quantile is within 1/histSub
// (25%) of the true value, from 1 ns up to 2^63 ns. One writer (the port's
// worker) adds, without locked instructions; readers take quantiles at any
// time. A reset never writes the writer's counts: it records them as a
// baseline that readers subtract, so the one-writer rule holds.
type histogram struct {
	buckets [histBuckets]counter.Uint64
	count   counter.Uint64
	sum     counter.Uint64 // ns
	max     atomic.Int64   // stored only on a new maximum; reset stores 0

	mu   sync.Mutex // readers': guards base
	base struct {
		buckets    [histBuckets]uint64
		count, sum uint64
	}
}

const (
	histSubBits = 2
	histSub     = 1 << histSubBits
	histBuckets = 64 * histSub
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
// values counted since the last reset. The caller holds h.mu.
func (h *histogram) quantile(q float64, n uint64) int64 {
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load() - h.base.buckets[i]
		if seen >= rank {
			return histLower(i)
		}
	}
	return h.max.Load()
}

// summary digests the values counted since the last reset. The count is
// read first, so every value it includes is in the buckets read after it.
func (h *histogram) summary() Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.count.Load() - h.base.count
	if n == 0 {
		return Summary{}
	}
	return Summary{
		Count: n, Mean: int64((h.sum.Load() - h.base.sum) / n),
		P50: h.quantile(0.50, n), P99: h.quantile(0.99, n), Max: h.max.Load(),
	}
}

// reset starts a new window: later summaries count only values added
// after it. Racing with add, a value added meanwhile may be counted in
// some of the baseline's figures and not others, which a measurement
// window can afford.
func (h *histogram) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base.count = h.count.Load()
	h.base.sum = h.sum.Load()
	for i := range h.buckets {
		h.base.buckets[i] = h.buckets[i].Load()
	}
	h.max.Store(0)
}
