// Package cpustat reads how each CPU spent its time from /proc/stat, so
// that a measurement can say whether a CPU, not what it measured, was the
// limit: take a Snapshot before and after, and Between gives each CPU's
// busy fraction over the window, split by where the time went.
package cpustat

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Times are one CPU's cumulative times, in the kernel's USER_HZ ticks, as
// /proc/stat lists them (proc(5)). Guest time is already counted in User
// and Nice, so it is not kept.
type Times struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// total returns every tick of t.
func (t Times) total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.IOWait + t.IRQ + t.SoftIRQ + t.Steal
}

// CPU is one CPU's line of /proc/stat.
type CPU struct {
	ID int
	Times
}

// Snapshot is every CPU's times at one instant, by CPU number, in the
// order /proc/stat lists them (the aggregate "cpu" line is left out).
type Snapshot []CPU

// Read reads /proc/stat.
func Read() (Snapshot, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("cpustat: %w", err)
	}
	return Parse(bytes.NewReader(b))
}

// Parse reads the per-CPU lines ("cpuN user nice system idle iowait irq
// softirq steal …") of a /proc/stat; kernels older than 2.6.11 list fewer
// fields, and the missing ones read as 0.
func Parse(r io.Reader) (Snapshot, error) {
	var s Snapshot
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil || id < 0 {
			return nil, fmt.Errorf("cpustat: %q: not a CPU number", f[0])
		}
		var v [8]uint64
		for i := range min(len(f)-1, len(v)) {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("cpustat: %s field %d: %w", f[0], i+1, err)
			}
		}
		s = append(s, CPU{ID: id, Times: Times{User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cpustat: %w", err)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("cpustat: no per-CPU lines")
	}
	return s, nil
}

// Split is where one CPU's time went over a window, each a fraction of
// the window's ticks: Busy is everything but idle and I/O wait, and
// User (with nice), System, IRQ, SoftIRQ and Steal add up to it.
type Split struct {
	CPU                                     int
	Busy, User, System, IRQ, SoftIRQ, Steal float64
}

// String formats the split as a report prints it: "CPU 1 93% (sys 37%,
// softirq 37%, user 19%)", the parts that took at least 1% of the window.
func (s Split) String() string {
	var parts []string
	for _, p := range []struct {
		name string
		f    float64
	}{{"sys", s.System}, {"softirq", s.SoftIRQ}, {"user", s.User}, {"irq", s.IRQ}, {"steal", s.Steal}} {
		if p.f >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", p.name, 100*p.f))
		}
	}
	out := fmt.Sprintf("CPU %d %.0f%%", s.CPU, 100*s.Busy)
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	return out
}

// Between returns each CPU's split from a to b, for the CPUs both list; a
// CPU whose counters did not move (offline, or a window shorter than a
// tick) is left out.
func Between(a, b Snapshot) []Split {
	var out []Split
	for _, c1 := range b {
		for _, c0 := range a {
			if c0.ID != c1.ID {
				continue
			}
			d := Times{
				User: sub(c1.User, c0.User) + sub(c1.Nice, c0.Nice), System: sub(c1.System, c0.System),
				Idle: sub(c1.Idle, c0.Idle), IOWait: sub(c1.IOWait, c0.IOWait), IRQ: sub(c1.IRQ, c0.IRQ),
				SoftIRQ: sub(c1.SoftIRQ, c0.SoftIRQ), Steal: sub(c1.Steal, c0.Steal),
			}
			t := float64(d.total())
			if t == 0 {
				break
			}
			out = append(out, Split{
				CPU:  c1.ID,
				Busy: 1 - float64(d.Idle+d.IOWait)/t,
				User: float64(d.User) / t, System: float64(d.System) / t, IRQ: float64(d.IRQ) / t,
				SoftIRQ: float64(d.SoftIRQ) / t, Steal: float64(d.Steal) / t,
			})
			break
		}
	}
	return out
}

// sub returns b − a, 0 if a counter went backwards (it never should; a
// CPU taken offline and back may restart its counters).
func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}
