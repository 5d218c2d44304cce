package timestamp

import (
	"sync"
	"testing"
	"time"
)

func TestVirtual(t *testing.T) {
	v := NewVirtual(100)
	if v.Now() != 100 {
		t.Fatalf("Now = %d, want 100", v.Now())
	}
	if got := v.Advance(time.Microsecond); got != 1100 || v.Now() != 1100 {
		t.Fatalf("Advance(1µs) = %d, Now = %d; want 1100", got, v.Now())
	}
	v.Set(5)
	if v.Now() != 5 {
		t.Fatalf("after Set(5), Now = %d", v.Now())
	}
}

// TestVirtualConcurrent advances from several goroutines while others read;
// run with -race.
func TestVirtualConcurrent(t *testing.T) {
	v := NewVirtual(0)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				v.Advance(1)
			}
		}()
		go func() {
			defer wg.Done()
			for j, last := 0, int64(0); j < 1000; j++ {
				n := v.Now()
				if n < last {
					t.Errorf("virtual time went back from %d to %d", last, n)
					return
				}
				last = n
			}
		}()
	}
	wg.Wait()
	if v.Now() != 4000 {
		t.Fatalf("Now = %d after 4000 advances of 1 ns", v.Now())
	}
}

func TestMonotonic(t *testing.T) {
	m := NewMonotonic()
	a := m.Now()
	time.Sleep(2 * time.Millisecond)
	b := m.Now()
	if a < 0 || b-a < int64(2*time.Millisecond) {
		t.Fatalf("Now went from %d to %d across a 2 ms sleep", a, b)
	}
}

var _ Clock = (*Virtual)(nil)
var _ Clock = (*Monotonic)(nil)
