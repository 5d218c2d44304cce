package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// LineMove measures how long one cache line takes to move from CPU a to
// CPU b and back, as the mean one-way time: two threads, pinned to a and
// b, pass a counter through one line rounds times each way.
//
// On a VM the figure says where the host has put the two vCPUs, and it
// can change while the VM runs: on this project's 2-vCPU test machines it
// moved between about 40 ns and about 190 ns from one minute to the next,
// and with it every AF_XDP device's rate in the peer kit's layout B (see
// docs/results/peers.md). Taken before and after a benchmark it tells whether two
// runs are comparable.
//
// The threads spin, so the result includes any time a or b spends on other
// work: measure on an otherwise idle pair of CPUs. ctx is checked every
// 2048 rounds; a cancelled measurement returns ctx's error.
func LineMove(ctx context.Context, a, b, rounds int) (time.Duration, error) {
	if rounds <= 0 {
		return 0, fmt.Errorf("bench: line move: rounds = %d: must be positive", rounds)
	}
	if a == b {
		return 0, fmt.Errorf("bench: line move: CPUs %d and %d: must differ", a, b)
	}
	if err := dataplane.CheckCPUs([]int{a, b}); err != nil {
		return 0, fmt.Errorf("bench: line move: %w", err)
	}
	var line struct {
		_ [64]byte
		v atomic.Int64
		_ [64]byte
	}
	var stop atomic.Bool
	ready := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the pinned thread exits with the goroutine
		if err := dataplane.PinThread(b); err != nil {
			ready <- fmt.Errorf("bench: line move: pinning a thread to CPU %d: %w", b, err)
			return
		}
		ready <- nil
		for i := int64(1); i < 2*int64(rounds); i += 2 {
			for line.v.Load() != i {
				if stop.Load() {
					return
				}
			}
			line.v.Store(i + 1)
		}
	}()
	if err := <-ready; err != nil {
		<-done
		return 0, err
	}
	errc := make(chan error, 1)
	var took time.Duration
	go func() {
		runtime.LockOSThread() // as above
		if err := dataplane.PinThread(a); err != nil {
			errc <- fmt.Errorf("bench: line move: pinning a thread to CPU %d: %w", a, err)
			return
		}
		start := time.Now()
		for i := int64(0); i < 2*int64(rounds); i += 2 {
			if i&0xfff == 0 && ctx.Err() != nil {
				errc <- ctx.Err()
				return
			}
			line.v.Store(i + 1)
			for line.v.Load() != i+2 {
			}
		}
		took = time.Since(start)
		errc <- nil
	}()
	err := <-errc
	stop.Store(true)
	<-done
	if err != nil {
		return 0, err
	}
	return took / time.Duration(2*rounds), nil
}
