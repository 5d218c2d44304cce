package marking

import (
	"math"
	"sync/atomic"
)

// The queues of a DualQ port, as the DualPI2 members read them; the
// scheduler's DualQ numbers them the same way (the L queue is the one a
// strict-priority scheduler would serve first).
const (
	DualQClassic = 0 // the C queue: Not-ECT and ECT(0)
	DualQL4S     = 1 // the L queue: ECT(1) and CE
)

// The names of a DualPI2's chain members: they label its counters and
// say, in captures, which part of the coupled AQM marked or dropped a
// packet.
const (
	DualPI2Step     = "dualpi2-step"     // the L queue's native AQM: its step (or ramp) on the L sojourn
	DualPI2Coupled  = "dualpi2-coupled"  // the L queue's coupled marking with p_CL = k·p′
	DualPI2Classic  = "dualpi2-classic"  // the C queue's marks and drops with p_C = (p′)²
	DualPI2Overload = "dualpi2-overload" // drops of either queue with p_C on overload
)

// DualPI2 defaults beyond PI2's: tc-dualpi2(8)'s step_thresh 1 ms and
// min_qlen_step 0 (Linux's dualpi2_reset_default).
const (
	DualPI2DefaultStepThresh = 1_000_000 // ns
	dualPI2PacketsMax        = 1 << 24
)

// DualPI2Params are the coupled AQM's keys as a DualQ port's scheduler
// section writes them, named as tc-dualpi2(8) names them, with their
// units, defaults, ranges and RFC sections: PI2's (target, tupdate,
// alpha, beta, coupling_factor, drop_on_overload) and the L4S queue's
// native AQM's. Configs check values with them and the docs list them.
func DualPI2Params() []Param {
	var ps []Param
	for _, p := range pi2Scheme().Params {
		switch p.Key {
		case "target", "tupdate", "alpha", "beta", "coupling_factor", "drop_on_overload":
			if p.Key == "target" {
				p.Doc = "the Classic queue's delay target"
			}
			ps = append(ps, p)
		}
	}
	return append(ps,
		Param{Key: "step_thresh", Unit: UnitDuration, Default: int64(DualPI2DefaultStepThresh), Range: leftOpen(0, float64(dequeueTimeMax)),
			Doc: "the L4S queue's native step: mark a packet that waited longer; or a number of packets (5pkt): mark one that leaves more behind", Paper: "RFC 9332 §2.4, Appendix A.1"},
		Param{Key: "min_qlen_step", Unit: UnitPackets, Default: int64(0), Range: closed(0, dualPI2PacketsMax),
			Doc: "apply the step only while the L4S queue holds at least this many packets, the one leaving included (Linux counts those an arrival finds)", Paper: "RFC 9332 Appendix A.2 (Th_len)"},
		Param{Key: "ramp_range", Unit: UnitDuration, Default: int64(0), Range: closed(0, float64(dequeueTimeMax)),
			Doc: "a ramp instead of the step: marking rises from 0 at step_thresh (minTh) to 1 at step_thresh + ramp_range (range); 0 for the step", Paper: "RFC 9332 Appendix A.1"},
		seedParam(),
	)
}

