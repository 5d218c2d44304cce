package dataplane_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

func TestFormatCPUs(t *testing.T) {
	for want, cpus := range map[string][]int{
		"none": nil, "1": {1}, "0-3,6": {0, 1, 2, 3, 6}, "0,2,4-5": {0, 2, 4, 5}, "7-9": {7, 8, 9},
	} {
		if got := dataplane.FormatCPUs(cpus); got != want {
			t.Errorf("FormatCPUs(%v) = %q, want %q", cpus, got, want)
		}
	}
}

// CheckCPUs accepts the CPUs of the process's affinity mask and names the
// mask when one is outside it. (cmd's TestPreflightUnderTaskset runs it
// under taskset.)
func TestCheckCPUs(t *testing.T) {
	allowed, err := dataplane.AllowedCPUs()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("AllowedCPUs: %v, %v", allowed, err)
	}
	if err := dataplane.CheckCPUs(allowed); err != nil {
		t.Errorf("the allowed CPUs %v: %v", allowed, err)
	}
	if slices.Contains(allowed, dataplane.MaxCPU) {
		t.Skip("this machine runs on CPU 1023")
	}
	err = dataplane.CheckCPUs([]int{allowed[0], dataplane.MaxCPU})
	if err == nil || !strings.Contains(err.Error(), "cpus[1]: CPU 1023") || !strings.Contains(err.Error(), dataplane.FormatCPUs(allowed)) {
		t.Errorf("CPU 1023: %v; want the key and the allowed set", err)
	}
}

// A worker that cannot be pinned stops the switch: Run returns its error
// at once. Before issue 12 the worker returned quietly and Run waited for
// its context, with that worker's ports never served.
func TestRunStopsWhenAWorkerCannotBePinned(t *testing.T) {
	allowed, _ := dataplane.AllowedCPUs()
	if len(allowed) == 0 || slices.Contains(allowed, dataplane.MaxCPU) {
		t.Skip("needs a CPU this process may not run on")
	}
	cfg := dataplanetest.Config(2, 1, 0, 1<<20)
	cfg.Workers = 2
	cfg.CPUs = []int{allowed[0], dataplane.MaxCPU}
	for i := range cfg.Ports {
		cfg.Ports[i].Worker = i
	}
	r := dataplanetest.New(t, cfg, memport.Link{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Switch.Run(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "pin worker 1 to CPU 1023") || !strings.Contains(err.Error(), "may run on "+dataplane.FormatCPUs(allowed)) {
			t.Errorf("Run: %v; want the worker's pinning error with the allowed CPUs", err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		t.Fatal("Run still waiting 10 s after a worker failed to pin")
	}
}

// TestPinThread pins a locked thread to the last CPU the process may use,
// which sched_getaffinity then reports alone, and fails on a CPU it may
// not use, naming the allowed set.
func TestPinThread(t *testing.T) {
	allowed, err := dataplane.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread exits with the goroutine
		if err := dataplane.PinThread(allowed[len(allowed)-1]); err != nil {
			errc <- err
			return
		}
		got, err := dataplane.AllowedCPUs()
		if err == nil && !slices.Equal(got, allowed[len(allowed)-1:]) {
			err = fmt.Errorf("pinned thread may run on %v, want %v", got, allowed[len(allowed)-1:])
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Error(err)
	}
	go func() {
		runtime.LockOSThread()
		errc <- dataplane.PinThread(dataplane.MaxCPU)
	}()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "may run on "+dataplane.FormatCPUs(allowed)) {
		t.Errorf("pin to CPU %d: %v, want an error naming %s", dataplane.MaxCPU, err, dataplane.FormatCPUs(allowed))
	}
}
