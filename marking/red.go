package marking

import "math"

// SchemeRED is RED/ECN's name in configs (scheme: red).
const SchemeRED = "red"

func redScheme() Scheme {
	return Scheme{
		Name:   SchemeRED,
		Title:  "RED",
		Paper:  "001 §2.1, §3.4; 002 §IV-B/C",
		Doc:    "RED/ECN on the queue, port or pool occupancy; with kmin = kmax, DCTCP's cut-off at K",
		Stages: AtEither,
		State:  "the EWMA average and count per queue (or port, pool), with weight or count",
		Params: []Param{
			measureParam(),
			thresholdParam("k", "—", "shorthand for kmin = kmax = k (a cut-off)", "001 §2.2 footnote 1"),
			thresholdParam("kmin", "required without k", "no marks below", "002 §IV-C"),
			thresholdParam("kmax", "kmin", "always mark at or above", "002 §IV-C"),
			pmaxParam("marking probability just below kmax", "002 §IV-C"),
			{Key: "weight", Unit: UnitNumber, Default: 0.0, Range: closed(0, 1),
				Doc: "EWMA weight w_q of RED's average occupancy; 0 compares the instantaneous occupancy"},
			{Key: "split", Unit: UnitBool, Default: false,
				Doc: "per-queue minimum threshold K_i = W_i/Σ_j W_j × K over the port's queues (measure queue only)", Paper: "001 §2.2.2 Eq. 2"},
			{Key: "count", Unit: UnitBool, Default: false,
				Doc: "original RED's p_a = p_b/(1 − count·p_b) instead of p_b alone (Floyd and Jacobson 1993, Fig. 2)"},
			mtuParam(),
			seedParam(),
		},
		Examples: []Params{
			{"measure": "port", "kmin": Bytes(40_000), "kmax": Bytes(160_000), "pmax": 0.2},
			{"k": Packets(65)},
			{"k": Packets(16), "split": true},
			{"kmin": Packets(20), "kmax": Packets(60), "weight": 0.002, "count": true},
		},
		build: buildRED,
	}
}

// buildRED builds a RED marker from its parameters.
func buildRED(name string, p Params, at Placement) ([]Member, error) {
	if p.has("k") && (p.has("kmin") || p.has("kmax")) {
		return nil, paramError(SchemeRED, "k", "k set with kmin/kmax; k sets both (a cut-off), so give k or kmin and kmax")
	}
	cfg := REDConfig{
		Measure: measureOf(p.str("measure")), KMin: p.threshold("kmin"), KMax: p.threshold("kmax"), PMax: p.f64("pmax"),
		Weight: p.f64("weight"), Split: p.flag("split"), Count: p.count(),
		LineRate: at.LineRate, MTU: p.i64("mtu"), Seed: p.seed(at.Seed),
	}
	if k := p.threshold("k"); !k.IsZero() {
		cfg.KMin, cfg.KMax = k, k
	}
	if cfg.KMin.IsZero() {
		return nil, paramError(SchemeRED, "kmin", "red needs kmin (and kmax, pmax) or k")
	}
	m, err := NewRED(cfg, at.Stage, at.Queues)
	return one(name, m, err)
}

// REDConfig configures RED/ECN marking on one occupancy (001 §2.1, §3.4;
// 002 §IV-B/C). The YAML keys are given with each field.
type REDConfig struct {
	// Measure is the occupancy compared: the packet's queue, the port or
	// the shared pool; key measure (queue, port, pool).
	Measure Measure
	// KMin and KMax are RED's low and high thresholds; keys kmin, kmax
	// (k sets both). An unset KMax equals KMin, which gives DCTCP's
	// cut-off at K (001 §2.2 footnote 1).
	KMin, KMax Threshold
	// PMax is the marking probability just below K_max, in (0, 1];
	// 0 means DefaultPMax. Unused when KMin = KMax. Key pmax.
	PMax float64
	// Weight is the EWMA weight w_q of RED's average occupancy, in [0, 1];
	// 0 compares the instantaneous occupancy (as DCTCP and BCC do). Key
	// weight.
	Weight float64
	// Count selects Floyd and Jacobson's count correction between K_min
	// and K_max; CountDefault is CountOff here (BCC's pool RED defaults to
	// CountOn). Key count (true or false).
	Count Count
	// Split turns a per-queue threshold K into the "minimum" threshold
	// K_i = W_i/Σ_j W_j·K of 001 §2.2.2 Eq. 2 (003 Eq. 2), the sum over all
	// N queues of the port, from View.Weight and View.WeightSum, applied to
	// K_min and K_max alike. Only with MeasureQueue. Key split.
	Split bool
	// LineRate is C in bit/s for resolving thresholds given as Delay or
	// Standard; 0 takes C from each packet's View.LineRate. Key line_rate,
	// filled from the port's rate by the config layer.
	LineRate int64
	// MTU is the packet size of thresholds given in Packets; 0 means 1500.
	// Key mtu.
	MTU int64
	// Seed seeds the marker's random generator; key seed.
	Seed uint64
}

