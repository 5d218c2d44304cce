package demo

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/cpustat"
)

// What may leave a port idle other than the scheme and the transport: a
// CPU that had no time to spare, or senders that did not keep their
// connections' windows full. The thresholds are fixed here, before any
// run, and every report prints the numbers they judge.
const (
	// SaturatedCPU is the busy fraction (/proc/stat: everything but idle
	// and I/O wait) from which a CPU counts as saturated over a window.
	SaturatedCPU = 0.95
	// MinCwndLimited is the least fraction of a window the senders'
	// connections must spend cwnd-limited (TCPLimits.CwndLimited) for
	// their TCP, not their host, to have set the rate: below it their
	// processes left the sockets without data, or the socket buffers were
	// too small.
	MinCwndLimited = 0.9
)

// Load is what the machine did while a port was measured: the port's busy
// fraction, and what could have held it below C other than the scheme and
// the transport (issue 26: "say why a port was idle, from measurements").
type Load struct {
	// Busy is the bottleneck port's wire rate over C (PortBusy).
	Busy float64
	// CPUs are each CPU's busy split over the window (/proc/stat).
	CPUs []cpustat.Split
	// WorkerCPU is the CPU the switch worker is pinned to, -1 if none;
	// Worker its busy fraction by its own count (passes that moved
	// packets), which leaves out the kernel's work on that CPU.
	WorkerCPU int
	Worker    float64
	// Senders are the senders' TCP limits over the window; nil where the
	// senders are not kernel TCP, or idle between flows by design.
	Senders *TCPLimits
	// Open says the port was meant to idle part of the time: the workload
	// offers less than C (Poisson flows at a load, queries). Its busy
	// fraction then judges nothing, and only a saturated CPU makes the run
	// not comparable.
	Open bool
	// Unmeasured says the machine was not measured in the run: a port busy
	// less than MinBusy then counts as the machine's limit, the rule
	// before runs measured it.
	Unmeasured bool
}

// Saturated returns the CPUs at SaturatedCPU or more.
func (l Load) Saturated() []cpustat.Split {
	var s []cpustat.Split
	for _, c := range l.CPUs {
		if c.Busy >= SaturatedCPU {
			s = append(s, c)
		}
	}
	return s
}

// Limit says what of the machine may have left the port idle: the
// saturated CPUs, and senders cwnd-limited less than MinCwndLimited of
// the window; "" when neither. It judges the machine, whatever the
// port's busy fraction.
func (l Load) Limit() string {
	if l.Unmeasured {
		return "the machine, not measured"
	}
	var why []string
	for _, c := range l.Saturated() {
		why = append(why, fmt.Sprintf("CPU %d %.0f%% busy", c.CPU, 100*c.Busy))
	}
	if s := l.Senders; s != nil && s.Flows > 0 && s.CwndLimited() < MinCwndLimited {
		why = append(why, fmt.Sprintf("senders cwnd-limited %.0f%%", 100*s.CwndLimited()))
	}
	return strings.Join(why, "; ")
}

// Comparable reports whether the run may be compared with the paper: its
// port was busy at least MinBusy of the time, or the machine did not
// limit it (Limit is empty). A port left idle by cwnd-limited senders on
// CPUs with time to spare is the scheme's and the transport's
// utilisation, a result like any other.
func (l Load) Comparable() bool {
	if l.Open {
		return len(l.Saturated()) == 0
	}
	return l.Busy >= MinBusy || l.Limit() == ""
}

// String formats the load for a report: "port 97.3% busy; CPU 0 82%
// (softirq 64%, …), CPU 1 93% (…); worker 51%; senders cwnd-limited 98%".
func (l Load) String() string {
	parts := []string{fmt.Sprintf("port %.1f%% busy", 100*l.Busy)}
	var cpus []string
	for _, c := range l.CPUs {
		s := c.String()
		if c.CPU == l.WorkerCPU {
			s += " [worker]"
		}
		cpus = append(cpus, s)
	}
	if len(cpus) > 0 {
		parts = append(parts, strings.Join(cpus, ", "))
	}
	parts = append(parts, fmt.Sprintf("worker %.0f%%", 100*l.Worker))
	if l.Senders != nil && l.Senders.Flows > 0 {
		parts = append(parts, "senders "+l.Senders.String())
	}
	return strings.Join(parts, "; ")
}

// TCPLimits are where a window's time went for a set of TCP connections,
// from their TCP_INFO chrono counters (tcpi_busy_time, tcpi_rwnd_limited,
// tcpi_sndbuf_limited), summed over the connections. Busy counts the time
// a connection had data queued to send, in three parts: limited by the
// receiver's window, limited by its send buffer (it sent all it held while
// the writer waited for room), and the rest, limited by its congestion
// window (or pacing). The window's time outside Busy the connection had
// nothing queued: its writer did not keep up.
type TCPLimits struct {
	Flows int
	// Window is the measured window times Flows: the time the others are
	// fractions of.
	Window                           time.Duration
	Busy, RwndLimited, SndbufLimited time.Duration
}

