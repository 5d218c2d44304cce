package experiment

import (
	"fmt"
	"time"
)

// Scaling maps a paper's time constants from the line rate it measured at
// onto the testbed's, as the papers themselves scale them between their
// 1 Gbit/s testbeds and 10 Gbit/s simulations (001 §5: T_idle is 12 µs at
// 1 Gbit/s and 1.2 µs at 10 Gbit/s; 000 §3.2 Eq. 2: a time threshold T is
// the queue K = T·C): every threshold keeps its bytes, so a time constant
// grows by PaperRate/Rate.
type Scaling struct {
	PaperRate int64 // bit/s the paper measured at
	Rate      int64 // bit/s of the testbed's bottleneck
}

// Factor returns PaperRate/Rate, what a time constant is multiplied by.
func (s Scaling) Factor() float64 { return float64(s.PaperRate) / float64(s.Rate) }

// Time returns the paper's time constant d at the testbed's rate: the time
// the testbed takes to send the bytes the paper's rate sends in d.
func (s Scaling) Time(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.Factor())
}

// Bytes returns the bytes rate·d: what a port of the testbed sends in d.
func (s Scaling) Bytes(d time.Duration) int64 {
	return int64(float64(s.Rate) * d.Seconds() / 8)
}

// timeOf returns the time the rate takes to send n bytes.
func (s Scaling) timeOf(n int64) time.Duration {
	return time.Duration(float64(n) * 8 / float64(s.Rate) * 1e9)
}

// String says how the paper's constants were scaled, for a report.
func (s Scaling) String() string {
	if s.PaperRate == s.Rate {
		return fmt.Sprintf("The paper's rate is the testbed's (%s): its constants are used as they are.", rate(s.Rate))
	}
	return fmt.Sprintf("The paper measured at %s, the testbed runs at %s: every time constant is multiplied by %s/%s = %.2f, "+
		"so that each threshold stays the same number of bytes (K = T·C, 000 §3.2 Eq. 2) and the same number of packets, "+
		"as the papers scale between their 1 Gbit/s testbeds and 10 Gbit/s simulations (001 §5: T_idle 12 µs at 1 Gbit/s, 1.2 µs at 10 Gbit/s).",
		rate(s.PaperRate), rate(s.Rate), rate(s.PaperRate), rate(s.Rate), s.Factor())
}