// DualPI2Config configures the coupled AQM of a DualQ port (RFC 9332 §2.4,
// Appendix A; tc-dualpi2). Zero fields take the defaults of PI2 and
// DualPI2DefaultStepThresh.
type DualPI2Config struct {
	Target   int64   // ns: the C queue's delay target; tc-dualpi2 target
	TUpdate  int64   // ns: Tupdate; tupdate
	Alpha    float64 // Hz; alpha
	Beta     float64 // Hz; beta
	Coupling float64 // k; coupling_factor
	// StepThresh is the L queue's native step: a packet that waited longer
	// is marked (step_thresh as a time).
	StepThresh int64
	// StepPackets, when positive, puts the step on the L queue's length
	// instead: a packet that leaves more than this many behind is marked
	// (step_thresh in packets).
	StepPackets int64
	// RampRange, when positive, makes the native AQM RFC 9332 Appendix
	// A.1's ramp instead of a step: from 0 at StepThresh (minTh) to 1 at
	// StepThresh + RampRange (range).
	RampRange int64
	// MinQlenStep applies the native AQM only while the L queue holds at
	// least this many packets, the one leaving included (min_qlen_step).
	// It plays RFC 9332 Appendix A.2's Th_len, which tests the L queue's
	// length at dequeue; Linux tests it at enqueue, on the packets the
	// arrival finds, which a marker at dequeue cannot know.
	MinQlenStep int64
	// Overflow keeps ECN on overload, capping p′ at 1/k (tc-dualpi2
	// overflow); by default the AQM drops on overload (drop_on_overload).
	Overflow bool
	MTU      int64  // bytes: no PI2 action while less than two are queued; PI2DefaultMTU if 0
	Seed     uint64 // seeds the draws
}

// DualPI2 is the coupled AQM of a DualQ port (RFC 9332): a PI2 controller
// on the queues' delay sets p′; the C queue's packets are dropped
// (Not-ECT) or marked with p_C = (p′)², the L queue's marked with
// max(native, p_CL), p_CL = k·p′, where native is the L queue's own step
// (or ramp) on its sojourn. It decides at dequeue, as four chain members
// (Members), which the dataplane puts at the head of a DualQ port's
// dequeue chain. One goroutine, the port's worker, uses it; State may be
// read by any.
type DualPI2 struct {
	gains       pi2Gains
	c           pi2
	k           float64
	drop        bool
	floor       int64
	step        int64
	stepPackets int64
	ramp        int64
	minQlen     int64
	profile     redProfile

	// The packet being decided, set by the first member.
	u         float64 // its draw
	pC, pCL   float64
	overload  bool
	floored   bool // less than two MTUs queued: no PI2 action
	wasLoaded bool

	prob       atomic.Uint64 // p′'s bits, as of the last update
	delay      atomic.Int64  // curq of the last update
	overloaded atomic.Bool
	overloads  chainCounter
	updates    chainCounter
}

// DualPI2State is a DualPI2's state as of its last update.
type DualPI2State struct {
	Prob       float64 // p′
	ProbC      float64 // p_C = (p′)²: the C queue's
	ProbL      float64 // p_CL = min(k·p′, 1): the L queue's coupled probability
	DelayC     int64   // ns: the delay the last update took, max(C, L) (the C queue's unless the L queue is overloaded)
	Overloaded bool    // k·p′ ≥ 1 with drop on overload: both queues drop with p_C
	Overloads  uint64  // updates that entered overload
	Updates    uint64
}

