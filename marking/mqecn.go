package marking

import (
	"math/bits"
)

// SchemeMQECN is MQ-ECN's name in configs (scheme: mqecn); the demo's
// mq-ecn is an alias.
const SchemeMQECN = "mqecn"

func mqecnScheme() Scheme {
	return Scheme{
		Name:    SchemeMQECN,
		Aliases: []string{"mq-ecn"},
		Title:   "MQ-ECN",
		Paper:   "001 §3",
		Doc:     "per-queue ECN whose threshold follows the round-robin scheduler's round time: K_i = min(quantum_i/T_round, C)·RTT·λ",
		Stages:  AtEnqueue,
		State:   "none (T_round comes from the scheduler)",
		Params: []Param{
			rttParam("required without kmin", "RTT of the standard threshold C·RTT·λ"),
			lambdaParam("λ of the standard threshold"),
			thresholdParam("kmin", "C·RTT·λ", "K_min of the probabilistic variant", "001 §3.4"),
			thresholdParam("kmax", "kmin", "K_max of the probabilistic variant", "001 §3.4"),
			pmaxParam("P_max = P_i,max of the probabilistic variant", "001 §3.4"),
			mtuParam(),
			seedParam(),
		},
		Examples: []Params{
			{"rtt": int64(100_000)},
			{"kmin": Bytes(50_000), "kmax": Bytes(150_000), "pmax": 0.1},
		},
		build: buildMQECN,
	}
}

// buildMQECN builds an MQ-ECN marker.
func buildMQECN(name string, p Params, at Placement) ([]Member, error) {
	if at.LineRate == 0 {
		return nil, noRate(SchemeMQECN, "", "scale its threshold by the round time (001 §3.2.2 Eq. 5)")
	}
	m, err := NewMQECN(MQECNConfig{
		RTT: p.i64("rtt"), Lambda: p.f64("lambda"), KMin: p.threshold("kmin"), KMax: p.threshold("kmax"),
		PMax: p.f64("pmax"), LineRate: at.LineRate, MTU: p.i64("mtu"), Seed: p.seed(at.Seed),
	}, at.Stage, at.Queues)
	return one(name, m, err)
}

// MQECNConfig configures MQ-ECN (001 §3), per-queue marking whose
// threshold follows the round-robin scheduler's round time. The parameters
// are named as in the paper; β, the round time's EWMA weight (001 §3.3.1
// Eq. 6), belongs to the scheduler, which reports T_round in
// View.RoundTime.
type MQECNConfig struct {
	// RTT is the average round-trip time in ns of the standard threshold
	// K = C·RTT·λ (001 §2.2 Eq. 1); key rtt. Needed unless KMin is set.
	RTT int64
	// Lambda is λ, set by the end hosts' congestion control; 0 means 1
	// (001 §2.2 footnote 2). Key lambda.
	Lambda float64
	// KMin and KMax are the low and high standard thresholds of the
	// probabilistic variant (001 §3.4), with PMax; keys kmin, kmax, pmax.
	// Unset, both are C·RTT·λ and the marking is a cut-off (Eq. 5). An
	// unset KMax equals KMin.
	KMin, KMax Threshold
	// PMax is P_max = P_i,max of the probabilistic variant; 0 means
	// DefaultPMax. Key pmax.
	PMax float64
	// LineRate is C in bit/s for resolving KMin and KMax; 0 takes C from
	// each packet's View.LineRate, as the scaling below always does. Key
	// line_rate.
	LineRate int64
	// MTU is the packet size of thresholds given in Packets; 0 means 1500.
	// Key mtu.
	MTU int64
	// Seed seeds the probabilistic variant's random generator; key seed.
	Seed uint64
}

// mqecn is MQ-ECN: RED on the queue occupancy with per-queue thresholds
// scaled by min(quantum_i / (C·T_round), 1).
type mqecn struct {
	kmin, kmax level
	profile    redProfile
}

