package afxdp

import (
	"testing"
	"time"
)

// A stalled socket is kicked again once kickBatch frames have completed,
// or all it had in flight if fewer, or after stallRetry with none; the
// ring indices wrap. The gate's clock is the caller's, so the table's
// cases hold however late the test's goroutine runs.
func TestKickGate(t *testing.T) {
	const base = ^uint32(0) - 10 // indices about to wrap
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name     string
		inFlight uint32
		done     uint32
		after    time.Duration
		over     bool
	}{
		{"none completed", 100, 0, 0, false},
		{"fewer than a batch", 100, kickBatch - 1, 0, false},
		{"fewer than a batch, just before the retry", 100, kickBatch - 1, stallRetry - 1, false},
		{"a batch", 100, kickBatch, 0, true},
		{"all of a few in flight", 5, 5, 0, true},
		{"some of a few in flight", 5, 4, 0, false},
		{"some of a few in flight, at the retry", 5, 4, stallRetry, true},
		{"none completed, at the retry", 100, 0, stallRetry, true},
		{"nothing in flight", 0, 0, 0, false},
		{"nothing in flight, just before the retry", 0, 0, stallRetry - 1, false},
		{"nothing in flight, at the retry", 0, 0, stallRetry, true},
	} {
		var g kickGate
		g.begin(base+c.inFlight, base, t0)
		if got := g.over(base+c.done, t0.Add(c.after)); got != c.over {
			t.Errorf("%s: over = %v, want %v", c.name, got, c.over)
		}
	}
}
