package marking

import "math"

// SchemePIE is PIE's name in configs (scheme: pie).
const SchemePIE = "pie"

func pieScheme() Scheme {
	dur := leftOpen(0, float64(dequeueTimeMax))
	gain := leftOpen(0, piGainMax)
	return Scheme{
		Name:   SchemePIE,
		Title:  "PIE",
		Paper:  "RFC 8033",
		Doc:    "PIE: drop (or mark ECT) at enqueue with a probability its PI controller sets every tupdate from the queue delay",
		Stages: AtEnqueue,
		State:  "per queue",
		Params: []Param{
			{Key: "target", Unit: UnitDuration, Default: int64(PIEDefaultTarget), Range: dur,
				Doc: "QDELAY_REF: the queue delay the controller steers to", Paper: "RFC 8033 §4.2"},
			{Key: "tupdate", Unit: UnitDuration, Default: int64(PIEDefaultTUpdate), Range: dur,
				Doc: "T_UPDATE: how often the drop probability is updated", Paper: "RFC 8033 §4.2"},
			{Key: "alpha", Unit: UnitHertz, Default: PIEDefaultAlpha, Range: gain,
				Doc: "α: the gain on the delay's distance from target (tc-pie's alpha 2 in units of 1/16)", Paper: "RFC 8033 §4.2, Appendix A"},
			{Key: "beta", Unit: UnitHertz, Default: PIEDefaultBeta, Range: gain,
				Doc: "β: the gain on the delay's change since the last update (tc-pie's beta 20 in units of 1/16)", Paper: "RFC 8033 §4.2, Appendix A"},
			{Key: "max_burst", Unit: UnitDuration, Default: int64(PIEDefaultMaxBurst), Range: closed(0, float64(dequeueTimeMax)),
				Doc: "MAX_BURST: how long a burst passes untouched after the queue was calm; 0 for none", Paper: "RFC 8033 §4.4"},
			{Key: "limit", Unit: UnitPackets, Default: int64(PIEDefaultLimit), Range: closed(0, pieLimitMax),
				Doc: "tail drop when the queue holds this many packets (tc-pie limit); 0 leaves it to the buffer"},
			{Key: "ecn", Unit: UnitBool, Default: false,
				Doc: "mark ECN-capable packets instead of dropping them while the probability is at most mark_ecnth (as Linux; the RFC's pseudocode marks below it)", Paper: "RFC 8033 §5.1"},
			{Key: "mark_ecnth", Unit: UnitProbability, Default: PIEDefaultMarkECNTh, Range: closed(0, 1),
				Doc: "the probability above which PIE drops ECN-capable packets too", Paper: "RFC 8033 §5.1"},
			{Key: "bytemode", Unit: UnitBool, Default: false,
				Doc: "scale the probability by the packet's size over mean_pktsize (tc-pie bytemode)"},
			{Key: "derandomize", Unit: UnitBool, Default: true,
				Doc: "accumulate the probability over packets so that drops are evenly spaced, as Linux does", Paper: "RFC 8033 §5.4, Appendix B"},
			{Key: "mean_pktsize", Unit: UnitBytes, Default: int64(PIEDefaultMeanPktSize), Range: closed(1, markMTUMax),
				Doc: "MEAN_PKTSIZE: no drops while the queue holds at most two of these", Paper: "RFC 8033 §4.1, Appendix A"},
			seedParam(),
		},
		Examples: []Params{
			{},
			{"target": int64(5_000_000), "tupdate": int64(5_000_000), "ecn": true, "limit": int64(0)},
		},
		build: func(name string, p Params, at Placement) ([]Member, error) {
			cfg := PIEConfig{
				Target: p.i64("target"), TUpdate: p.i64("tupdate"), Alpha: p.f64("alpha"), Beta: p.f64("beta"),
				MaxBurst: zeroIsNone(p, "max_burst"), Limit: zeroIsNone(p, "limit"),
				ECN: p.flag("ecn"), MarkECNTh: p.f64("mark_ecnth"), ByteMode: p.flag("bytemode"),
				Random:      p.has("derandomize") && !p.flag("derandomize"),
				MeanPktSize: p.i64("mean_pktsize"), Seed: p.seed(at.Seed),
			}
			if p.has("mark_ecnth") && cfg.MarkECNTh == 0 {
				cfg.MarkECNTh = -1 // mark nothing
			}
			m, err := NewPIE(cfg, at.Stage, at.Queues)
			return one(name, m, err)
		},
	}
}

