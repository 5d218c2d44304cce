package marking

import (
	"math"

	"github.com/ecnswitch/ecnswitch/packet"
)

// SchemePI2 is PI2's name in configs (scheme: pi2).
const SchemePI2 = "pi2"

func pi2Scheme() Scheme {
	dur := leftOpen(0, float64(dequeueTimeMax))
	gain := leftOpen(0, piGainMax)
	return Scheme{
		Name:   SchemePI2,
		Title:  "PI2",
		Paper:  "RFC 9332 §2.1, §2.4, Appendix A.1",
		Doc:    "PI2: a PI controller sets p′ every tupdate from the queue delay; Classic packets are dropped (or marked) with (p′)², L4S packets (ECT(1), CE) marked with k·p′, at dequeue",
		Stages: AtDequeue,
		State:  "per queue",
		Params: []Param{
			{Key: "target", Unit: UnitDuration, Default: int64(PI2DefaultTarget), Range: dur,
				Doc: "the queue delay the PI controller steers to", Paper: "RFC 9332 Appendix A.1"},
			{Key: "tupdate", Unit: UnitDuration, Default: int64(PI2DefaultTUpdate), Range: dur,
				Doc: "Tupdate: how often p′ is updated", Paper: "RFC 9332 Appendix A.1"},
			{Key: "alpha", Unit: UnitHertz, Default: PI2DefaultAlpha, Range: gain,
				Doc: "α: the integral gain, on the delay's distance from target", Paper: "RFC 9332 Appendix A.1"},
			{Key: "beta", Unit: UnitHertz, Default: PI2DefaultBeta, Range: gain,
				Doc: "β: the proportional gain, on the delay's change since the last update", Paper: "RFC 9332 Appendix A.1"},
			{Key: "coupling_factor", Unit: UnitNumber, Default: PI2DefaultCoupling, Range: closed(1, pi2CouplingMax),
				Doc: "k: L4S packets are marked with k·p′ (tc-dualpi2 coupling_factor)", Paper: "RFC 9332 §2.1, Appendix C.2"},
			{Key: "ecn_mask", Unit: UnitChoice, Default: ECNMaskL4S.String(), Choices: []string{ECNMaskL4S.String(), ECNMaskNone.String()},
				Doc: "which packets are L4S: l4s_ect (ECT(1) and CE), or none: every packet Classic", Paper: "RFC 9331 §5.1"},
			{Key: "drop_on_overload", Unit: UnitBool, Default: true,
				Doc: "once k·p′ reaches 1, drop with (p′)² whatever the ECN (tc-dualpi2 drop_on_overload); false caps p′ at 1/k (overflow)", Paper: "RFC 9332 §4.2.3, Appendix A.2"},
			{Key: "mtu", Unit: UnitBytes, Default: int64(PI2DefaultMTU), Range: closed(1, markMTUMax),
				Doc: "no mark or drop while less than two of these are queued, as Linux's dualpi2"},
			seedParam(),
		},
		Examples: []Params{
			{},
			{"target": int64(1_000_000), "tupdate": int64(1_000_000), "ecn_mask": "none", "drop_on_overload": false},
		},
		build: func(name string, p Params, at Placement) ([]Member, error) {
			cfg := PI2Config{
				Target: p.i64("target"), TUpdate: p.i64("tupdate"), Alpha: p.f64("alpha"), Beta: p.f64("beta"),
				Coupling: p.f64("coupling_factor"), Classic: p.str("ecn_mask") == ECNMaskNone.String(),
				Overflow: p.has("drop_on_overload") && !p.flag("drop_on_overload"),
				MTU:      p.i64("mtu"), Seed: p.seed(at.Seed),
			}
			m, err := NewPI2(cfg, at.Stage, at.Queues)
			return one(name, m, err)
		},
	}
}

// PI2 defaults: tc-dualpi2(8)'s, as Linux's dualpi2_reset_default
// (net/sched/sch_dualpi2.c) sets them: target 15 ms, tupdate 16 ms,
// alpha 0.16 Hz and beta 3.2 Hz (Linux stores 41/256 and 819/256 Hz:
// "a 10dB stability margin with max_rtt=100ms"), coupling factor k = 2
// (Linux: "window fairness for equal RTTs"), drop on overload, and the
// 1514-byte MTU of an Ethernet port for the two-MTU floor. They are RFC
// 9332's: Appendix A.1's Figure 2 has target 15 ms and RTT_max 100 ms,
// Tupdate = min(target, RTT_max/3), α = 0.1·Tupdate/RTT_max² and
// β = 0.3/RTT_max, and its text "Tupdate defaults to 16 ms in the
// reference Linux implementation", which gives "alpha = 0.16; beta =
// 3.2"; Appendix C.2: "a coupling factor of k = 2 is recommended".
const (
	PI2DefaultTarget   = 15_000_000 // ns
	PI2DefaultTUpdate  = 16_000_000 // ns
	PI2DefaultAlpha    = 0.16       // Hz
	PI2DefaultBeta     = 3.2        // Hz
	PI2DefaultCoupling = 2.0        // k
	PI2DefaultMTU      = 1514       // bytes

	pi2CouplingMax = 255.0 // Linux's coupling factor is a u8
)

