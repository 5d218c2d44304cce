package marking

import (
	"math"
	"math/bits"
)

// SchemeECNSharp is ECN♯'s name in configs (scheme: ecnsharp); the
// demo's ecn-sharp is an alias.
const SchemeECNSharp = "ecnsharp"

func ecnsharpScheme() Scheme {
	dur := leftOpen(0, float64(dequeueTimeMax))
	size := closed(1, ecnsharpBytesMax)
	return Scheme{
		Name:    SchemeECNSharp,
		Aliases: []string{"ecn-sharp"},
		Title:   "ECN♯",
		Paper:   "000 §3, Algorithm 1",
		Doc:     "instantaneous marking above ins_target plus marking upon persistent queue buildups, on the sojourn time at dequeue (or the queue length, at either stage)",
		Stages:  AtEither,
		State:   "per queue",
		Params: []Param{
			{Key: "ins_target", Unit: UnitDuration, Default: int64(ECNSharpDefaultInsTarget), Range: dur,
				Doc: "instantaneous marking threshold", Paper: "000 §3.2, §3.4"},
			{Key: "pst_target", Unit: UnitDuration, Default: int64(ECNSharpDefaultPstTarget), Range: dur,
				Doc: "persistent queueing target", Paper: "000 §3.2, §3.4"},
			{Key: "pst_interval", Unit: UnitDuration, Default: int64(ECNSharpDefaultPstInterval), Range: dur,
				Doc: "time to watch a queue before calling it persistent; base spacing of persistent marks", Paper: "000 §3.2, §3.4"},
			{Key: "queue_length", Unit: UnitBool, Default: false,
				Doc: "the queue-length variant: compare the backlog in bytes, at either stage", Paper: "000 §3.5"},
			{Key: "ins_target_bytes", Unit: UnitBytes, DefaultText: "ins_target × C", Range: size,
				Doc: "queue-length variant only: the instantaneous threshold in bytes", Paper: "000 §3.2 Eq. 2"},
			{Key: "pst_target_bytes", Unit: UnitBytes, DefaultText: "pst_target × C", Range: size,
				Doc: "queue-length variant only: the persistent target in bytes", Paper: "000 §3.2 Eq. 2"},
		},
		Examples: []Params{
			{"ins_target": int64(200_000), "pst_target": int64(85_000), "pst_interval": int64(200_000)},
			{"queue_length": true, "ins_target": int64(200_000), "pst_target_bytes": int64(30_000)},
			{},
		},
		build: buildECNSharp,
	}
}

// buildECNSharp builds an ECN♯ marker.
func buildECNSharp(name string, p Params, at Placement) ([]Member, error) {
	if p.flag("queue_length") && (!p.has("ins_target_bytes") || !p.has("pst_target_bytes")) && at.LineRate == 0 {
		return nil, noRate(SchemeECNSharp, "", "convert its time targets to bytes (000 §3.2 Eq. 2) for queue_length")
	}
	m, err := NewECNSharp(ECNSharpConfig{
		InsTarget: p.i64("ins_target"), PstTarget: p.i64("pst_target"), PstInterval: p.i64("pst_interval"),
		QueueLength: p.flag("queue_length"), InsTargetBytes: p.i64("ins_target_bytes"), PstTargetBytes: p.i64("pst_target_bytes"),
	}, at.Stage, at.Queues)
	return one(name, m, err)
}

// ECN♯ defaults: the values the paper's testbed derives by its rule of
// thumb (000 §3.4) for base RTTs of 70–210 µs (000 §5.2): ins_target and
// pst_interval around the high-percentile RTT, pst_target at or above
// λ·(average RTT). (The ns-3 code's defaults are 20, 10 and 100 µs.)
const (
	ECNSharpDefaultInsTarget   = 200_000 // ns: ins_target, the instantaneous threshold
	ECNSharpDefaultPstTarget   = 85_000  // ns: pst_target, the persistent queueing target
	ECNSharpDefaultPstInterval = 200_000 // ns: pst_interval, the persistence window
	ecnsharpBytesMax           = 1 << 40 // bytes
)

