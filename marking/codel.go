package marking

import "math"

// SchemeCoDel is CoDel's name in configs (scheme: codel).
const SchemeCoDel = "codel"

func codelScheme() Scheme {
	dur := leftOpen(0, float64(dequeueTimeMax))
	return Scheme{
		Name:   SchemeCoDel,
		Title:  "CoDel",
		Paper:  "RFC 8289; 000 §3.5, §5.1",
		Doc:    "CoDel's control law marking CE instead of dropping, at dequeue: the ECN♯ paper's baseline",
		Stages: AtDequeue,
		State:  "per queue",
		Params: []Param{
			{Key: "target", Unit: UnitDuration, Default: int64(CoDelDefaultTarget), Range: dur,
				Doc: "acceptable standing sojourn time; must be below interval", Paper: "000 §5.2"},
			{Key: "interval", Unit: UnitDuration, Default: int64(CoDelDefaultInterval), Range: dur,
				Doc: "how long the sojourn time must stay above target; the control law's base spacing", Paper: "000 §5.2"},
			{Key: "max_packet", Unit: UnitBytes, Default: int64(CoDelDefaultMaxPacket), Range: closed(1, codelMaxPacketMax),
				Doc: "a backlog left behind of at most this many bytes counts as below target (the module's largest wire packet)", Paper: "RFC 8289 §5"},
		},
		Examples: []Params{
			{},
			{"target": int64(102_400), "interval": int64(2_048_000), "max_packet": int64(1538)},
		},
		build: func(name string, p Params, at Placement) ([]Member, error) {
			m, err := NewCoDel(CoDelConfig{Target: p.i64("target"), Interval: p.i64("interval"), MaxPacket: p.i64("max_packet")}, at.Stage, at.Queues)
			return one(name, m, err)
		},
	}
}

// CoDel defaults: the baseline of the ECN♯ paper's testbed, "For CoDel, we
// set interval to be 200µs and target to be 85µs" (000 §5.2, base RTTs of
// 70–210 µs), so that an ECN♯-versus-CoDel run compares the paper's
// schemes by default, and max_packet the largest Ethernet frame on the wire
// (1538 bytes, as the MQ-ECN/TCN kernel module). docs/marking.md lists the
// other published values: the ECN♯ incast simulation's (000 §5.4), the
// kernel module's (codel_target = 100, codel_interval = 2000 units of
// 1024 ns) and RFC 8289's Internet defaults (5 ms, 100 ms).
const (
	CoDelDefaultTarget    = 85_000  // ns: target, 000 §5.2
	CoDelDefaultInterval  = 200_000 // ns: interval, 000 §5.2
	CoDelDefaultMaxPacket = 1538    // bytes: max_packet
	codelMaxPacketMax     = 1 << 20 // bytes
	codelReuseIntervals   = 16      // RFC 8289 §5: re-use count if re-entering within 16 intervals
)

// CoDelConfig configures CoDel in ECN-marking mode. Zero fields take the
// defaults above.
type CoDelConfig struct {
	Target    int64 // ns: acceptable standing sojourn time; YAML key target
	Interval  int64 // ns: how long the sojourn time must stay above Target; key interval
	MaxPacket int64 // bytes: a backlog left behind of at most this much counts as below target; key max_packet
}

// codelQueue is RFC 8289's per-queue state (§5), with "dropping" read as
// "marking".
type codelQueue struct {
	firstAboveTime int64 // when the sojourn time will have been above target for an interval
	above          bool  // firstAboveTime is set; RFC 8289 uses 0 for "unset", which a clock starting at 0 cannot
	dropNext       int64 // time of the next mark
	count          uint32
	lastCount      uint32
	dropping       bool // in the marking state
}

// codel is CoDel (RFC 8289) marking CE instead of dropping, one state
// machine per queue, the baseline the ECN♯ paper compares with (000 §3.5,
// §5.1).
type codel struct {
	target, interval, maxPacket int64
	queues                      []codelQueue
}

