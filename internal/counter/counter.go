// Package counter holds counters with one writer and any number of readers.
//
// The hot path counts every packet several times over: per port, per queue,
// per sojourn bucket, in the buffer. Each of those counters has exactly one
// writer, the worker that owns the port, and readers elsewhere (telemetry,
// the API). An atomic add is a locked instruction on amd64, which drains
// the store buffer; about a dozen per packet cost the in-memory pipeline a
// third of its time (docs/results/pipeline.md). A counter here
// adds with a plain load and store instead: correct because no other
// goroutine writes it, and readers still see whole values, because an
// aligned word is stored in one instruction (the Go memory model: a racing
// read of a word-sized location observes some write to it, never a mix).
//
// Under the race detector, and on platforms whose 64-bit stores are not
// single instructions, Add is an atomic add (so 32-bit platforms never see
// torn values) that also writes a plain shadow field, so that the race
// detector reports a second writer.
package counter

import "sync/atomic"

// Load returns the count. Any goroutine may call it.
func (c *Uint64) Load() uint64 { return atomic.LoadUint64(&c.v) }

// Load returns the count. Any goroutine may call it.
func (c *Int64) Load() int64 { return atomic.LoadInt64(&c.v) }
