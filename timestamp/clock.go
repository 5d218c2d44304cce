// Package timestamp holds ecnswitch's clocks and what is computed from
// packets' stamps: the monotonic clock the switch runs on, a virtual clock
// that makes scheduler and marker tests exact, and DX's one-way-delay path
// (004 §III, §V): the four stamps t1..t4, the queueing-delay estimator that
// tracks OWD_base through clock drift (Delay), burst calibration
// (Calibrate) and the 14-byte TCP option that carries the stamps (Option).
//
// Time is an int64 of nanoseconds everywhere on the hot path; a Clock has one
// method.
package timestamp

import (
	"sync/atomic"
	"time"
)

// Clock reads the current time in monotonic nanoseconds.
type Clock interface {
	Now() int64
}

// Monotonic is the system's monotonic clock, in nanoseconds since the
// Monotonic value was made. The zero value is not usable; call NewMonotonic.
type Monotonic struct {
	base   time.Time
	origin int64
}

// NewMonotonic returns a monotonic clock that starts near zero.
func NewMonotonic() *Monotonic {
	m := &Monotonic{base: time.Now()}
	m.origin = measureOrigin(m)
	return m
}

// Origin returns CLOCK_MONOTONIC at the clock's zero, in ns (0 outside
// Linux): a stamp t in CLOCK_MONOTONIC is t − Origin() on this clock.
// Measured once, it is exact to about half a clock_gettime call.
func (m *Monotonic) Origin() int64 { return m.origin }

// Now returns the nanoseconds elapsed since the clock was made.
func (m *Monotonic) Now() int64 { return int64(time.Since(m.base)) }

// Virtual is a clock that moves only when told to. It is safe for concurrent
// use: one goroutine may Advance while others read Now.
type Virtual struct {
	ns atomic.Int64
}

// NewVirtual returns a virtual clock reading start.
func NewVirtual(start int64) *Virtual {
	v := &Virtual{}
	v.ns.Store(start)
	return v
}

// Now returns the virtual time.
func (v *Virtual) Now() int64 { return v.ns.Load() }

// Advance moves the clock forward by d and returns the new time.
func (v *Virtual) Advance(d time.Duration) int64 { return v.ns.Add(int64(d)) }

// Set moves the clock to t. Moving it backwards is allowed but breaks the
// monotonic promise; tests that do so own the consequences.
func (v *Virtual) Set(t int64) { v.ns.Store(t) }

// Name names a clock for reports (capture files, /stats, /queues):
// "monotonic", "virtual", or "other".
func Name(c Clock) string {
	switch c.(type) {
	case *Monotonic:
		return "monotonic"
	case *Virtual:
		return "virtual"
	}
	return "other"
}