// ECNSharpConfig configures ECN♯ (000 §3.2, Table 2). Zero fields take the
// defaults above.
//
// With QueueLength set, ECN♯ uses the queue's backlog instead of the
// sojourn time as its congestion signal (000 §3.5): the thresholds become
// byte counts, given directly or converted from the time targets at the
// port's line rate C by K = T·C (000 §3.2 Eq. 2, T = K/C); pst_interval
// stays a time. While C is unknown (View.LineRate = 0) a converted
// threshold is out of reach and nothing is marked on it.
type ECNSharpConfig struct {
	InsTarget   int64 // ns: instantaneous marking threshold; YAML key ins_target
	PstTarget   int64 // ns: persistent queueing target; key pst_target
	PstInterval int64 // ns: how long the queue is watched before it counts as persistent; key pst_interval

	QueueLength    bool  // use queue bytes instead of sojourn time (000 §3.5); key queue_length
	InsTargetBytes int64 // bytes, queue-length variant; 0 converts InsTarget at View.LineRate; key ins_target_bytes
	PstTargetBytes int64 // bytes, queue-length variant; 0 converts PstTarget at View.LineRate; key pst_target_bytes
}

// ecnsharpQueue holds Algorithm 1's variables (000 Table 2) for one queue.
type ecnsharpQueue struct {
	firstAboveTime int64 // when the signal first reached pst_target
	above          bool  // firstAboveTime is set; Algorithm 1 uses 0 for "unset", which a clock starting at 0 cannot
	markingState   bool  // persistent marking is on
	markingCount   int64
	markingNext    int64 // ns: time of the next persistent mark
}

// ecnsharp is ECN♯: instantaneous marking above ins_target plus marking
// upon persistent queue buildups (000 Algorithm 1), per queue.
type ecnsharp struct {
	insTarget, pstTarget, pstInterval int64 // ns

	stage              Stage
	queueLength        bool
	insBytes, pstBytes int64 // thresholds of the queue-length variant
	fixedIns, fixedPst bool  // insBytes/pstBytes were configured, not converted
	rate               int64 // the line rate insBytes/pstBytes were converted at

	queues []ecnsharpQueue
}

// NewECNSharp returns an ECN♯ marker for a port with the given number of
// queues, each with its own persistent-queue state. A packet is marked
// when either its sojourn time exceeds ins_target or Algorithm 1
// (ShouldPersistentMark) says so; Algorithm 1 runs on every packet, so its
// state sees every packet even when the instantaneous rule marks it.
//
// The sojourn-time form needs the Dequeue stage. The queue-length variant
// (QueueLength) needs no timestamp and may run at either stage; at Enqueue
// it compares the backlog the packet finds, at Dequeue the one it leaves.
func NewECNSharp(cfg ECNSharpConfig, stage Stage, queues int) (Marker, error) {
	placed := stage
	if cfg.QueueLength && stage == Enqueue {
		placed = Dequeue // the queue-length variant may run at either stage
	}
	if err := dequeuePlacement(SchemeECNSharp, placed, queues); err != nil {
		return nil, err
	}
	for _, p := range [...]struct {
		key string
		v   *int64
		def int64
	}{
		{"ins_target", &cfg.InsTarget, ECNSharpDefaultInsTarget},
		{"pst_target", &cfg.PstTarget, ECNSharpDefaultPstTarget},
		{"pst_interval", &cfg.PstInterval, ECNSharpDefaultPstInterval},
	} {
		if err := dequeueTime(SchemeECNSharp, p.key, p.v, p.def); err != nil {
			return nil, err
		}
	}
	for _, p := range [...]struct {
		key string
		v   int64
	}{
		{"ins_target_bytes", cfg.InsTargetBytes},
		{"pst_target_bytes", cfg.PstTargetBytes},
	} {
		if p.v == 0 {
			continue
		}
		if !cfg.QueueLength {
			return nil, paramError(SchemeECNSharp, p.key, "%s %d bytes needs queue_length: true", p.key, p.v)
		}
		if p.v < 0 || p.v > ecnsharpBytesMax {
			return nil, paramError(SchemeECNSharp, p.key, "%s %d bytes out of range (0, %d] bytes", p.key, p.v, int64(ecnsharpBytesMax))
		}
	}
	return &ecnsharp{
		insTarget:   cfg.InsTarget,
		pstTarget:   cfg.PstTarget,
		pstInterval: cfg.PstInterval,
		stage:       stage,
		queueLength: cfg.QueueLength,
		insBytes:    cfg.InsTargetBytes,
		pstBytes:    cfg.PstTargetBytes,
		fixedIns:    cfg.InsTargetBytes != 0,
		fixedPst:    cfg.PstTargetBytes != 0,
		rate:        -1, // convert on the first packet
		queues:      make([]ecnsharpQueue, queues),
	}, nil
}