// NewMQECN returns an MQ-ECN marker (001 §3) for a port with the given
// number of queues. The stage must be Enqueue: MQ-ECN is RED-like enqueue
// marking (001 §2.3). It keeps no per-queue state; T_round and quantum_i
// come from the scheduler through the View.
//
// For a packet of queue i it compares the instantaneous queue occupancy
// View.QueueBytes with
//
//	K_i = min(quantum_i / T_round, C) × RTT × λ          (001 §3.2.2 Eq. 5)
//
// and marks at or above it, computed as K_i = ⌊K·f_i⌋ with K = C·RTT·λ and
// f_i = min(quantum_i·8e9 / (C·T_round), 1) — quantum_i in bytes, T_round in
// ns, C in bit/s — which is Eq. 5 in whole bytes. With KMin < KMax it is the probabilistic variant of 001 §3.4:
// K_i,min = K_min·f_i, K_i,max = K_max·f_i, P_i,max = P_max, where f_i is
// the paper's min(quantum_i / (C·T_round), 1).
//
// Under WFQ, which has no round (View.Quantum = 0 with a View.Weight),
// f_i is w_i/w_sum, "the standard ECN marking threshold" divided among the
// backlogged queues by weight (001 §3.4):
//
//	K_i = w_i / w_sum × C × RTT × λ
//
// with w_i = View.Weight and w_sum the weights of the non-empty WFQ queues
// (View.BusyWeightSum), counting the packet's own queue, which the packet
// makes backlogged. w_sum is taken as it stands at each packet; 001 §3.4
// notes it "can also be updated using exponential filter like T_round",
// which this does not do.
//
// f_i is 1 — the static standard threshold — for a queue served at strict
// priority above the weighted level (View.Strict, 001 §3.4), when T_round
// is not known yet (View.RoundTime = 0), when the scheduler reports neither
// a quantum nor a weight, and when View.LineRate is 0 — in which case
// thresholds that depend on C (the default C·RTT·λ among them) are unknown
// and nothing is marked.
func NewMQECN(cfg MQECNConfig, stage Stage, queues int) (Marker, error) {
	const scheme = SchemeMQECN
	if stage == Dequeue {
		return nil, stageError(scheme, ErrEnqueueOnly, "stage %v: MQ-ECN is RED-like enqueue marking (001 §2.3)", stage)
	}
	if err := checkStage(scheme, stage); err != nil {
		return nil, err
	}
	if err := checkQueues(scheme, queues); err != nil {
		return nil, err
	}
	if err := checkPort(scheme, cfg.LineRate, &cfg.MTU); err != nil {
		return nil, err
	}
	if cfg.KMin.IsZero() {
		if !cfg.KMax.IsZero() {
			return nil, paramError(scheme, "kmax", "kmax %v given without kmin", cfg.KMax)
		}
		if err := checkRTT(scheme, cfg.RTT); err != nil {
			return nil, err
		}
		if err := checkLambda(scheme, &cfg.Lambda); err != nil {
			return nil, err
		}
		cfg.KMin = Standard(cfg.RTT, cfg.Lambda)
	} else if cfg.RTT != 0 || cfg.Lambda != 0 {
		return nil, paramError(scheme, "kmin", "kmin %v given together with rtt %d ns and lambda %g: give one or the other", cfg.KMin, cfg.RTT, cfg.Lambda)
	}
	if cfg.KMax.IsZero() {
		cfg.KMax = cfg.KMin
	}
	if err := checkPair(scheme, cfg.KMin, cfg.KMax, cfg.LineRate, cfg.MTU); err != nil {
		return nil, err
	}
	if err := checkPMax(scheme, &cfg.PMax); err != nil {
		return nil, err
	}
	return &mqecn{
		kmin:    newLevel(cfg.KMin, cfg.LineRate, cfg.MTU),
		kmax:    newLevel(cfg.KMax, cfg.LineRate, cfg.MTU),
		profile: newRedProfile(cfg.PMax, cfg.Seed),
	}, nil
}

// Stage returns Enqueue.
func (m *mqecn) Stage() Stage { return Enqueue }

// Mark decides on one packet by its queue's dynamic threshold.
func (m *mqecn) Mark(v *View) Verdict {
	c := v.LineRate
	kmin, kmax := m.kmin.at(c), m.kmax.at(c)
	switch {
	case v.Strict || c <= 0:
	case v.Quantum > 0:
		if v.RoundTime <= 0 {
			break
		}
		// The queue's rate over the last rounds, quantum_i/T_round, is its
		// weighted fair share (001 §3.2.1); below C it scales K.
		qhi, qlo := bits.Mul64(uint64(v.Quantum), 8e9)
		chi, clo := bits.Mul64(uint64(c), uint64(v.RoundTime))
		if qhi < chi || (qhi == chi && qlo < clo) {
			kmin = mqecnScale(kmin, v.Quantum, v.RoundTime, c)
			kmax = mqecnScale(kmax, v.Quantum, v.RoundTime, c)
		}
	case v.Weight > 0:
		// WFQ: the backlogged queues share K by weight (001 §3.4).
		wsum := v.BusyWeightSum
		if v.QueueBytes == 0 {
			wsum += v.Weight
		}
		if wsum > v.Weight {
			kmin = mulDivSat(kmin, v.Weight, wsum)
			kmax = mulDivSat(kmax, v.Weight, wsum)
		}
	}
	return m.profile.decide(v, v.QueueBytes, kmin, kmax)
}

// mqecnScale returns ⌊k·quantum·8e9 / (c·tround)⌋ for a ratio
// quantum·8e9/(c·tround) below 1: exactly in 128-bit integers when k·quantum
// and c·tround fit in 64 bits (any port up to 1.6 Tbit/s with T_round under
// 10 ms), else in floating point.
func mqecnScale(k, quantum, tround, c int64) int64 {
	kqhi, kq := bits.Mul64(uint64(k), uint64(quantum))
	dhi, d := bits.Mul64(uint64(c), uint64(tround))
	if kqhi == 0 && dhi == 0 {
		hi, lo := bits.Mul64(kq, 8e9)
		if hi < d {
			q, _ := bits.Div64(hi, lo, d)
			return int64(q)
		}
	}
	return int64(float64(k) * (float64(quantum) * 8e9 / (float64(c) * float64(tround))))
}