// PIE defaults: tc-pie(8), as Linux's pie_params_init and pie_vars_init
// (include/net/pie.h) set them, which are RFC 8033's suggested values:
// target and tupdate 15 ms (§4.2; Linux rounds tupdate up to whole
// jiffies, 16 ms at HZ=250), alpha 2 and beta 20 in units of 1/16 Hz
// (α = 0.125 Hz, β = 1.25 Hz: Appendix A's "alpha (default: 1/8), beta
// (default: 1 + 1/4)"), limit 1000 packets, ecn and bytemode off, and a
// burst allowance of 150 ms (MAX_BURST, §4.4). Linux marks instead of
// dropping up to a probability of 10% (mark_ecnth, §5.1) and never drops
// while the queue holds less than two MTUs (§4.1 and Appendix A's
// 2·MEAN_PKTSIZE).
const (
	PIEDefaultTarget      = 15_000_000  // ns: QDELAY_REF
	PIEDefaultTUpdate     = 15_000_000  // ns: T_UPDATE
	PIEDefaultAlpha       = 0.125       // Hz
	PIEDefaultBeta        = 1.25        // Hz
	PIEDefaultMaxBurst    = 150_000_000 // ns: MAX_BURST
	PIEDefaultLimit       = 1000        // packets
	PIEDefaultMarkECNTh   = 0.1         // probability
	PIEDefaultMeanPktSize = 1500        // bytes: MEAN_PKTSIZE

	pieLimitMax = 1 << 24 // packets
	piGainMax   = 1e6     // Hz: the largest α or β PIE and PI2 accept
)

// PIEConfig configures PIE (RFC 8033). Zero fields take the defaults
// above; a negative MaxBurst, Limit or MarkECNTh means none (no burst
// allowance, no limit, a threshold of 0: never mark).
type PIEConfig struct {
	Target   int64   // ns: QDELAY_REF; key target
	TUpdate  int64   // ns: T_UPDATE; key tupdate
	Alpha    float64 // Hz; key alpha
	Beta     float64 // Hz; key beta
	MaxBurst int64   // ns: the burst allowance; key max_burst (0 there: none)
	Limit    int64   // packets in the queue at which PIE tail-drops; key limit (0 there: none)
	// ECN marks an ECN-capable packet that PIE would drop, while the drop
	// probability is at most MarkECNTh (RFC 8033 §5.1, whose pseudocode
	// marks while it is below; Linux's ≤ is kept); key ecn.
	ECN       bool
	MarkECNTh float64 // key mark_ecnth
	// ByteMode scales the probability by the packet's length over
	// MeanPktSize (at most 1), as tc-pie's bytemode does; key bytemode.
	ByteMode bool
	// Random draws every packet independently, without RFC 8033 §5.4's
	// derandomization (Appendix B's drop_early), which Linux always
	// applies; key derandomize: false.
	Random      bool
	MeanPktSize int64  // bytes: MEAN_PKTSIZE; key mean_pktsize
	Seed        uint64 // seeds the marker's random draws; key seed
}

// pieQueue is one queue's PIE state (RFC 8033 Appendices A and B's
// PIE->…_).
type pieQueue struct {
	prob      float64 // drop_prob_
	qdelayOld int64   // qdelay_old_: the delay at the last update, ns
	burst     int64   // burst_allowance_, ns
	accu      float64 // accu_prob_ (§5.4)
	next      int64   // when the next update is due
	started   bool    // the queue has seen a packet: updates are scheduled
}

// pie is PIE (RFC 8033), one controller per queue, at enqueue.
type pie struct {
	target, tupdate, maxBurst int64
	alpha, beta               float64 // per ns
	limit                     int64
	ecn                       bool
	markECNTh                 float64
	byteMode, random          bool
	meanPkt                   int64
	queues                    []pieQueue
	profile                   redProfile // its random generator
}

