package dataplane

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// DualQ configures a DualQ Coupled AQM port (RFC 9332): a port whose
// Scheduler.Kind is scheduler.DualQ. Such a port classifies its packets
// by their ECN field, not by the switch's Classifier — ECT(1) and CE into
// the L4S queue, Not-ECT and ECT(0) into the Classic queue (RFC 9332
// §2.3, RFC 9331 §5.1) — and puts the coupled AQM, marking.DualPI2, at
// the head of its dequeue chain: PI2 on the queues' delay (the Classic
// queue's unless the L4S queue is overloaded), its probability coupled
// into the L4S queue's step. Buffer admission is the
// port's, through its pool and Dynamic Threshold, as on any port.
type DualQ struct {
	// AQM is the coupled AQM; its zero fields take tc-dualpi2's defaults
	// (marking.NewDualPI2), a zero MTU the scheduler's, a zero Seed one
	// from the port's index.
	AQM marking.DualPI2Config
	// ECNMask says which codepoints go to the L4S queue:
	// marking.ECNMaskL4S, ECT(1) and CE (the default, tc-dualpi2 l4s_ect),
	// or marking.ECNMaskAny, ECT(0) too (any_ect).
	ECNMask marking.ECNMask
	// DSCP overrides the ECN classification for these codepoints, DSCP →
	// scheduler.DualQClassic or scheduler.DualQL4S: another identifier
	// beside ECN, as RFC 9331 §5.4 allows (an NQB codepoint into the L4S
	// queue, say). A Not-ECT packet in the L4S queue is dropped where the
	// L4S AQM would mark it.
	DSCP map[uint8]int
}

// The marking and scheduler packages number a DualQ's queues alike.
var (
	_ = [1]struct{}{}[scheduler.DualQClassic-marking.DualQClassic]
	_ = [1]struct{}{}[scheduler.DualQL4S-marking.DualQL4S]
)

// isZero reports whether d configures nothing.
func (d *DualQ) isZero() bool {
	return d.AQM == (marking.DualPI2Config{}) && d.ECNMask == 0 && len(d.DSCP) == 0
}

// validate checks d for a port of scheduler kind kind.
func (d *DualQ) validate(kind scheduler.Kind) error {
	if kind != scheduler.DualQ {
		if !d.isZero() {
			return fmt.Errorf("dualq: set on a port of scheduler kind %v; it needs kind dualq", kind)
		}
		return nil
	}
	if d.ECNMask != marking.ECNMaskL4S && d.ECNMask != marking.ECNMaskAny {
		return fmt.Errorf("dualq: ecn_mask %v is not one of l4s_ect, any_ect", d.ECNMask)
	}
	for k, q := range d.DSCP {
		if k > MaxDSCP {
			return fmt.Errorf("dualq: dscp %d outside [0, %d]", k, MaxDSCP)
		}
		if q != scheduler.DualQClassic && q != scheduler.DualQL4S {
			return fmt.Errorf("dualq: dscp[%d]: queue %d is not the Classic (%d) or the L4S (%d) queue", k, q, scheduler.DualQClassic, scheduler.DualQL4S)
		}
	}
	if _, err := marking.NewDualPI2(d.AQM); err != nil {
		return fmt.Errorf("dualq: %w", err)
	}
	return nil
}

// dualqClassifier is a DualQ port's classifier, compiled.
type dualqClassifier struct {
	dscp [MaxDSCP + 1]int8 // the override's queue; -1: by ECN
	mask marking.ECNMask
}

func newDualQClassifier(d *DualQ) *dualqClassifier {
	c := &dualqClassifier{mask: d.ECNMask}
	for i := range c.dscp {
		c.dscp[i] = -1
	}
	for k, q := range d.DSCP {
		c.dscp[k] = int8(q)
	}
	return c
}

