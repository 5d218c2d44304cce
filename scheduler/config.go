package scheduler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Limits of a Config.
const (
	MaxQueues     = 64      // queues per port (one bit each in a uint64 bitmap)
	DefaultQueues = 8       // queues per port when Config.NumQueues is 0
	DefaultMTU    = 1514    // bytes: a 1500-byte IP packet in an untagged frame, without FCS
	MaxCapacity   = 1 << 20 // packets per queue ring
	MaxMTU        = 1 << 16 // bytes
	MinMTU        = 64      // bytes, the minimum Ethernet frame
	MaxQuantum    = 1 << 24 // bytes per round
	MaxWeight     = 1 << 16 // WFQ weight
	MaxLineRate   = 10e12   // bit/s
	MinLineRate   = 1000    // bit/s, when not 0
	DefaultBeta   = 0.75    // MQ-ECN's round-time smoothing β: 001 §5 "we set β to 0.75"
	maxIdleSlots  = 10      // idle T_idle slots after which T_round resets to 0
	maxTIdle      = 1 << 40 // ns, about 18 minutes
	maxSample     = 1 << 46 // ns; longer round-time samples are clamped
	betaOne       = 1 << 16 // β is kept in Q16 fixed point
	wfqScale      = 1 << 24 // WFQ finish-tag units per byte at weight 1
	defaultCap    = 1024    // packets per queue ring
	betaPrecision = 1.0 / betaOne
)

// ErrConfig is wrapped by every error New and NewShaper return for an
// invalid configuration.
var ErrConfig = errors.New("invalid scheduler config")

// Kind is a scheduling discipline.
type Kind uint8

// Kinds. The zero Kind is invalid, so that a forgotten kind is an error
// rather than a silent default.
const (
	SP    Kind = iota + 1 // strict priority: the highest-index non-empty queue first
	WRR                   // weighted round robin with a byte quantum per round
	DWRR                  // deficit weighted round robin (Shreedhar–Varghese)
	WFQ                   // weighted fair queueing with self-clocked virtual time
	DualQ                 // RFC 9332's DualQ: an L4S queue served first, the Classic queue protected
)