// NewPIE returns a PIE marker for a port of the given number of queues,
// each with its own controller. PIE drops at enqueue (RFC 8033 §4.1);
// the stage must be Enqueue.
//
// Every tupdate the controller of a queue updates the drop probability
// from the queue delay, as RFC 8033 §4.2 and Appendix A do:
//
//	p = α·(qdelay − target) + β·(qdelay − qdelay_old)
//	p scaled by 1/2048, 1/512, 1/128, 1/32, 1/8, 1/2 while drop_prob is
//	    below 10⁻⁶, 10⁻⁵, 10⁻⁴, 10⁻³, 10⁻², 10⁻¹ (the auto-tuned gains)
//	p capped at 0.02 once drop_prob ≥ 0.1 (§5.5, optional in the RFC,
//	    always on in Linux and here)
//	drop_prob += p;  × 0.98 when qdelay and qdelay_old are both 0
//	drop_prob bounded to [0, 1];  qdelay_old = qdelay
//
// and the burst allowance falls by tupdate, coming back to max_burst once
// drop_prob is 0 and both delays are below target/2 (§4.4). The RFC checks
// that refill on every arrival, with the latest dequeue's delay; here it
// is checked at the updates, with their delays.
//
// This switch knows the exact enqueue time of every packet, so the delay
// is timestamp-based (§4.3, Linux's default, dq_rate_estimator off)
// rather than the dequeue rate's estimate: the sojourn at the update
// instant of the packet then at the head of the queue. Updates run when a
// packet arrives at or after their instant, all those due in turn; the
// head the arrival finds arrived before every update since the previous
// arrival, so each of them takes the delay the head had at its instant
// (0 when the queue is empty): exact when no packet left the queue
// between the instant and the arrival, else a slight underestimate. The
// first update is tupdate after the queue's first packet; the burst
// allowance starts full.
//
// A packet is not dropped while burst allowance is left, while the last
// delay is below target/2 and drop_prob below 0.2, or while the queue
// holds at most 2·mean_pktsize bytes (§4.1, Appendix A's drop_early).
// Else it is dropped with drop_prob (scaled by its size with bytemode),
// through the derandomized accumulation of §5.4 (Appendix B's drop_early)
// unless Random: no drop while the sum of the probabilities since the
// last drop is below 0.85, a sure drop from 8.5. With ecn, an ECN-capable
// packet is marked instead while drop_prob ≤ mark_ecnth (§5.1). A packet
// that finds the queue holding limit packets is dropped whatever the
// probability (tc-pie's limit).
//
// Where a drop or mark is decided, View.Value is the last delay sample
// and Threshold the target, in ns; for the limit, packets against limit.
// Linux's heuristics beyond the RFC — a +2% step when the delay passes
// 250 ms, no decay while a zero delay comes with a backlog — are left
// out, and the decay is the RFC's 0.98, not Linux's 1 − 1/64 (which the
// RFC's pseudocode allows: "1 - 1/64 is sufficient").
func NewPIE(cfg PIEConfig, stage Stage, queues int) (Marker, error) {
	const scheme = SchemePIE
	if err := checkStage(scheme, stage); err != nil {
		return nil, err
	}
	if stage != Enqueue {
		return nil, stageError(scheme, ErrEnqueueOnly, "stage %s: PIE drops on arrival (RFC 8033 §4.1)", stage)
	}
	if err := checkQueues(scheme, queues); err != nil {
		return nil, err
	}
	if err := dequeueTime(scheme, "target", &cfg.Target, PIEDefaultTarget); err != nil {
		return nil, err
	}
	if err := dequeueTime(scheme, "tupdate", &cfg.TUpdate, PIEDefaultTUpdate); err != nil {
		return nil, err
	}
	if err := checkGain(scheme, "alpha", &cfg.Alpha, PIEDefaultAlpha); err != nil {
		return nil, err
	}
	if err := checkGain(scheme, "beta", &cfg.Beta, PIEDefaultBeta); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxBurst == 0:
		cfg.MaxBurst = PIEDefaultMaxBurst
	case cfg.MaxBurst < 0:
		cfg.MaxBurst = 0
	case cfg.MaxBurst > dequeueTimeMax:
		return nil, paramError(scheme, "max_burst", "max_burst %d ns out of range [0, %d] ns", cfg.MaxBurst, dequeueTimeMax)
	}
	switch {
	case cfg.Limit == 0:
		cfg.Limit = PIEDefaultLimit
	case cfg.Limit < 0:
		cfg.Limit = 0
	case cfg.Limit > pieLimitMax:
		return nil, paramError(scheme, "limit", "limit %d packets out of range [0, %d] packets (0: no limit)", cfg.Limit, pieLimitMax)
	}
	switch {
	case cfg.MarkECNTh == 0:
		cfg.MarkECNTh = PIEDefaultMarkECNTh
	case cfg.MarkECNTh < 0:
		cfg.MarkECNTh = 0
	case !(cfg.MarkECNTh <= 1):
		return nil, paramError(scheme, "mark_ecnth", "mark_ecnth %g out of range [0, 1]", cfg.MarkECNTh)
	}
	if cfg.MeanPktSize == 0 {
		cfg.MeanPktSize = PIEDefaultMeanPktSize
	}
	if cfg.MeanPktSize < 0 || cfg.MeanPktSize > markMTUMax {
		return nil, paramError(scheme, "mean_pktsize", "mean_pktsize %d bytes out of range [1, %d] bytes", cfg.MeanPktSize, markMTUMax)
	}
	return &pie{
		target: cfg.Target, tupdate: cfg.TUpdate, maxBurst: cfg.MaxBurst,
		alpha: cfg.Alpha / 1e9, beta: cfg.Beta / 1e9,
		limit: cfg.Limit, ecn: cfg.ECN, markECNTh: cfg.MarkECNTh,
		byteMode: cfg.ByteMode, random: cfg.Random, meanPkt: cfg.MeanPktSize,
		queues:  make([]pieQueue, queues),
		profile: newRedProfile(1, cfg.Seed),
	}, nil
}