// ecnsharpBytes converts a time threshold to bytes at a line rate:
// K = T·C (000 §3.2 Eq. 2), T in ns and C in bit/s, so K = T·C / 8e9,
// rounded down. A non-positive rate gives 0.
func ecnsharpBytes(t, rate int64) int64 {
	if rate <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(t), uint64(rate))
	// t ≤ 10 s and rate < 2^63 keep hi < 8e9, so Div64 cannot overflow.
	q, _ := bits.Div64(hi, lo, 8e9)
	if q > ecnsharpBytesMax {
		return ecnsharpBytesMax
	}
	return int64(q)
}

// ecnsharpBytesAt is ecnsharpBytes for a port whose rate may be unknown:
// while it is (rate ≤ 0) the threshold cannot be known and is
// math.MaxInt64, out of reach, so that the marker marks nothing on it
// rather than everything, as every threshold that depends on C does.
func ecnsharpBytesAt(t, rate int64) int64 {
	if rate <= 0 {
		return math.MaxInt64
	}
	return ecnsharpBytes(t, rate)
}

// Stage returns the stage the marker was made for.
func (m *ecnsharp) Stage() Stage { return m.stage }

// Mark marks the packet if its signal exceeds ins_target or Algorithm 1
// asks for a persistent mark. It panics if v.Queue is not below the number
// of queues the marker was made for.
func (m *ecnsharp) Mark(v *View) Verdict {
	signal, ins, pst := v.Sojourn(), m.insTarget, m.pstTarget
	if m.queueLength {
		if v.LineRate != m.rate {
			m.rate = v.LineRate
			if !m.fixedIns {
				m.insBytes = ecnsharpBytesAt(m.insTarget, m.rate)
			}
			if !m.fixedPst {
				m.pstBytes = ecnsharpBytesAt(m.pstTarget, m.rate)
			}
		}
		signal, ins, pst = v.QueueBytes, m.insBytes, m.pstBytes
	}
	persistent := m.shouldPersistentMark(&m.queues[v.Queue], v.Now, signal, pst)
	if signal > ins { // 000 §3.2: instantaneous marking
		v.Value, v.Threshold = signal, ins
		return Mark
	}
	if persistent {
		v.Value, v.Threshold = signal, pst
		return Mark
	}
	return Pass
}

// shouldPersistentMark is 000 Algorithm 1's ShouldPersistentMark, line by
// line, with signal in place of pkt.sojourn_time.
func (m *ecnsharp) shouldPersistentMark(q *ecnsharpQueue, now, signal, pstTarget int64) bool {
	detected := m.isPersistentQueueBuildups(q, now, signal, pstTarget)
	if q.markingState {
		if !detected {
			q.markingState = false
			return false
		} else if now > q.markingNext {
			q.markingCount++
			q.markingNext += m.pstInterval / q.markingCount
			return true
		}
		return false
	}
	if detected {
		q.markingState = true
		q.markingCount = 1
		q.markingNext = now + m.pstInterval
		return true
	}
	return false
}

// isPersistentQueueBuildups is 000 Algorithm 1's IsPersistentQueueBuildups:
// true once the signal has stayed at or above pst_target for more than
// pst_interval.
func (m *ecnsharp) isPersistentQueueBuildups(q *ecnsharpQueue, now, signal, pstTarget int64) bool {
	if signal < pstTarget {
		q.above = false // first_above_time = 0
		return false
	}
	if !q.above {
		q.above = true
		q.firstAboveTime = now
		return false
	}
	return now > q.firstAboveTime+m.pstInterval
}
