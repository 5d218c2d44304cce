// Package spsc holds a bounded lock-free single-producer/single-consumer
// ring, the one structure that crosses goroutines on ecnswitch's hot path.
package spsc

import (
	"fmt"
	"sync/atomic"
)

// Ring is a bounded FIFO for exactly one producer goroutine and one consumer
// goroutine. The producer's index is release-stored after the slot is
// written; the consumer acquire-loads it before reading (Go's atomics are
// sequentially consistent, which is at least that). Indices are free-running
// and wrap by masking.
type Ring[T any] struct {
	_    [64]byte // keep head and tail on their own cache lines
	head atomic.Uint64
	_    [56]byte
	tail atomic.Uint64
	_    [56]byte
	mask uint64
	buf  []T
}

// New returns a ring holding up to size elements; size must be a power of two.
func New[T any](size int) (*Ring[T], error) {
	if size <= 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("ring size %d is not a power of two ≥ 1", size)
	}
	return &Ring[T]{mask: uint64(size - 1), buf: make([]T, size)}, nil
}

// Cap returns the ring's capacity.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Len returns the number of elements in the ring. It is exact only when
// called by the producer or the consumer while the other is quiet.
func (r *Ring[T]) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Push appends v and reports whether there was room. Producer only.
func (r *Ring[T]) Push(v T) bool {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1)
	return true
}

// Pop removes the oldest element. Consumer only.
func (r *Ring[T]) Pop() (v T, ok bool) {
	h := r.head.Load()
	if h == r.tail.Load() {
		return v, false
	}
	i := h & r.mask
	v = r.buf[i]
	var zero T
	r.buf[i] = zero
	r.head.Store(h + 1)
	return v, true
}

// Peek returns the oldest element without removing it. Consumer only.
func (r *Ring[T]) Peek() (v T, ok bool) {
	h := r.head.Load()
	if h == r.tail.Load() {
		return v, false
	}
	return r.buf[h&r.mask], true
}