// zeroIsNone returns key's value from p, as a config that reads 0 as
// "none" gives it to a constructor that reads 0 as "the default" and a
// negative value as "none": 0 when absent, −1 for 0.
func zeroIsNone(p Params, key string) int64 {
	if v := p.i64(key); v != 0 || !p.has(key) {
		return v
	}
	return -1
}

// checkGain validates a PI gain in Hz, replacing 0 by def.
func checkGain(scheme, key string, v *float64, def float64) error {
	if *v == 0 {
		*v = def
	}
	if !(*v > 0 && *v <= piGainMax) {
		return paramError(scheme, key, "%s %g Hz out of range (0, %g] Hz", key, *v, float64(piGainMax))
	}
	return nil
}

// Stage returns Enqueue, where PIE runs.
func (m *pie) Stage() Stage { return Enqueue }

// Needs implements Needer: the head of the queue, for the delay.
func (m *pie) Needs() Need { return NeedHead }

// Mark runs the updates due and decides on the arriving packet. It panics
// if v.Queue is not below the number of queues the marker was made for.
func (m *pie) Mark(v *View) Verdict {
	q := &m.queues[v.Queue]
	m.advance(q, v)
	if m.limit > 0 && v.QueuePackets >= m.limit {
		q.accu = 0
		v.Value, v.Threshold = v.QueuePackets, m.limit
		return Drop
	}
	if !m.dropEarly(q, v) {
		return Pass
	}
	v.Value, v.Threshold = q.qdelayOld, m.target
	if m.ecn && v.ECN != 0 && q.prob <= m.markECNTh {
		return Mark
	}
	q.accu = 0
	return Drop
}

// dropEarly is RFC 8033 Appendix B's drop_early — Appendix A's with the
// derandomization of §5.4 — behind the burst allowance of §4.4: whether
// the arriving packet is to go.
func (m *pie) dropEarly(q *pieQueue, v *View) bool {
	if q.burst > 0 {
		return false
	}
	if q.qdelayOld < m.target/2 && q.prob < 0.2 || v.QueueBytes <= 2*m.meanPkt {
		return false
	}
	p := q.prob
	if m.byteMode {
		p *= float64(min(int64(v.Len), m.meanPkt)) / float64(m.meanPkt)
	}
	if !m.random {
		if p == 0 {
			q.accu = 0
		}
		q.accu += p
		switch {
		case q.accu < 0.85:
			return false
		case q.accu >= 8.5:
			return true
		}
	}
	if m.profile.draw() < p {
		q.accu = 0
		return true
	}
	return false
}

// advance runs q's updates due by v.Now, each on the delay the head of
// the queue had at its instant (see NewPIE).
func (m *pie) advance(q *pieQueue, v *View) {
	now := v.Now
	if !q.started {
		q.started, q.next, q.burst = true, now+m.tupdate, m.maxBurst
		return
	}
	head, busy := now-v.HeadSojourn, v.QueuePackets > 0
	for q.next <= now {
		u := q.next
		if (!busy || u < head) && q.prob == 0 && q.qdelayOld == 0 && q.burst == m.maxBurst && m.target > 1 {
			// At rest with the queue empty at u: every update until the
			// head arrived (or until now) leaves the state as it is.
			until := now
			if busy {
				until = head - 1
			}
			q.next += max(1, (until-u)/m.tupdate+1) * m.tupdate
			continue
		}
		var qdelay int64
		if busy && u >= head {
			qdelay = u - head
		}
		m.update(q, qdelay)
		q.next += m.tupdate
	}
}

// update is RFC 8033's calculate_drop_prob at one update instant with
// delay qdelay (ns): see NewPIE.
func (m *pie) update(q *pieQueue, qdelay int64) {
	old := q.qdelayOld
	p := m.alpha*float64(qdelay-m.target) + m.beta*float64(qdelay-old)
	switch {
	case q.prob < 0.000001:
		p /= 2048
	case q.prob < 0.00001:
		p /= 512
	case q.prob < 0.0001:
		p /= 128
	case q.prob < 0.001:
		p /= 32
	case q.prob < 0.01:
		p /= 8
	case q.prob < 0.1:
		p /= 2
	}
	if q.prob >= 0.1 && p > 0.02 {
		p = 0.02
	}
	q.prob += p
	if qdelay == 0 && old == 0 {
		q.prob *= 0.98
	}
	q.prob = math.Min(math.Max(q.prob, 0), 1)
	q.burst = max(0, q.burst-m.tupdate)
	if q.prob == 0 && qdelay < m.target/2 && old < m.target/2 {
		q.burst = m.maxBurst
	}
	q.qdelayOld = qdelay
}
