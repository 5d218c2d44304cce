package marking

import (
	"errors"
	"math"
)

// SchemeTCN is TCN's name in configs (scheme: tcn).
const SchemeTCN = "tcn"

func tcnScheme() Scheme {
	dur := leftOpen(0, float64(dequeueTimeMax))
	return Scheme{
		Name:   SchemeTCN,
		Title:  "TCN",
		Paper:  "000 §2.1, §3.2",
		Doc:    "mark every packet whose sojourn time exceeds T = λ·RTT, at dequeue, under any scheduler",
		Stages: AtDequeue,
		State:  "none",
		Params: []Param{
			{Key: "threshold", Unit: UnitDuration, Default: int64(TCNDefaultThreshold), Range: dur,
				Doc: "T; a packet is marked iff sojourn > T (default: the TCN kernel module's tcn_thresh, 250 × 1024 ns)", Paper: "000 §2.1 Eq. 1"},
			{Key: "lambda", Unit: UnitNumber, DefaultText: "required with rtt", Range: leftOpen(0, tcnLambdaMax),
				Doc: "λ of the hosts' congestion control: 1 for ECN-enabled TCP, 0.17 for DCTCP in theory", Paper: "000 §2.1"},
			{Key: "rtt", Unit: UnitDuration, DefaultText: "required with lambda", Range: dur,
				Doc: "the base RTT T = λ·RTT is derived from; a high percentile in current practice", Paper: "000 §2.3, §3.2 Eq. 2"},
		},
		Examples: []Params{
			{"threshold": int64(150_000)},
			{"lambda": 1.0, "rtt": int64(150_000)},
			{},
		},
		build: func(name string, p Params, at Placement) ([]Member, error) {
			m, err := NewTCN(TCNConfig{Threshold: p.i64("threshold"), Lambda: p.f64("lambda"), RTT: p.i64("rtt")}, at.Stage, at.Queues)
			return one(name, m, err)
		},
	}
}

// ErrDequeueOnly is returned by the constructors of schemes that decide on
// a packet's sojourn time (TCN, CoDel, ECN♯), which is known only when the
// scheduler has picked the packet, when they are asked to run at Enqueue.
var ErrDequeueOnly = errors.New("marking: scheme needs the dequeue stage")

// dequeueTimeMax is the longest time parameter the dequeue-side schemes
// accept, 10 s in ns.
const dequeueTimeMax = int64(10e9)

// dequeuePlacement checks that a sojourn-time scheme is placed at Dequeue
// and serves a sane number of queues.
func dequeuePlacement(scheme string, stage Stage, queues int) error {
	switch stage {
	case Dequeue:
	case Enqueue:
		return stageError(scheme, ErrDequeueOnly, "stage %s: the sojourn time is known only at dequeue", stage)
	default:
		return stageError(scheme, ErrDequeueOnly, "stage %d is not a stage, want dequeue", stage)
	}
	return checkQueues(scheme, queues)
}

// dequeueTime checks one time parameter in nanoseconds, in (0, 10 s]. A
// zero value means "use the default" and is replaced by def.
func dequeueTime(scheme, key string, v *int64, def int64) error {
	if *v == 0 {
		*v = def
	}
	if *v < 0 || *v > dequeueTimeMax {
		return paramError(scheme, key, "%s %d ns out of range (0, %d] ns", key, *v, dequeueTimeMax)
	}
	return nil
}

// TCN defaults.
const (
	// TCNDefaultThreshold is T = 250×1024 ns ≈ 256 µs, the default of the
	// TCN kernel module (tcn_thresh, in units of 1024 ns) at 1 Gbit/s.
	TCNDefaultThreshold = 250 * 1024
	tcnLambdaMax        = 16.0
)

// TCNConfig configures TCN: mark a packet at dequeue when its sojourn time
// exceeds T. T is given either directly (Threshold) or as λ·RTT (Lambda and
// RTT), the sojourn-time form T = K/C = λ·RTT of the ideal threshold
// K = λ·C·RTT (000 §2.1 Eq. 1, §3.2 Eq. 2). A zero config uses
// TCNDefaultThreshold.
type TCNConfig struct {
	Threshold int64   // T in ns; YAML key threshold
	Lambda    float64 // λ of the end hosts' congestion control, e.g. 1 for ECN*, 0.17 for DCTCP; key lambda
	RTT       int64   // base RTT in ns (000 §3.4 suggests a high percentile); key rtt
}

// tcn marks every packet whose sojourn time exceeds a fixed threshold. It
// keeps no state, so it works under any scheduler (000 §3.5; TCN).
type tcn struct {
	threshold int64 // T, ns
}

// NewTCN returns a TCN marker for a port with the given number of queues.
// TCN is stateless: each packet is marked iff Now − EnqTime > T, whatever
// queue it is in and whatever scheduler served it. The stage must be
// Dequeue.
func NewTCN(cfg TCNConfig, stage Stage, queues int) (Marker, error) {
	if err := dequeuePlacement(SchemeTCN, stage, queues); err != nil {
		return nil, err
	}
	t, err := cfg.threshold()
	if err != nil {
		return nil, err
	}
	return &tcn{threshold: t}, nil
}

// threshold validates cfg and returns T in ns.
func (cfg TCNConfig) threshold() (int64, error) {
	derived := cfg.Lambda != 0 || cfg.RTT != 0
	if cfg.Threshold != 0 && derived {
		return 0, paramError(SchemeTCN, "threshold", "threshold %d ns given together with lambda %g and rtt %d ns: give one or the other", cfg.Threshold, cfg.Lambda, cfg.RTT)
	}
	if !derived {
		t := cfg.Threshold
		if err := dequeueTime(SchemeTCN, "threshold", &t, TCNDefaultThreshold); err != nil {
			return 0, err
		}
		return t, nil
	}
	if !(cfg.Lambda > 0 && cfg.Lambda <= tcnLambdaMax) { // also rejects NaN
		return 0, paramError(SchemeTCN, "lambda", "lambda %g out of range (0, %g]", cfg.Lambda, tcnLambdaMax)
	}
	if cfg.RTT <= 0 || cfg.RTT > dequeueTimeMax {
		return 0, paramError(SchemeTCN, "rtt", "rtt %d ns out of range (0, %d] ns", cfg.RTT, dequeueTimeMax)
	}
	t := int64(math.Round(cfg.Lambda * float64(cfg.RTT)))
	if t < 1 || t > dequeueTimeMax {
		return 0, paramError(SchemeTCN, "", "lambda·rtt = %d ns out of range (0, %d] ns", t, dequeueTimeMax)
	}
	return t, nil
}

// Stage returns Dequeue, where TCN runs.
func (m *tcn) Stage() Stage { return Dequeue }

// Mark marks the packet iff its sojourn time exceeds T.
func (m *tcn) Mark(v *View) Verdict {
	s := v.Sojourn()
	if s > m.threshold {
		v.Value, v.Threshold = s, m.threshold
		return Mark
	}
	return Pass
}
