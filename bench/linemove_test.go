package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// twoCPUs returns two CPUs this process may run on, or skips.
func twoCPUs(t *testing.T) (int, int) {
	t.Helper()
	cpus, err := dataplane.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	return cpus[0], cpus[1]
}

func TestLineMove(t *testing.T) {
	a, b := twoCPUs(t)
	d, err := LineMove(context.Background(), a, b, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	// A move takes at least a few ns and, even across sockets on a busy
	// host, far less than the 10 ms that a broken handshake (one side
	// waiting for a scheduler tick per round) would show.
	if d <= 0 || d > time.Millisecond {
		t.Errorf("LineMove(%d, %d) = %v, want within (0, 1ms]", a, b, d)
	}
}

func TestLineMoveErrors(t *testing.T) {
	a, b := twoCPUs(t)
	ctx := context.Background()
	for _, c := range []struct {
		a, b, rounds int
		want         string
	}{
		{a, b, 0, "rounds = 0"},
		{a, a, 10, "must differ"},
		{a, 4095, 10, "CPU 4095 is not one this process may run on"},
		{-1, b, 10, "CPU -1"},
	} {
		if _, err := LineMove(ctx, c.a, c.b, c.rounds); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LineMove(%d, %d, %d) = %v, want an error with %q", c.a, c.b, c.rounds, err, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := LineMove(cancelled, a, b, 1_000_000); !errors.Is(err, context.Canceled) {
		t.Errorf("LineMove with a cancelled context = %v, want context.Canceled", err)
	}
}