// NewDualPI2 returns the coupled AQM of a DualQ port whose queue
// DualQClassic is the C queue and DualQL4S the L queue.
//
// Every tupdate the PI2 controller updates p′ ← p′ + α·(curq − target) +
// β·(curq − prevq) (RFC 9332 Appendix A.1, dualpi2_update), curq being
// the larger of the two queues' delays at the update's instant, the
// sojourn of the packets then at their heads (Appendix A.2, Figure 8 line
// 2a: max(cq.time(), lq.time()), as Linux does). It is the C queue's
// delay as long as the L queue's native AQM keeps that queue short; an L
// queue overloaded by traffic that ignores its marks drives p′ into
// overload by itself (§4.2.3.1), where Appendix A.1's cq.time() alone
// would leave p′ at 0 and the L queue to the buffer's tail drop. Updates
// run when a packet of either queue leaves at or after their instant:
// every packet that left since the last was seen, so each queue's head
// then (the packet leaving, and the other queue's head) was its head at
// each instant it had arrived by, and that queue was empty at the others.
// The first update is tupdate after the first packet.
//
// A packet leaving the C queue is dropped if Not-ECT, else marked, with
// p_C (dualpi2_dequeue); one leaving the L queue is marked with
// max(native, p_CL), on one draw, where native is 1 above the step
// threshold (0 below) or the ramp's value (p_L = max(p′_L, p_CL), §2.4
// equation (4)). The coupled and classic parts act only while two MTUs
// are queued in both queues together, as in Linux (Appendix A.1 lists it
// among Linux's additions). Once k·p′ ≥ 1 — overload: §4.2.3's "drop on
// saturation", detected as Appendix A.2 does, p_CL ≥ 1, i.e. p_C ≥
// p_Cmax = 1/k² — both queues drop with p_C whatever the ECN, and the L
// packets not dropped are marked; with Overflow p′ stops at 1/k instead
// (§4.2.3's "delay on saturation", Linux's overflow) and the buffer's
// tail drop decides. Appendix A's recur() spaces marks deterministically;
// here, as in Linux, each packet draws.
//
// Where a member decides, View.Value and Threshold say what it compared:
// the sojourn (or the L queue's packets) and the step threshold for the
// native AQM, the delay of the last update and the target for the others,
// in ns.
func NewDualPI2(cfg DualPI2Config) (*DualPI2, error) {
	const scheme = "dualpi2"
	g, err := newPI2Gains(scheme, cfg.Target, cfg.TUpdate, cfg.Alpha, cfg.Beta, cfg.Coupling, cfg.Overflow)
	if err != nil {
		return nil, err
	}
	if cfg.Coupling == 0 {
		cfg.Coupling = PI2DefaultCoupling
	}
	if err := dequeueTime(scheme, "step_thresh", &cfg.StepThresh, DualPI2DefaultStepThresh); err != nil {
		return nil, err
	}
	if cfg.StepPackets < 0 || cfg.StepPackets > dualPI2PacketsMax {
		return nil, paramError(scheme, "step_thresh", "step_thresh %d packets out of range [1, %d] packets", cfg.StepPackets, dualPI2PacketsMax)
	}
	if cfg.RampRange < 0 || cfg.RampRange > dequeueTimeMax {
		return nil, paramError(scheme, "ramp_range", "ramp_range %d ns out of range [0, %d] ns", cfg.RampRange, dequeueTimeMax)
	}
	if cfg.RampRange > 0 && cfg.StepPackets > 0 {
		return nil, paramError(scheme, "ramp_range", "ramp_range is a range of sojourn times; it needs step_thresh as a time, not %d packets", cfg.StepPackets)
	}
	if cfg.MinQlenStep < 0 || cfg.MinQlenStep > dualPI2PacketsMax {
		return nil, paramError(scheme, "min_qlen_step", "min_qlen_step %d packets out of range [0, %d] packets", cfg.MinQlenStep, dualPI2PacketsMax)
	}
	if cfg.MTU == 0 {
		cfg.MTU = PI2DefaultMTU
	}
	if cfg.MTU < 0 || cfg.MTU > markMTUMax {
		return nil, paramError(scheme, "mtu", "mtu %d bytes out of range [1, %d] bytes", cfg.MTU, markMTUMax)
	}
	return &DualPI2{
		gains: g, k: cfg.Coupling, drop: !cfg.Overflow, floor: 2 * cfg.MTU,
		step: cfg.StepThresh, stepPackets: cfg.StepPackets, ramp: cfg.RampRange, minQlen: cfg.MinQlenStep,
		profile: newRedProfile(1, cfg.Seed),
	}, nil
}

// Members returns the AQM's chain members, which must sit together in
// this order in the port's dequeue chain (the first runs the controller
// for every packet): DualPI2Step, DualPI2Coupled, DualPI2Classic and
// DualPI2Overload. Every call returns new members of the same AQM.
func (d *DualPI2) Members() []Member {
	return []Member{
		{Name: DualPI2Step, Marker: &dualMember{d: d, role: roleStep}},
		{Name: DualPI2Coupled, Marker: &dualMember{d: d, role: roleCoupled}},
		{Name: DualPI2Classic, Marker: &dualMember{d: d, role: roleClassic}},
		{Name: DualPI2Overload, Marker: &dualMember{d: d, role: roleOverload}},
	}
}