// String returns the kind's lower-case name, as ParseKind accepts it.
func (k Kind) String() string {
	switch k {
	case SP:
		return "sp"
	case WRR:
		return "wrr"
	case DWRR:
		return "dwrr"
	case WFQ:
		return "wfq"
	case DualQ:
		return "dualq"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind parses "sp", "wrr", "dwrr", "wfq" or "dualq".
func ParseKind(s string) (Kind, error) {
	for k := SP; k <= DualQ; k++ {
		if s == k.String() {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: kind: %q is not one of sp, wrr, dwrr, wfq, dualq", ErrConfig, s)
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseKind.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Overhead says which bytes besides Desc.Len a packet costs on the wire.
type Overhead uint8

// Overheads.
const (
	// OverheadNone charges Desc.Len bytes: the frame without FCS.
	OverheadNone Overhead = iota
	// OverheadEthernet charges what an Ethernet frame occupies on the wire,
	// as the MQ-ECN prototype does: max(len+4, 64) + 20, that is the 4-byte
	// FCS, padding to the 64-byte minimum frame, and the 8-byte preamble
	// with start delimiter plus the 12-byte inter-frame gap.
	OverheadEthernet
)

// Wire returns the bytes a frame of frameLen bytes (Desc.Len, no FCS) costs.
func (o Overhead) Wire(frameLen int) int {
	if o == OverheadEthernet {
		return max(frameLen+4, 64) + 20
	}
	return frameLen
}

// String returns "none" or "ethernet".
func (o Overhead) String() string {
	switch o {
	case OverheadNone:
		return "none"
	case OverheadEthernet:
		return "ethernet"
	}
	return fmt.Sprintf("overhead(%d)", uint8(o))
}

// MarshalText implements encoding.TextMarshaler.
func (o Overhead) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "none" or "ethernet".
func (o *Overhead) UnmarshalText(b []byte) error {
	switch string(b) {
	case "none", "":
		*o = OverheadNone
	case "ethernet":
		*o = OverheadEthernet
	default:
		return fmt.Errorf("%w: overhead: %q is not one of none, ethernet", ErrConfig, b)
	}
	return nil
}

// QueueConfig configures one queue.
type QueueConfig struct {
	// Strict puts the queue at a strict-priority level above the WRR, DWRR
	// or WFQ level; among strict queues the higher index goes first. With
	// Kind SP every queue is strict and this flag is ignored.
	Strict bool
	// Weight is the queue's share of its level: WFQ serves backlogged
	// queues in proportion to it; for WRR and DWRR it is the default
	// quantum in MTUs. 0 means 1; at most MaxWeight.
	Weight int64
	// Quantum is the bytes a WRR or DWRR queue is served per round
	// (001 §3.3.2), in the units the scheduler charges (see
	// Config.Overhead). 0 means Weight × the charged MTU. DWRR needs
	// Quantum ≥ the charged MTU so that every turn sends a packet; WRR
	// accepts any positive quantum. Must be 0 for strict and WFQ queues.
	Quantum int64
}

// Config configures one port's scheduler.
type Config struct {
	// Kind is the discipline of the non-strict queues: SP, WRR, DWRR or WFQ.
	// WRR, DWRR and WFQ with some Queues[i].Strict set are the hierarchical
	// SP-over-WRR, SP-over-DWRR and SP-over-WFQ schedulers.
	Kind Kind
	// NumQueues is the number of queues, 1 to MaxQueues. 0 means
	// len(Queues), or DefaultQueues when Queues is empty too.
	NumQueues int
	// Queues configures each queue; empty means defaults for all.
	// Otherwise it must have NumQueues entries.
	Queues []QueueConfig
	// Capacity is each queue's ring size in packets, rounded up to a power
	// of two; 0 means 1024. Enqueue fails when a ring is full.
	Capacity int
	// MTU is the largest Desc.Len the port carries, MinMTU to MaxMTU bytes;
	// 0 means 1514 (a 1500-byte IP packet in an untagged Ethernet frame).
	MTU int
	// Overhead selects how a packet is charged against quanta and WFQ
	// finish tags, and how long it takes on the wire for T_round: Desc.Len
	// alone (OverheadNone, the default) or the Ethernet wire size.
	Overhead Overhead
	// LineRate is the port's (shaped) rate C in bit/s, 0 to MaxLineRate.
	// WRR and DWRR use it to time the end of a queue's last transmission
	// in a round and to default TIdle; 0 means unknown: the dequeue time
	// stands in for the end of transmission and TIdle has no default.
	LineRate int64
	// Beta is the round-time smoothing factor β of 001 §3.3.1, in (0, 1);
	// 0 means 0.75 (001 §5).
	Beta float64
	// TIdle is the idle time after which T_round decays by β (001 §3.3.1).
	// 0 means the transmission time of one MTU at LineRate (001 §5: 12 µs
	// at 1 Gbit/s); with LineRate 0 too, T_round never decays. Negative
	// disables decay.
	TIdle time.Duration

	// ClassicProtection is, for DualQ, the Classic queue's weight in
	// percent in the WRR that keeps the L4S queue from starving it, the L4S
	// queue's being 100 minus it (tc-dualpi2's classic_protection, RFC 9332
	// §4.2.2, which suggests a Classic weight of "e.g., 1/16"): 1 to 100;
	// 0 means DefaultClassicProtection, negative means none (the L4S queue
	// in strict priority, which §4.2.2 and Appendix A.2 call inappropriate).
	ClassicProtection int
	// TShift, for DualQ, replaces that WRR by RFC 9332's time-shifted FIFO
	// (§4.2.2, Appendix A.2; "a good value for tshift is 50 ms" on the
	// public Internet, "about 4*target" on smaller private networks): the
	// L4S queue's head goes first unless the Classic head arrived more than
	// TShift before it. 0 keeps the WRR; at most MaxTShift.
	TShift time.Duration
}

// DualQ's queues and defaults.
const (
	DualQClassic = 0 // the Classic queue: Not-ECT and ECT(0) (RFC 9332 §2.4)
	DualQL4S     = 1 // the L4S queue: ECT(1) and CE, served first
	// DefaultClassicProtection is tc-dualpi2's classic_protection: the
	// Classic queue weighs 10%, the L4S queue 90%.
	DefaultClassicProtection = 10
	// NoClassicProtection is the ClassicProtection of a strict-priority
	// L4S queue.
	NoClassicProtection = -1
	// MaxTShift bounds a DualQ's TShift.
	MaxTShift = time.Second
)

// params is a validated Config with every default filled in.
type params struct {
	config   Config // the Config validated, its Queues a copy
	kind     Kind
	n        int
	queues   []QueueConfig
	capacity int // power of two
	mtu      int
	overhead Overhead
	lineRate int64
	beta     uint64 // Q16
	tIdle    int64  // ns; 0 = no decay
}

// Validate checks c as New does, and builds nothing. Errors wrap
// ErrConfig and name the key, its value and the allowed range.
func (c Config) Validate() error {
	_, err := c.validate()
	return err
}

// QueueCount returns the number of queues a scheduler of c has:
// NumQueues, else len(Queues), else DefaultQueues.
func (c Config) QueueCount() int {
	switch {
	case c.NumQueues != 0:
		return c.NumQueues
	case len(c.Queues) != 0:
		return len(c.Queues)
	case c.Kind == DualQ:
		return 2
	}
	return DefaultQueues
}

func (c *Config) validate() (params, error) {
	p := params{config: *c, kind: c.Kind, overhead: c.Overhead, lineRate: c.LineRate}
	p.config.Queues = slices.Clone(c.Queues)
	if c.Kind < SP || c.Kind > DualQ {
		return p, fmt.Errorf("%w: kind: %v is not one of sp, wrr, dwrr, wfq, dualq", ErrConfig, c.Kind)
	}
	if c.Overhead > OverheadEthernet {
		return p, fmt.Errorf("%w: overhead: %v is not one of none, ethernet", ErrConfig, c.Overhead)
	}
	p.n = c.QueueCount()
	if p.n < 1 || p.n > MaxQueues {
		return p, fmt.Errorf("%w: num_queues: %d outside [1, %d]", ErrConfig, p.n, MaxQueues)
	}
	if len(c.Queues) != 0 && len(c.Queues) != p.n {
		return p, fmt.Errorf("%w: queues: %d entries for num_queues %d, want %d entries or none", ErrConfig, len(c.Queues), p.n, p.n)
	}
	p.capacity = c.Capacity
	if p.capacity == 0 {
		p.capacity = defaultCap
	}
	if p.capacity < 1 || p.capacity > MaxCapacity {
		return p, fmt.Errorf("%w: capacity: %d outside [1, %d] packets", ErrConfig, c.Capacity, MaxCapacity)
	}
	for p.capacity&(p.capacity-1) != 0 {
		p.capacity += p.capacity & -p.capacity
	}
	p.mtu = c.MTU
	if p.mtu == 0 {
		p.mtu = DefaultMTU
	}
	if p.mtu < MinMTU || p.mtu > MaxMTU {
		return p, fmt.Errorf("%w: mtu: %d outside [%d, %d] bytes", ErrConfig, c.MTU, MinMTU, MaxMTU)
	}
	if c.LineRate != 0 && (c.LineRate < MinLineRate || c.LineRate > MaxLineRate) {
		return p, fmt.Errorf("%w: line_rate: %d outside [%d, %g] bit/s (or 0 for unknown)", ErrConfig, c.LineRate, MinLineRate, float64(MaxLineRate))
	}
	beta := c.Beta
	if beta == 0 {
		beta = DefaultBeta
	}
	if !(beta >= betaPrecision && beta <= 1-betaPrecision) {
		return p, fmt.Errorf("%w: beta: %g outside (0, 1) (resolution 1/%d)", ErrConfig, c.Beta, betaOne)
	}
	p.beta = uint64(math.Round(beta * betaOne))
	switch {
	case c.TIdle < 0:
		p.tIdle = 0
	case c.TIdle > maxTIdle:
		return p, fmt.Errorf("%w: t_idle: %v outside [0, %v]", ErrConfig, c.TIdle, time.Duration(maxTIdle))
	case c.TIdle > 0:
		p.tIdle = int64(c.TIdle)
	case c.LineRate > 0:
		p.tIdle = max(1, wireTime(int64(p.overhead.Wire(p.mtu)), c.LineRate))
	}

	if c.Kind == DualQ {
		return p, c.validateDualQ(&p)
	}
	if c.ClassicProtection != 0 || c.TShift != 0 {
		return p, fmt.Errorf("%w: classic_protection %d and tshift %v are DualQ's, not %v's", ErrConfig, c.ClassicProtection, c.TShift, c.Kind)
	}
	charged := int64(p.overhead.Wire(p.mtu))
	p.queues = make([]QueueConfig, p.n)
	copy(p.queues, c.Queues)
	for i := range p.queues {
		q := &p.queues[i]
		if c.Kind == SP {
			q.Strict = true
		}
		if q.Weight == 0 {
			q.Weight = 1
		}
		if q.Weight < 1 || q.Weight > MaxWeight {
			return p, fmt.Errorf("%w: queues[%d].weight: %d outside [1, %d]", ErrConfig, i, q.Weight, MaxWeight)
		}
		rr := !q.Strict && (c.Kind == WRR || c.Kind == DWRR)
		if !rr {
			if q.Quantum != 0 {
				what := "a strict queue"
				if !q.Strict {
					what = "a WFQ queue (use weight)"
				}
				return p, fmt.Errorf("%w: queues[%d].quantum: %d set on %s, want 0; only WRR and DWRR queues have a quantum", ErrConfig, i, q.Quantum, what)
			}
			continue
		}
		if q.Quantum == 0 {
			q.Quantum = q.Weight * charged
		}
		if q.Quantum < 1 || q.Quantum > MaxQuantum {
			return p, fmt.Errorf("%w: queues[%d].quantum: %d outside [1, %d] bytes", ErrConfig, i, q.Quantum, MaxQuantum)
		}
		if c.Kind == DWRR && q.Quantum < charged {
			how := ""
			if p.overhead != OverheadNone {
				how = fmt.Sprintf(" (mtu %d charged with %v overhead)", p.mtu, p.overhead)
			}
			return p, fmt.Errorf("%w: queues[%d].quantum: %d is below the MTU %d%s; DWRR needs quantum ≥ MTU, in [%d, %d] bytes", ErrConfig, i, q.Quantum, charged, how, charged, MaxQuantum)
		}
	}
	return p, nil
}

// wireTime returns the nanoseconds b bytes take at rate bit/s, rounded down.
func wireTime(b, rate int64) int64 { return b * 8e9 / rate }
