package afxdp

import (
	"testing"
	"time"
)

// A stalled socket is kicked again once kickBatch frames have completed,
// or all it had in flight if fewer, or after stallRetry with none; the
// ring indices wrap.
func TestKickGate(t *testing.T) {
	const base = ^uint32(0) - 10 // indices about to wrap
	for _, c := range []struct {
		name     string
		inFlight uint32
		done     uint32
		over     bool
	}{
		{"none completed", 100, 0, false},
		{"fewer than a batch", 100, kickBatch - 1, false},
		{"a batch", 100, kickBatch, true},
		{"all of a few in flight", 5, 5, true},
		{"some of a few in flight", 5, 4, false},
	} {
		var g kickGate
		g.begin(base+c.inFlight, base)
		if got := g.over(base + c.done); got != c.over {
			t.Errorf("%s: over = %v, want %v", c.name, got, c.over)
		}
	}

	var g kickGate
	g.begin(base, base) // nothing in flight: the device pushed back
	if g.over(base) {
		t.Fatal("over at once with nothing in flight")
	}
	time.Sleep(stallRetry)
	if !g.over(base) {
		t.Fatalf("not over after %v", stallRetry)
	}
}
