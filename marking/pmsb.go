package marking

// SchemePMSB is PMSB's name in configs (scheme: pmsb).
const SchemePMSB = "pmsb"

func pmsbScheme() Scheme {
	return Scheme{
		Name:   SchemePMSB,
		Title:  "PMSB",
		Paper:  "003 §IV, Algorithm 1",
		Doc:    "per-port marking with selective blindness: port ≥ port_threshold and queue ≥ weight_i/weight_sum × port_threshold",
		Stages: AtEither,
		State:  "none",
		Params: []Param{
			thresholdParam("port_threshold", "C·RTT·λ", "port_threshold; the queue's filter threshold is its weight share of it", "003 Eq. 5–6"),
			rttParam("required without port_threshold", "RTT of the default port_threshold"),
			lambdaParam("λ of the default port_threshold"),
			mtuParam(),
		},
		Examples: []Params{
			{"port_threshold": Packets(12)},
			{"rtt": int64(100_000)},
		},
		build: buildPMSB,
	}
}

// buildPMSB builds a PMSB marker.
func buildPMSB(name string, p Params, at Placement) ([]Member, error) {
	if !p.has("port_threshold") && p.has("rtt") && at.LineRate == 0 {
		return nil, noRate(SchemePMSB, "", "resolve the default port_threshold λ·C·RTT (003 Eq. 5)")
	}
	m, err := NewPMSB(PMSBConfig{
		PortThreshold: p.threshold("port_threshold"), RTT: p.i64("rtt"), Lambda: p.f64("lambda"),
		LineRate: at.LineRate, MTU: p.i64("mtu"),
	}, at.Stage, at.Queues)
	return one(name, m, err)
}

// PMSBConfig configures PMSB, per-port marking with selective blindness
// (003 §IV, Algorithm 1).
type PMSBConfig struct {
	// PortThreshold is port_threshold; key port_threshold. Unset, it is
	// C·RTT·λ (003 Eq. 5) from RTT and Lambda.
	PortThreshold Threshold
	// RTT in ns and Lambda (0 means 1) give the default port threshold;
	// keys rtt, lambda.
	RTT    int64
	Lambda float64
	// LineRate is C in bit/s for resolving the threshold; 0 takes C from
	// each packet's View.LineRate. Key line_rate.
	LineRate int64
	// MTU is the packet size of a threshold given in Packets; 0 means
	// 1500. Key mtu.
	MTU int64
}

// pmsb is 003 Algorithm 1.
type pmsb struct {
	stage Stage
	port  level
}

// NewPMSB returns a PMSB marker (003 Algorithm 1) for a port with the given
// number of queues, at either stage (003 §IV-C: at dequeue the congestion
// signal leaves earlier). It marks a packet iff
//
//	port_length ≥ port_threshold   and
//	queue_length_i ≥ queue_threshold_i = weight_i / weight_sum × port_threshold   (003 Eq. 6)
//
// with port_length = View.PortBytes, queue_length_i = View.QueueBytes and
// the weights View.Weight and View.WeightSum, weight_sum being "the sum of
// all queues' weights in port p" (003 Table II), across strict and weighted
// levels. So it works over any scheduler that reports weights — SP, WFQ,
// WRR, DWRR (003 §IV-C); for DWRR the weights may be the quanta, only their
// ratio matters. A View with WeightSum = 0 (no weights reported) gets the
// port threshold as its filter threshold. On Mark, View.Value and
// View.Threshold are the queue occupancy and its filter threshold.
//
// Theorem IV.1 (003 §IV-D) bounds the thresholds from below: to avoid
// throughput loss, queue_threshold_i should exceed weight_i / weight_sum ×
// C·RTT / 7, i.e. port_threshold > C·RTT/7.
func NewPMSB(cfg PMSBConfig, stage Stage, queues int) (Marker, error) {
	const scheme = SchemePMSB
	if err := checkStage(scheme, stage); err != nil {
		return nil, err
	}
	if err := checkQueues(scheme, queues); err != nil {
		return nil, err
	}
	if err := checkPort(scheme, cfg.LineRate, &cfg.MTU); err != nil {
		return nil, err
	}
	if cfg.PortThreshold.IsZero() {
		if err := checkRTT(scheme, cfg.RTT); err != nil {
			return nil, err
		}
		if err := checkLambda(scheme, &cfg.Lambda); err != nil {
			return nil, err
		}
		cfg.PortThreshold = Standard(cfg.RTT, cfg.Lambda)
	} else if cfg.RTT != 0 || cfg.Lambda != 0 {
		return nil, paramError(scheme, "port_threshold", "port_threshold %v given together with rtt %d ns and lambda %g: give one or the other", cfg.PortThreshold, cfg.RTT, cfg.Lambda)
	}
	if err := cfg.PortThreshold.check(scheme, "port_threshold"); err != nil {
		return nil, err
	}
	return &pmsb{stage: stage, port: newLevel(cfg.PortThreshold, cfg.LineRate, cfg.MTU)}, nil
}

// Stage returns the stage the marker was made for.
func (m *pmsb) Stage() Stage { return m.stage }

// Mark is 003 Algorithm 1.
func (m *pmsb) Mark(v *View) Verdict {
	pt := m.port.at(v.LineRate)
	if v.PortBytes < pt {
		return Pass
	}
	qt := pt
	if v.WeightSum > 0 {
		qt = mulDivSat(pt, v.Weight, v.WeightSum)
	}
	if v.QueueBytes >= qt {
		v.Value, v.Threshold = v.QueueBytes, qt
		return Mark
	}
	return Pass
}

// IgnoreMark is PMSB(e), the end-host variant of PMSB (003 §V,
// Algorithm 2), for a sender behind per-port marking: it reports whether
// the sender should ignore the congestion signal of an ACK. marked says
// whether the ACK echoes a CE mark (ECE); curRTT is the RTT the ACK
// measured and rttThreshold the sender's threshold, both in ns. A mark is
// honoured only when the RTT shows the sender's own queue is long:
//
//	ignore_mark = not is_mark  or  cur_rtt < rtt_threshold
//
// When marked is false there is no signal and IgnoreMark returns true, as
// Algorithm 2 does.
func IgnoreMark(marked bool, curRTT, rttThreshold int64) bool {
	return !marked || curRTT < rttThreshold
}