// CwndLimited returns the fraction of the window the connections spent
// limited by their congestion windows: Busy less the rwnd- and
// sndbuf-limited times.
func (l TCPLimits) CwndLimited() float64 {
	if l.Window <= 0 {
		return 0
	}
	return float64(l.Busy-l.RwndLimited-l.SndbufLimited) / float64(l.Window)
}

// fraction returns d over the window.
func (l TCPLimits) fraction(d time.Duration) float64 {
	if l.Window <= 0 {
		return 0
	}
	return float64(d) / float64(l.Window)
}

// String formats the limits: "cwnd-limited 97%, rwnd 0%, sndbuf 1%, idle
// 2% (5 flows)".
func (l TCPLimits) String() string {
	idle := max(l.Window-l.Busy, 0)
	return fmt.Sprintf("cwnd-limited %.0f%%, rwnd %.0f%%, sndbuf %.0f%%, nothing queued %.0f%% (%d flows)",
		100*l.CwndLimited(), 100*l.fraction(l.RwndLimited), 100*l.fraction(l.SndbufLimited), 100*l.fraction(idle), l.Flows)
}

// chronos are one connection's TCP_INFO chrono counters at one instant.
type chronos struct{ busy, rwnd, sndbuf time.Duration }

// ReadChronos returns the TCP_INFO chrono counters of each connection;
// a connection whose TCP_INFO cannot be read counts zeros.
func readChronos(cs []net.Conn) []chronos {
	out := make([]chronos, len(cs))
	for i, c := range cs {
		var ti *unix.TCPInfo
		if control(c, func(fd int) (err error) {
			ti, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
			return err
		}) != nil {
			continue
		}
		us := func(v uint64) time.Duration { return time.Duration(v) * time.Microsecond }
		out[i] = chronos{busy: us(ti.Busy_time), rwnd: us(ti.Rwnd_limited), sndbuf: us(ti.Sndbuf_limited)}
	}
	return out
}

// limitsBetween returns the limits of the connections over a window of
// length elapsed, from their chronos at its two ends.
func limitsBetween(a, b []chronos, elapsed time.Duration) TCPLimits {
	l := TCPLimits{Flows: min(len(a), len(b))}
	l.Window = elapsed * time.Duration(l.Flows)
	for i := range l.Flows {
		l.Busy += max(b[i].busy-a[i].busy, 0)
		l.RwndLimited += max(b[i].rwnd-a[i].rwnd, 0)
		l.SndbufLimited += max(b[i].sndbuf-a[i].sndbuf, 0)
	}
	// The chronos tick in jiffies: never more busy than the window.
	l.Busy = min(l.Busy, l.Window)
	return l
}

// Meter measures a window's Load: start it when the window opens, and
// Stop gives the load when it closes. A meter of no connections leaves
// Senders nil.
type Meter struct {
	conns []net.Conn
	cpu0  cpustat.Snapshot
	tcp0  []chronos
	wrk0  dataplane.WorkerStats
	start time.Time
}

// StartMeter opens a window over the switch's stats st (its first worker)
// and the connections conns.
func StartMeter(st dataplane.Stats, conns []net.Conn) *Meter {
	m := &Meter{conns: slices.Clone(conns), tcp0: readChronos(conns), start: time.Now()}
	m.cpu0, _ = cpustat.Read() // no /proc/stat: no CPUs in the load
	if len(st.Workers) > 0 {
		m.wrk0 = st.Workers[0]
	}
	return m
}

// Stop closes the window with the switch's stats st and the bottleneck
// port's busy fraction busy, and returns its load.
func (m *Meter) Stop(st dataplane.Stats, busy float64) Load {
	l := Load{Busy: busy, WorkerCPU: -1}
	if cpu1, err := cpustat.Read(); err == nil && m.cpu0 != nil {
		l.CPUs = cpustat.Between(m.cpu0, cpu1)
	}
	elapsed := time.Since(m.start)
	if len(m.conns) > 0 {
		tl := limitsBetween(m.tcp0, readChronos(m.conns), elapsed)
		l.Senders = &tl
	}
	if len(st.Workers) > 0 {
		w0, w1 := m.wrk0, st.Workers[0]
		l.WorkerCPU = w1.CPU
		busy, spin, sleep := float64(w1.Busy-w0.Busy), float64(w1.Spin-w0.Spin), float64(w1.Sleep-w0.Sleep)
		if t := busy + spin + sleep; t > 0 {
			l.Worker = busy / t
		}
	}
	return l
}
