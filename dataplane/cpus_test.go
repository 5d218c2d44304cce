package dataplane_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

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