// ECNMask says which packets a PI2 AQM treats as L4S.
type ECNMask uint8

// ECN masks.
const (
	ECNMaskL4S  ECNMask = iota // ECT(1) and CE (RFC 9331 §5.1, tc-dualpi2 l4s_ect)
	ECNMaskAny                 // any ECN-capable packet (tc-dualpi2 any_ect; a DualQ classifier only)
	ECNMaskNone                // none: every packet is Classic
)

var ecnMaskNames = [...]string{"l4s_ect", "any_ect", "none"}

// String returns the mask's name in configs: "l4s_ect", "any_ect", "none".
func (m ECNMask) String() string {
	if int(m) < len(ecnMaskNames) {
		return ecnMaskNames[m]
	}
	return "ecn_mask(?)"
}

// L4S reports whether a packet of codepoint e is L4S under m.
func (m ECNMask) L4S(e packet.ECN) bool {
	switch m {
	case ECNMaskL4S:
		return e&1 != 0 // ECT(1) = 01 and CE = 11
	case ECNMaskAny:
		return e != 0
	}
	return false
}

// PI2Config configures a single-queue PI2 AQM (the "PI2" base AQM of RFC
// 9332 §2.1 and Appendix A.1, applied to each queue of a port). Zero
// fields take the defaults above.
type PI2Config struct {
	Target   int64   // ns; key target
	TUpdate  int64   // ns; key tupdate
	Alpha    float64 // Hz; key alpha
	Beta     float64 // Hz; key beta
	Coupling float64 // k; key coupling_factor
	// Classic treats every packet as Classic, L4S ones too; key ecn_mask:
	// none.
	Classic bool
	// Overflow keeps ECN on overload: p′ is capped at 1/k, so that L4S
	// marking stays at most 100% and the buffer's tail drop decides, as
	// tc-dualpi2's overflow; key drop_on_overload: false.
	Overflow bool
	MTU      int64  // bytes; key mtu
	Seed     uint64 // key seed
}

// pi2 is the PI controller of RFC 9332 Appendix A.1 (dualpi2_update): p′
// updated every tupdate from the queue delay, and the schedule of its
// updates, kept per queue.
type pi2 struct {
	prob    float64 // p′
	prevq   int64   // the delay of the last update, ns
	next    int64   // when the next update is due
	started bool
}

// pi2Gains are a PI controller's settings.
type pi2Gains struct {
	target, tupdate int64
	alpha, beta     float64 // per ns
	max             float64 // p′'s upper bound: 1, or 1/k with overflow
}

// update is dualpi2_update at one instant, with curq the queue delay in
// ns: p′ += α·(curq − target) + β·(curq − prevq), bounded to [0, max].
func (g *pi2Gains) update(c *pi2, curq int64) {
	p := c.prob + g.alpha*float64(curq-g.target) + g.beta*float64(curq-c.prevq)
	c.prob = math.Min(math.Max(p, 0), g.max)
	c.prevq = curq
}

// advance runs c's updates due by now, each on the delay of the queue's
// head at its instant: the head at now arrived at head (busy) and has
// been the head since the previous call, the queue empty before it
// arrived; not busy, the queue was empty since the previous call. The
// first call starts the schedule: the first update is tupdate later. It
// returns the number of updates run.
func (g *pi2Gains) advance(c *pi2, now, head int64, busy bool) int {
	if !c.started {
		c.started, c.next = true, now+g.tupdate
		return 0
	}
	n := 0
	for c.next <= now {
		u := c.next
		if (!busy || u < head) && c.prob == 0 && c.prevq == 0 {
			// At rest with the queue empty at u: every update until the
			// head arrived (or until now) leaves p′ 0.
			until := now
			if busy {
				until = head - 1
			}
			c.next += max(1, (until-u)/g.tupdate+1) * g.tupdate
			continue
		}
		var curq int64
		if busy && u >= head {
			curq = u - head
		}
		g.update(c, curq)
		c.next += g.tupdate
		n++
	}
	return n
}

// newPI2Gains validates a PI2's settings, replacing zeros by the defaults.
func newPI2Gains(scheme string, target, tupdate int64, alpha, beta, k float64, overflow bool) (pi2Gains, error) {
	if err := dequeueTime(scheme, "target", &target, PI2DefaultTarget); err != nil {
		return pi2Gains{}, err
	}
	if err := dequeueTime(scheme, "tupdate", &tupdate, PI2DefaultTUpdate); err != nil {
		return pi2Gains{}, err
	}
	if err := checkGain(scheme, "alpha", &alpha, PI2DefaultAlpha); err != nil {
		return pi2Gains{}, err
	}
	if err := checkGain(scheme, "beta", &beta, PI2DefaultBeta); err != nil {
		return pi2Gains{}, err
	}
	if k == 0 {
		k = PI2DefaultCoupling
	}
	if !(k >= 1 && k <= pi2CouplingMax) {
		return pi2Gains{}, paramError(scheme, "coupling_factor", "coupling_factor %g out of range [1, %g]", k, pi2CouplingMax)
	}
	g := pi2Gains{target: target, tupdate: tupdate, alpha: alpha / 1e9, beta: beta / 1e9, max: 1}
	if overflow {
		g.max = 1 / k
	}
	return g, nil
}

