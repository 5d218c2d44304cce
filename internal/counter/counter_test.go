package counter_test

import (
	"sync"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/counter"
)

// TestOneWriterManyReaders adds from one goroutine while others read: every
// read is a value the writer wrote (never torn, never decreasing for a
// Uint64 that only grows), and the final count is exact.
func TestOneWriterManyReaders(t *testing.T) {
	const n = 200_000
	var c counter.Uint64
	var level counter.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan string, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for {
				select {
				case <-done:
					return
				default:
				}
				v := c.Load()
				if v < last || v > 3*n || v%3 != 0 {
					errs <- "read a count the writer never wrote"
					return
				}
				last = v
				if l := level.Load(); l != 0 && l != 1 {
					errs <- "read a level the writer never wrote"
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		c.Add(3)
		level.Add(1)
		if got := level.Add(-1); got != 0 {
			t.Fatalf("Add returned %d, want 0", got)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := c.Load(); got != 3*n {
		t.Fatalf("count %d after %d adds of 3, want %d", got, n, 3*n)
	}
}
