// Package affinity reads and sets which CPUs a thread may run on
// (sched_getaffinity, sched_setaffinity): the one place a thread of
// ecnswitch is pinned, whether a switch worker, a load generator's sender
// or a benchmark's.
package affinity

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxCPU is the highest CPU a mask holds (CPU_SETSIZE − 1).
const MaxCPU = 1023

// Allowed returns the CPUs the calling thread may run on, in order: its
// affinity mask, which taskset, a cgroup's cpuset or a container narrows
// from the machine's CPUs. A process's threads share the mask they
// started with.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range MaxCPU + 1 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Pin binds the calling OS thread to cpu. The caller locks its goroutine
// to the thread first (runtime.LockOSThread). The error names the CPUs
// this process may run on; the caller says what it pinned to which CPU.
func Pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		allowed, _ := Allowed()
		return fmt.Errorf("sched_setaffinity: %w (this process may run on %s)", err, Format(allowed))
	}
	return nil
}

// Format writes a set of CPUs as taskset's list does: 0-3,6.
func Format(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