// pi2Queue is a single-queue PI2 marker: one controller per queue.
type pi2Queue struct {
	gains   pi2Gains
	k       float64
	classic bool
	drop    bool // drop on overload
	floor   int64
	queues  []pi2
	profile redProfile
}

// NewPI2 returns a PI2 marker for a port of the given number of queues,
// each with its own PI controller (RFC 9332 Appendix A.1's
// dualpi2_update, on that queue alone). The stage must be Dequeue, where
// RFC 9332's pseudocode and Linux's default (drop_dequeue) decide.
//
// Every tupdate the controller of a queue updates
//
//	p′ ← p′ + α·(curq − target) + β·(curq − prevq),   bounded to [0, 1]
//
// with curq the sojourn, at the update's instant, of the packet then at
// the head of the queue (Appendix A.1: "queuing time of first-in …
// packet"), in seconds, and α, β in Hz. Updates run when a packet leaves
// at or after their instant, all those due in turn; every packet that
// left the queue before has been seen, so the packet leaving was the
// head at each of those instants it had arrived by, and the queue empty
// at the others: the delays are exact. The first update is tupdate after
// the queue's first packet.
//
// A Classic packet (Not-ECT, ECT(0)) is dropped if Not-ECT, else marked,
// with p_C = (p′)² (RFC 9332 §2.4 equation (2), Appendix A.1's
// dualpi2_dequeue); an L4S packet (ECT(1), CE; Classic too when Classic
// is set) is marked with p_CL = k·p′ (equation (3)), the coupling of §2.4
// within one queue. Once k·p′ reaches 1 — overload: §4.2.3's "drop on
// saturation", detected as Appendix A.2 does, p_CL ≥ 1, i.e. p_C ≥
// p_Cmax = 1/k² — every packet is dropped with p_C whatever its ECN and
// the L4S packets not dropped are marked, as Linux's dualpi2 does with
// drop_on_overload; with Overflow, p′ stays at most 1/k and never
// overloads. As Linux, no packet is marked or dropped while less than two
// MTUs are queued behind the packet leaving (one of the Linux additions
// Appendix A.1 lists).
//
// Where it decides, View.Value is the delay of the last update and
// Threshold the target, in ns. Appendix A's recur() spaces marks
// deterministically; Linux draws, keeping p′ in 32-bit fixed point and
// rolling two random numbers for (p′)²; here p′ is a float64 and p_C one
// draw below (p′)², the same law as Linux's.
func NewPI2(cfg PI2Config, stage Stage, queues int) (Marker, error) {
	const scheme = SchemePI2
	if err := dequeuePlacement(scheme, stage, queues); err != nil {
		return nil, err
	}
	g, err := newPI2Gains(scheme, cfg.Target, cfg.TUpdate, cfg.Alpha, cfg.Beta, cfg.Coupling, cfg.Overflow)
	if err != nil {
		return nil, err
	}
	if cfg.Coupling == 0 {
		cfg.Coupling = PI2DefaultCoupling
	}
	if cfg.MTU == 0 {
		cfg.MTU = PI2DefaultMTU
	}
	if cfg.MTU < 0 || cfg.MTU > markMTUMax {
		return nil, paramError(scheme, "mtu", "mtu %d bytes out of range [1, %d] bytes", cfg.MTU, markMTUMax)
	}
	return &pi2Queue{
		gains: g, k: cfg.Coupling, classic: cfg.Classic, drop: !cfg.Overflow, floor: 2 * cfg.MTU,
		queues: make([]pi2, queues), profile: newRedProfile(1, cfg.Seed),
	}, nil
}

// Stage returns Dequeue, where PI2 runs.
func (m *pi2Queue) Stage() Stage { return Dequeue }

// Needs implements Needer: nothing costly; the packet leaving is its
// queue's head.
func (m *pi2Queue) Needs() Need { return 0 }

// Mark runs the updates due and decides on the packet leaving. It panics
// if v.Queue is not below the number of queues the marker was made for.
func (m *pi2Queue) Mark(v *View) Verdict {
	c := &m.queues[v.Queue]
	m.gains.advance(c, v.Now, v.EnqTime, true)
	if c.prob == 0 || v.QueueBytes < m.floor {
		return Pass
	}
	pc, pl := c.prob*c.prob, m.k*c.prob
	overload := m.drop && pl >= 1
	u := m.profile.draw()
	v.Value, v.Threshold = c.prevq, m.gains.target
	if !m.classic && ECNMaskL4S.L4S(v.ECN) {
		switch {
		case overload && u < pc:
			return Drop
		case u < pl:
			return Mark
		}
		return Pass
	}
	if u < pc {
		if overload || v.ECN == 0 {
			return Drop
		}
		return Mark
	}
	return Pass
}
