package experiment

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine is how loaded the machine was over a run: its load averages
// and the share of the time some task waited for a CPU (PSI "some" of
// /proc/pressure/cpu), -1 when unknown.
type machine struct {
	load0, load1 float64
	pressure     float64
}

// machineAt is a reading of the machine's load: the 1-minute load
// average, PSI's total "some" µs and when.
type machineAt struct {
	load float64
	psi  int64
	at   time.Time
}

func readMachine() machineAt {
	m := machineAt{load: -1, psi: -1, at: time.Now()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if b, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				m.psi, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return m
}

// to returns the machine over the time from m to n.
func (m machineAt) to(n machineAt) machine {
	out := machine{load0: m.load, load1: n.load, pressure: -1}
	if d := n.at.Sub(m.at).Microseconds(); m.psi >= 0 && n.psi >= m.psi && d > 0 {
		out.pressure = float64(n.psi-m.psi) / float64(d)
	}
	return out
}

func (m machine) String() string {
	s := fmt.Sprintf("load average %.1f at the start, %.1f at the end", m.load0, m.load1)
	if m.pressure >= 0 {
		s += fmt.Sprintf("; some task waited for a CPU %.0f%% of the time (PSI)", 100*m.pressure)
	}
	return s + fmt.Sprintf(", on %d CPUs", runtime.NumCPU())
}
