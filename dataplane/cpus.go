package dataplane

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/affinity"
)

// AllowedCPUs returns the CPUs the calling thread may run on, in order:
// its affinity mask (sched_getaffinity), which taskset, a cgroup's cpuset
// or a container narrows from the machine's CPUs (internal/affinity).
func AllowedCPUs() ([]int, error) { return affinity.Allowed() }

// CheckCPUs checks Config.CPUs against the CPUs the calling process may
// run on (AllowedCPUs), not the machine's count: under `taskset -c 1`,
// cpus: [1] is fine and cpus: [0] is not. The error names the key, the CPU
// and the allowed set.
func CheckCPUs(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		return fmt.Errorf("cpus: %w", err)
	}
	ok := make(map[int]bool, len(allowed))
	for _, c := range allowed {
		ok[c] = true
	}
	for i, c := range cpus {
		if !ok[c] {
			return fmt.Errorf("cpus[%d]: CPU %d is not one this process may run on (%s: its affinity mask, as taskset or a cgroup cpuset set it)",
				i, c, FormatCPUs(allowed))
		}
	}
	return nil
}

// PinThread binds the calling OS thread to cpu (sched_setaffinity). The
// caller locks its goroutine to the thread first (runtime.LockOSThread).
// The error names the CPUs this process may run on; the caller says what
// it pinned to which CPU. It is internal/affinity's Pin, which the load
// generator shares.
func PinThread(cpu int) error { return affinity.Pin(cpu) }

// FormatCPUs writes a set of CPUs as taskset's list does: 0-3,6.
func FormatCPUs(cpus []int) string { return affinity.Format(cpus) }

// Placement splits the CPUs this process may run on between the switch's
// workers and everything else on the machine — on a testbed, the hosts'
// processes and their receive processing. A worker that shares its CPU
// with the TCP stacks it forwards for is preempted by them, and they by it.
type Placement struct {
	Workers []int // one CPU per worker, for Config.CPUs; empty: no pinning
	Others  []int // the rest, for everything that is not a worker
}

// Place keeps workers CPUs for the workers, the highest-numbered ones this
// process may run on (the lower ones take most interrupts and timers), and
// leaves the rest to everything else. With no more CPUs than workers it
// places nothing: every thread may run anywhere.
func Place(workers int) (Placement, error) {
	allowed, err := AllowedCPUs()
	if err != nil {
		return Placement{}, err
	}
	return place(allowed, workers), nil
}

func place(allowed []int, workers int) Placement {
	if workers < 1 || len(allowed) <= workers {
		return Placement{Others: allowed}
	}
	k := len(allowed) - workers
	return Placement{Workers: append([]int(nil), allowed[k:]...), Others: append([]int(nil), allowed[:k]...)}
}

// String says where the workers and the rest run, e.g. "workers on CPU 1,
// everything else on CPU 0".
func (p Placement) String() string {
	if len(p.Workers) == 0 {
		return "no CPU placement (no more CPUs than workers): every thread may run on " + FormatCPUs(p.Others)
	}
	return "workers on CPU " + FormatCPUs(p.Workers) + ", everything else on CPU " + FormatCPUs(p.Others)
}

// setFIFO puts the calling thread in the SCHED_FIFO class at priority.
func setFIFO(priority int) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(priority)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		if err == unix.EPERM {
			return fmt.Errorf("%w: needs root or CAP_SYS_NICE", err)
		}
		return err
	}
	return nil
}
