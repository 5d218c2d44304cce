package affinity

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	for want, cpus := range map[string][]int{
		"none": nil, "1": {1}, "0-3,6": {0, 1, 2, 3, 6}, "0,2,4-5": {0, 2, 4, 5}, "7-9": {7, 8, 9},
	} {
		if got := Format(cpus); got != want {
			t.Errorf("Format(%v) = %q, want %q", cpus, got, want)
		}
	}
}

// TestPin pins a locked thread to the last CPU the process may use, which
// sched_getaffinity then reports alone, and fails on a CPU it may not
// use, naming the allowed set.
func TestPin(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread exits with the goroutine
		if err := Pin(allowed[len(allowed)-1]); err != nil {
			errc <- err
			return
		}
		got, err := Allowed()
		if err == nil && !slices.Equal(got, allowed[len(allowed)-1:]) {
			err = fmt.Errorf("pinned thread may run on %v, want %v", got, allowed[len(allowed)-1:])
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Error(err)
	}
	if slices.Contains(allowed, MaxCPU) {
		t.Skip("this machine runs on CPU 1023")
	}
	go func() {
		runtime.LockOSThread()
		errc <- Pin(MaxCPU)
	}()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "may run on "+Format(allowed)) {
		t.Errorf("pin to CPU %d: %v, want an error naming %s", MaxCPU, err, Format(allowed))
	}
}