// State returns the AQM's state as of its last update. Any goroutine may
// call it.
func (d *DualPI2) State() DualPI2State {
	p := math.Float64frombits(d.prob.Load())
	return DualPI2State{
		Prob: p, ProbC: p * p, ProbL: math.Min(d.k*p, 1),
		DelayC: d.delay.Load(), Overloaded: d.overloaded.Load(),
		Overloads: d.overloads.load(), Updates: d.updates.load(),
	}
}

// begin runs the updates due by the packet's departure and draws for it.
// The controller's curq is max(cq.time(), lq.time()), the sojourn of the
// older of the two heads: the packet leaving heads its queue, the peer's
// head arrived PeerSojourn ago.
func (d *DualPI2) begin(v *View) {
	head := v.EnqTime
	if v.PeerPackets > 0 {
		head = min(head, v.Now-v.PeerSojourn)
	}
	if n := d.gains.advance(&d.c, v.Now, head, true); n > 0 {
		loaded := d.drop && d.k*d.c.prob >= 1
		if loaded && !d.wasLoaded {
			d.overloads.inc()
		}
		d.wasLoaded = loaded
		d.prob.Store(math.Float64bits(d.c.prob))
		d.delay.Store(d.c.prevq)
		d.overloaded.Store(loaded)
		d.updates.n.Store(d.updates.load() + uint64(n))
	}
	p := d.c.prob
	d.pC, d.pCL = p*p, math.Min(d.k*p, 1)
	d.overload = d.wasLoaded
	d.floored = v.QueueBytes+v.PeerBytes < d.floor
	d.u = 1
	if p > 0 || d.ramp > 0 {
		d.u = d.profile.draw()
	}
}

// The parts of a DualPI2, one per member.
const (
	roleStep = iota
	roleCoupled
	roleClassic
	roleOverload
)

// dualMember is one part of a DualPI2 as a chain member.
type dualMember struct {
	d    *DualPI2
	role uint8
}

// Stage returns Dequeue, where the DualPI2 decides.
func (m *dualMember) Stage() Stage { return Dequeue }

// Needs implements Needer: the other queue.
func (m *dualMember) Needs() Need { return NeedPeer }

// Peer implements Peerer: each queue reads the other.
func (m *dualMember) Peer(q int) int {
	switch q {
	case DualQClassic:
		return DualQL4S
	case DualQL4S:
		return DualQClassic
	}
	return -1
}

// Mark decides the member's part for a packet leaving either queue.
func (m *dualMember) Mark(v *View) Verdict {
	d := m.d
	if m.role == roleStep {
		d.begin(v)
	}
	l := v.Queue == DualQL4S
	var r Verdict
	switch m.role {
	case roleStep:
		if l && d.native(v) {
			r = Mark
		}
	case roleCoupled:
		if l && !d.floored && (d.overload || d.u < d.pCL) {
			r = Mark
			v.Value, v.Threshold = d.c.prevq, d.gains.target
		}
	case roleClassic:
		if !l && !d.floored && !d.overload && d.u < d.pC {
			r = Mark
			v.Value, v.Threshold = d.c.prevq, d.gains.target
		}
	case roleOverload:
		if d.overload && !d.floored && d.u < d.pC {
			v.Value, v.Threshold = d.c.prevq, d.gains.target
			return Drop
		}
	}
	if r == Mark && v.ECN == 0 {
		return Drop // Not-ECT: the DSCP override can put one in the L queue
	}
	return r
}

// native reports whether the L queue's native AQM marks the packet
// leaving, and records what it compared.
func (d *DualPI2) native(v *View) bool {
	if v.QueuePackets+1 < d.minQlen {
		return false
	}
	if d.stepPackets > 0 {
		v.Value, v.Threshold = v.QueuePackets, d.stepPackets
		return v.QueuePackets > d.stepPackets
	}
	s := v.Sojourn()
	v.Value, v.Threshold = s, d.step
	if d.ramp > 0 {
		return d.u < float64(s-d.step)/float64(d.ramp)
	}
	return s > d.step
}