// queue returns d's queue.
func (c *dualqClassifier) queue(d *packet.Desc) uint8 {
	if q := c.dscp[d.DSCP&MaxDSCP]; q >= 0 {
		return uint8(q)
	}
	if c.mask.L4S(d.ECN) {
		return scheduler.DualQL4S
	}
	return scheduler.DualQClassic
}

// newDualQ builds the coupled AQM of port idx, configured by pc.
func newDualQ(idx int, pc *PortConfig) (*marking.DualPI2, error) {
	cfg := pc.DualQ.AQM
	if cfg.MTU == 0 {
		cfg.MTU = int64(pc.Scheduler.MTU)
		if cfg.MTU == 0 {
			cfg.MTU = scheduler.DefaultMTU
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(idx+1)<<32 | 0xd0a1
	}
	aqm, err := marking.NewDualPI2(cfg)
	if err != nil {
		return nil, fmt.Errorf("dualq: %w", err)
	}
	return aqm, nil
}

// DualQStats are a DualQ port's coupled AQM (RFC 9332): its probabilities
// as of its last update and the votes of its parts. The queues' own
// counters have what happened to their packets: the L4S and Classic
// delays are QueueStats.Sojourn of queues scheduler.DualQL4S and
// scheduler.DualQClassic, their marks MarkedDeq and their AQM drops
// Drops["marker"].
type DualQStats struct {
	Prob       float64 `json:"prob"`       // p′, the PI2 controller's base probability
	ProbC      float64 `json:"prob_c"`     // p_C = (p′)², the Classic queue's
	ProbL      float64 `json:"prob_l"`     // p_CL = min(k·p′, 1), the L4S queue's coupled probability
	DelayC     int64   `json:"delay_c_ns"` // the delay the last update took: the larger of the two queues', the Classic queue's unless the L4S queue is overloaded (RFC 9332 Appendix A.2)
	Overloaded bool    `json:"overloaded"` // k·p′ ≥ 1: both queues drop with p_C (RFC 9332 §4.2.3, Appendix A.2)
	Overloads  uint64  `json:"overloads"`  // updates that entered overload
	Updates    uint64  `json:"updates"`    // PI2 updates run

	// Votes of the AQM's parts (marking.DualPI2Step, …): a packet may get
	// a step and a coupled vote, so marks of the L4S queue are its
	// MarkedDeq, not their sum.
	StepMarks     uint64 `json:"step_marks"`     // the L4S queue's native step (or ramp)
	CoupledMarks  uint64 `json:"coupled_marks"`  // the L4S queue's coupled p_CL, on overload every packet not dropped
	ClassicMarks  uint64 `json:"classic_marks"`  // ECN-capable packets of the Classic queue, with p_C
	ClassicDrops  uint64 `json:"classic_drops"`  // Not-ECT packets of the Classic queue, with p_C
	OverloadDrops uint64 `json:"overload_drops"` // packets of either queue, with p_C on overload
	NonECTDrops   uint64 `json:"non_ect_drops"`  // Not-ECT packets of the L4S queue its AQM would have marked
}

// dualqStats digests aqm's state and its members' counts.
func dualqStats(aqm *marking.DualPI2, counts []marking.MemberCounts) *DualQStats {
	st := aqm.State()
	s := &DualQStats{
		Prob: st.Prob, ProbC: st.ProbC, ProbL: st.ProbL, DelayC: st.DelayC,
		Overloaded: st.Overloaded, Overloads: st.Overloads, Updates: st.Updates,
	}
	for _, c := range counts {
		switch c.Name {
		case marking.DualPI2Step:
			s.StepMarks, s.NonECTDrops = c.Marks, s.NonECTDrops+c.Drops
		case marking.DualPI2Coupled:
			s.CoupledMarks, s.NonECTDrops = c.Marks, s.NonECTDrops+c.Drops
		case marking.DualPI2Classic:
			s.ClassicMarks, s.ClassicDrops = c.Marks, c.Drops
		case marking.DualPI2Overload:
			s.OverloadDrops = c.Drops
		}
	}
	return s
}
