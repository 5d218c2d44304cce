package loadgen

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// ClockMonotonic names this host's CLOCK_MONOTONIC, the clock of every
// software stamp here: SystemClock's, and the XDP programs'
// (bpf_ktime_get_ns).
const ClockMonotonic = "CLOCK_MONOTONIC"

// DefaultClockLimit is the largest offset CheckClocks accepts between the
// clocks of the TX and the RX stamps: phc2sys keeps two PHCs of one host
// within tens of ns of each other, PTP two servers' within a few hundred;
// free-running PHCs are ms to s apart.
const DefaultClockLimit = time.Microsecond

// A StampClock is a clock stamps are read on, as CheckClocks compares
// them: its name, and its offset from this host's CLOCK_MONOTONIC.
// SystemClock, PHCClock and *timestamp.PHC are StampClocks.
type StampClock interface {
	// Name names the clock: ClockMonotonic, "phc0".
	Name() string
	// Offset returns the clock minus CLOCK_MONOTONIC, in ns, and the
	// width of the narrowest bracket of CLOCK_MONOTONIC readings that
	// measured it.
	Offset() (offset, width int64, err error)
}

// Name returns ClockMonotonic.
func (*SystemClock) Name() string { return ClockMonotonic }

// Offset returns 0: SystemClock is CLOCK_MONOTONIC.
func (*SystemClock) Offset() (offset, width int64, err error) { return 0, 0, nil }

// PHCClock reads a PTP hardware clock (a NIC's, /dev/ptpN) as a
// generator's or a sink's clock: stamps on the PHC's timescale, which
// phc2sys or PTP can keep in step with another PHC, of this host or
// another, as nothing keeps CLOCK_MONOTONIC. A generator reads it once a
// batch, in software (clock_gettime on the PHC, a system call and a read
// across PCIe): the TX stamp is when the frame was handed to the port, as
// with SystemClock, on the PHC's timescale.
type PHCClock struct {
	phc  *timestamp.PHC
	last atomic.Int64
	errs atomic.Uint64
}

// NewPHCClock reads phc; the caller keeps it open while the clock is used.
func NewPHCClock(phc *timestamp.PHC) *PHCClock { return &PHCClock{phc: phc} }

// Now reads the PHC, in ns. A failed read (the device went away) returns
// the last good reading and is counted in Errors.
func (c *PHCClock) Now() int64 {
	t, err := c.phc.Now()
	if err != nil {
		c.errs.Add(1)
		return c.last.Load()
	}
	c.last.Store(t)
	return t
}

// Errors counts failed reads.
func (c *PHCClock) Errors() uint64 { return c.errs.Load() }

// Name returns the PHC's name, "phcN".
func (c *PHCClock) Name() string { return c.phc.Name() }

// Offset returns PHC − CLOCK_MONOTONIC (timestamp.PHC.Offset).
func (c *PHCClock) Offset() (offset, width int64, err error) { return c.phc.Offset() }

// ClockCheck is CheckClocks' verdict on one-way latencies whose TX stamps
// (the generator's) and RX stamps (the sink's) come from two clocks.
type ClockCheck struct {
	TX string `json:"tx_clock"` // the clock of the TX stamps
	RX string `json:"rx_clock"` // the clock of the RX stamps
	// Offset is the TX clock minus the RX clock, in ns, measured through
	// CLOCK_MONOTONIC (both clocks' offsets from it, with
	// PTP_SYS_OFFSET_EXTENDED where the driver has it), within
	// ±Uncertainty; both 0 when TX and RX are one clock. A latency
	// reads Offset too short.
	Offset      int64 `json:"offset_ns"`
	Uncertainty int64 `json:"uncertainty_ns"`
	Limit       int64 `json:"limit_ns"` // the largest |Offset| accepted
	// OK says the latencies mean something: TX and RX are one clock, or
	// two within Limit of each other. Why says why not.
	OK  bool   `json:"ok"`
	Why string `json:"why,omitempty"`
}

// String describes the check in a sentence.
func (c ClockCheck) String() string {
	switch {
	case !c.OK:
		return c.Why
	case c.TX == c.RX:
		return fmt.Sprintf("TX and RX stamps on one clock, %s", c.TX)
	}
	return fmt.Sprintf("TX stamps on %s, RX stamps on %s, %v apart (±%v; limit %v)",
		c.TX, c.RX, time.Duration(c.Offset), time.Duration(c.Uncertainty), time.Duration(c.Limit))
}

// CheckClocks decides whether one-way latencies between TX stamps on tx
// and RX stamps on rx can be reported: always when they are one clock
// (the same name: one host's CLOCK_MONOTONIC, or one PHC); for two
// clocks, only when their measured offset is within limit (0: the
// DefaultClockLimit), as phc2sys keeps two PHCs of a host. It reports the
// offset either way, and says why it refuses. Reading the clocks'
// offsets takes a few system calls: not for per-packet use.
func CheckClocks(tx, rx StampClock, limit time.Duration) ClockCheck {
	if limit <= 0 {
		limit = DefaultClockLimit
	}
	c := ClockCheck{TX: tx.Name(), RX: rx.Name(), Limit: int64(limit)}
	if c.TX == c.RX {
		c.OK = true
		return c
	}
	offTx, wTx, err := tx.Offset()
	if err == nil {
		var offRx, wRx int64
		offRx, wRx, err = rx.Offset()
		c.Offset, c.Uncertainty = offTx-offRx, (wTx+wRx+1)/2
	}
	if err != nil {
		c.Why = fmt.Sprintf("TX stamps on %s and RX stamps on %s: cannot measure how far apart the clocks are (%v), "+
			"so one-way latency is not reported", c.TX, c.RX, err)
		return c
	}
	if c.Offset <= c.Limit && c.Offset >= -c.Limit {
		c.OK = true
		return c
	}
	c.Why = fmt.Sprintf("TX stamps on %s and RX stamps on %s are %v apart (±%v, measured through %s), more than the %v limit: "+
		"the clocks are not synchronised, so one-way latency is not reported. %s",
		c.TX, c.RX, time.Duration(c.Offset), time.Duration(c.Uncertainty), ClockMonotonic, limit, syncAdvice(c.TX, c.RX))
	return c
}

// syncAdvice says how to bring clocks tx and rx into step.
func syncAdvice(tx, rx string) string {
	if tx == ClockMonotonic || rx == ClockMonotonic {
		return "Nothing synchronises CLOCK_MONOTONIC with a PHC: stamp both sides on the same kind of clock " +
			"(both on CLOCK_MONOTONIC, or both on their NICs' PHCs)."
	}
	return fmt.Sprintf("Keep the PHCs in step with phc2sys (phc2sys -s /dev/ptp%s -c /dev/ptp%s -O 0 -m), "+
		"or, across two servers, with ptp4l on both NICs; then run again.", phcIndex(tx), phcIndex(rx))
}

// phcIndex returns N of "phcN", or name itself.
func phcIndex(name string) string {
	if len(name) > 3 && name[:3] == "phc" {
		return name[3:]
	}
	return name
}

// Checked returns l with the clocks of c named and, when c refuses them,
// every latency figure removed and Withheld saying why.
func (l Latency) Checked(c ClockCheck) Latency {
	if !c.OK {
		l = Latency{Withheld: c.Why}
	}
	l.TxClock, l.RxClock = c.TX, c.RX
	return l
}