// CutOff returns the config of DCTCP-style marking on occupancy m: mark
// every packet that finds at least k bytes (001 §2.2 Eq. 1 with the
// standard threshold k = Standard(rtt, λ), 002 §III-A's "standard ECN
// configuration", or per-pool with m = MeasurePool).
func CutOff(m Measure, k Threshold) REDConfig {
	return REDConfig{Measure: m, KMin: k, KMax: k}
}

// Minimum returns the config of per-queue ECN with the "minimum" threshold
// of 001 §2.2.2 Eq. 2: queue i is marked at K_i = w_i/Σw·k.
func Minimum(k Threshold) REDConfig {
	return REDConfig{Measure: MeasureQueue, KMin: k, KMax: k, Split: true}
}

// Count says how RED turns its profile p_b into a decision between K_min
// and K_max (S. Floyd and V. Jacobson, "Random Early Detection Gateways
// for Congestion Avoidance", 1993, §4 and Fig. 2).
type Count uint8

// Counts.
const (
	// CountDefault takes the scheme's default: CountOff for NewRED,
	// CountOn for BCC's pool RED, which "follows the original RED"
	// (002 §IV-B).
	CountDefault Count = iota
	// CountOff marks each packet with p_b = P_max·(x − K_min)/(K_max −
	// K_min) alone: the linear profile of WRED on switching chips (001
	// §2.1, §3.4). At a steady occupancy marks are geometrically spaced,
	// a fraction p_b of the packets.
	CountOff
	// CountOn is original RED: with count the packets since the last mark,
	// a packet is marked with p_a = p_b/(1 − count·p_b), so that the gaps
	// between marks are uniform on 1..1/p_b and about 2·p_b of the
	// packets are marked at a steady occupancy.
	CountOn
)

func (c Count) String() string {
	switch c {
	case CountDefault:
		return "default"
	case CountOff:
		return "off"
	case CountOn:
		return "on"
	}
	return "count(?)"
}

// redState is RED's state for one queue (or for the port or pool): the
// average occupancy and the count since the last mark.
type redState struct {
	avg   float64 // bytes
	last  int64   // time of the previous packet, ns
	count int64   // packets since the last mark; −1 below K_min (Floyd–Jacobson)
}

// red is RED/ECN marking on the queue, port or pool occupancy.
type red struct {
	stage      Stage
	measure    Measure
	kmin, kmax level
	split      bool
	weight     float64
	count      bool
	mtu        int64
	state      []redState // per queue for MeasureQueue, else one; nil when instantaneous without count
	profile    redProfile
}