// NewCoDel returns a CoDel marker for a port with the given number of
// queues, each with its own state. It follows RFC 8289's pseudocode
// (§5, dequeue and dodequeue) with one packet per decision: where the RFC drops the packet
// and dequeues the next one, CoDel here marks the packet and returns, so
// at most one packet is marked per call, as Linux's codel_dequeue does with
// ECN. The stage must be Dequeue.
//
// The count re-use heuristic is implemented as in the RFC's (Linux)
// version: on entering the marking state, if the previous marking episode
// grew count by delta > 1 and now − drop_next < 16·interval, marking
// resumes with count = delta instead of 1.
func NewCoDel(cfg CoDelConfig, stage Stage, queues int) (Marker, error) {
	if err := dequeuePlacement(SchemeCoDel, stage, queues); err != nil {
		return nil, err
	}
	if err := dequeueTime(SchemeCoDel, "target", &cfg.Target, CoDelDefaultTarget); err != nil {
		return nil, err
	}
	if err := dequeueTime(SchemeCoDel, "interval", &cfg.Interval, CoDelDefaultInterval); err != nil {
		return nil, err
	}
	if cfg.Target >= cfg.Interval {
		return nil, paramError(SchemeCoDel, "target", "target %d ns must be below interval %d ns", cfg.Target, cfg.Interval)
	}
	if cfg.MaxPacket == 0 {
		cfg.MaxPacket = CoDelDefaultMaxPacket
	}
	if cfg.MaxPacket < 0 || cfg.MaxPacket > codelMaxPacketMax {
		return nil, paramError(SchemeCoDel, "max_packet", "max_packet %d bytes out of range (0, %d] bytes", cfg.MaxPacket, codelMaxPacketMax)
	}
	return &codel{
		target:    cfg.Target,
		interval:  cfg.Interval,
		maxPacket: cfg.MaxPacket,
		queues:    make([]codelQueue, queues),
	}, nil
}

// Stage returns Dequeue, where CoDel runs.
func (m *codel) Stage() Stage { return Dequeue }

// controlLaw is RFC 8289's control_law: t + interval/√count.
func (m *codel) controlLaw(t int64, count uint32) int64 {
	return t + int64(float64(m.interval)/math.Sqrt(float64(count)))
}

// okToMark is RFC 8289's dodequeue without the dequeue: it reports whether
// the sojourn time has stayed at or above target for at least an interval.
func (m *codel) okToMark(q *codelQueue, v *View, sojourn int64) bool {
	if sojourn < m.target || v.QueueBytes <= m.maxPacket {
		// Went below: stay below for at least an interval.
		q.above = false
		return false
	}
	if !q.above {
		// Just went above from below; if still above at
		// firstAboveTime, it is ok to mark.
		q.above = true
		q.firstAboveTime = v.Now + m.interval
		return false
	}
	return v.Now >= q.firstAboveTime
}

// Mark runs RFC 8289's dequeue for the packet's queue and marks the packet
// where the RFC would drop it. It panics if v.Queue is not below the number
// of queues the marker was made for.
func (m *codel) Mark(v *View) Verdict {
	q := &m.queues[v.Queue]
	now, sojourn := v.Now, v.Sojourn()
	ok := m.okToMark(q, v, sojourn)
	if q.dropping {
		if !ok {
			// Sojourn time below target: leave the marking state.
			q.dropping = false
			return Pass
		}
		if now >= q.dropNext {
			q.count++
			q.dropNext = m.controlLaw(q.dropNext, q.count)
			v.Value, v.Threshold = sojourn, m.target
			return Mark
		}
		return Pass
	}
	if !ok {
		return Pass
	}
	// Above target for an interval: enter the marking state.
	q.dropping = true
	delta := q.count - q.lastCount
	q.count = 1
	if delta > 1 && now-q.dropNext < codelReuseIntervals*m.interval {
		q.count = delta
	}
	q.dropNext = m.controlLaw(now, q.count)
	q.lastCount = q.count
	v.Value, v.Threshold = sojourn, m.target
	return Mark
}