// NewRED returns a RED marker for a port with the given number of queues,
// at either stage: RED itself does not care whether the occupancy it sees
// is the backlog a packet finds (enqueue) or leaves behind (dequeue).
//
// With Weight = 0 the marker compares the instantaneous occupancy. With
// Weight = w_q > 0 it keeps RED's exponentially weighted average (one per
// queue for MeasureQueue) and updates it on every packet it sees, before
// deciding, as Floyd and Jacobson's RED does on every arrival:
//
//	occupancy q > 0:  avg ← (1 − w_q)·avg + w_q·q
//	occupancy q = 0:  avg ← (1 − w_q)^(m+1)·avg
//
// where m = ⌊(Now − q_time)·C / (8·MTU)⌋ counts the MTU-sized packets the
// line could have sent since q_time, when the queue went idle: RED's
// idle-time rule, which lets the average decay over an idle period as if m
// empty-queue samples had been taken, and the packet's own zero sample makes
// it m+1, as ns-2's RED does (m = 0 when View.LineRate is 0). q_time is
// View.QueueEmptySince for MeasureQueue and View.PortEmptySince for
// MeasurePort, or the previous packet's time if that is later (the average
// already decayed up to it); the buffer does not report when the shared pool
// emptied, so for MeasurePool it is the previous packet's time. The
// decision then compares the average, truncated to whole bytes.
//
// With Count = CountOn, between K_min and K_max a packet is marked with
// probability p_a = p_b/(1 − count·p_b) (certainly once that reaches 1),
// where count is the number of packets since the last mark: count is −1
// below K_min, becomes 0 at a mark (also at or above K_max) and grows by
// one per packet in between, one count per average.
func NewRED(cfg REDConfig, stage Stage, queues int) (Marker, error) {
	const scheme = SchemeRED
	if err := checkStage(scheme, stage); err != nil {
		return nil, err
	}
	if err := checkQueues(scheme, queues); err != nil {
		return nil, err
	}
	if cfg.Measure > MeasurePool {
		return nil, paramError(scheme, "measure", "measure %d out of range, want queue, port or pool", cfg.Measure)
	}
	if err := checkPort(scheme, cfg.LineRate, &cfg.MTU); err != nil {
		return nil, err
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
	if !(cfg.Weight >= 0 && cfg.Weight <= 1) {
		return nil, paramError(scheme, "weight", "weight %g out of range [0, 1] (0: instantaneous)", cfg.Weight)
	}
	if cfg.Split && cfg.Measure != MeasureQueue {
		return nil, paramError(scheme, "split", "split needs measure queue, not %v", cfg.Measure)
	}
	if cfg.Count > CountOn {
		return nil, paramError(scheme, "count", "count %d out of range, want default, off or on", cfg.Count)
	}
	r := &red{
		stage:   stage,
		measure: cfg.Measure,
		kmin:    newLevel(cfg.KMin, cfg.LineRate, cfg.MTU),
		kmax:    newLevel(cfg.KMax, cfg.LineRate, cfg.MTU),
		split:   cfg.Split,
		weight:  cfg.Weight,
		count:   cfg.Count == CountOn,
		mtu:     cfg.MTU,
		profile: newRedProfile(cfg.PMax, cfg.Seed),
	}
	if cfg.Weight > 0 || r.count {
		n := 1
		if cfg.Measure == MeasureQueue {
			n = queues
		}
		r.state = make([]redState, n)
		for i := range r.state {
			r.state[i].count = -1
		}
	}
	return r, nil
}

// Stage returns the stage the marker was made for.
func (r *red) Stage() Stage { return r.stage }

// Mark decides on one packet. With an average or a count and MeasureQueue
// it panics if v.Queue is not below the number of queues the marker was
// made for.
func (r *red) Mark(v *View) Verdict {
	x := r.measure.bytes(v)
	var st *redState
	if r.state != nil {
		i := 0
		if r.measure == MeasureQueue {
			i = v.Queue
		}
		st = &r.state[i]
		if r.weight > 0 {
			x = r.average(st, v, x)
		}
	}
	kmin, kmax := r.kmin.at(v.LineRate), r.kmax.at(v.LineRate)
	if r.split && v.WeightSum > 0 {
		kmin = mulDivSat(kmin, v.Weight, v.WeightSum)
		kmax = mulDivSat(kmax, v.Weight, v.WeightSum)
	}
	if r.count {
		return r.profile.decideCounted(v, x, kmin, kmax, &st.count)
	}
	return r.profile.decide(v, x, kmin, kmax)
}

// Needs implements Needer: the port's occupancy when it measures the
// port, and the times the queue and port went idle when it averages (the
// idle rule). Thresholds need LineRate, which every View has.
func (r *red) Needs() Need {
	var n Need
	if r.measure == MeasurePort {
		n |= NeedPort
	}
	if r.weight > 0 {
		n |= NeedEmptySince
	}
	return n
}

// average folds occupancy q into st and returns the new average in bytes.
func (r *red) average(st *redState, v *View, q int64) int64 {
	if q > 0 {
		st.avg += r.weight * (float64(q) - st.avg)
	} else {
		idle := st.last // q_time: when the queue went idle, or the previous packet if later
		switch r.measure {
		case MeasureQueue:
			idle = max(idle, v.QueueEmptySince)
		case MeasurePort:
			idle = max(idle, v.PortEmptySince)
		}
		m := 0.0
		if dt := v.Now - idle; dt > 0 && v.LineRate > 0 {
			m = float64(mulDivSat(dt, v.LineRate, 8e9) / r.mtu)
		}
		st.avg *= math.Pow(1-r.weight, m+1)
	}
	st.last = v.Now
	return int64(st.avg)
}
