package marking

import (
	"fmt"
	"math"
)

// SchemeBCC is BCC's name in configs (scheme: bcc).
const SchemeBCC = "bcc"

func bccScheme() Scheme {
	return Scheme{
		Name:   SchemeBCC,
		Title:  "BCC",
		Paper:  "002 §IV",
		Doc:    "per-port standard ECN plus RED on the shared pool's occupancy, its thresholds derived from the buffer model; two members, NAME-port and NAME-pool",
		Stages: AtEither,
		State:  "the pool RED's count",
		Params: []Param{
			thresholdParam("port_threshold", "C·RTT·λ", "the per-port standard ECN cut-off", "002 §III-A"),
			{Key: "per_queue", Unit: UnitBool, Default: false,
				Doc: "compare port_threshold with the queue's occupancy instead of the port's", Paper: "002 §V-A"},
			thresholdParam("kmin", "derived", "the pool RED's K_min by hand (leave kmin and kmax out to derive them)", "002 §IV-C Eq. 3"),
			thresholdParam("kmax", "derived, or kmin", "the pool RED's K_max by hand", "002 §IV-B Eq. 2"),
			pmaxParam("the pool RED's P_max", "002 §IV-C"),
			{Key: "count", Unit: UnitBool, Default: true,
				Doc: "the pool RED's count correction p_a = p_b/(1 − count·p_b), original RED; false marks with p_b", Paper: "002 §IV-B"},
			{Key: "pool_size", Unit: UnitBytes, DefaultText: "the pool's size", Range: above(0), Doc: "B, the shared pool's size", Paper: "002 Eq. 1"},
			{Key: "alpha", Unit: UnitNumber, DefaultText: "the pool's α", Range: leftOpen(0, bccAlphaMax),
				Doc: "the Dynamic Threshold α of the pool's queues (the smallest, with several)", Paper: "002 Eq. 1"},
			rttParam("required to derive", "base RTT"),
			lambdaParam("λ"),
			{Key: "reserve", Unit: UnitBytes, DefaultText: "the port's reserve", Range: atLeast(0),
				Doc: "S_min, the port's static reserved buffer", Paper: "002 §V-A"},
			{Key: "ports", Unit: UnitCount, DefaultText: "the ports on the pool", Range: closed(1, bccPortsMax),
				Doc: "N, the ports (egress queues) sharing the pool", Paper: "002 Table II"},
			{Key: "h", Unit: UnitDuration, Default: int64(BCCDefaultH), Range: leftOpen(0, float64(thresholdTimeMax)),
				Doc: "sets K_max − K_min = C·N·h", Paper: "002 §IV-C"},
			mtuParam(),
			seedParam(),
		},
		Examples: []Params{
			{"rtt": int64(80_000), "lambda": 0.72},
			{"port_threshold": Bytes(325_000), "kmin": Bytes(500_000), "kmax": Bytes(500_000)},
		},
		build: buildBCC,
	}
}

// buildBCC builds BCC's two members, name-port and name-pool. B, S_min,
// α and N default to the placement's pool (002 §IV-C, §V-A).
func buildBCC(name string, p Params, at Placement) ([]Member, error) {
	cfg := BCCConfig{
		PortThreshold: p.threshold("port_threshold"), PerQueue: p.flag("per_queue"),
		KMin: p.threshold("kmin"), KMax: p.threshold("kmax"), PMax: p.f64("pmax"), Count: p.count(),
		PoolSize: at.Pool.Size, Alpha: at.Pool.Alpha, Reserve: at.Pool.Reserve, Ports: at.Pool.Ports,
		RTT: p.i64("rtt"), Lambda: p.f64("lambda"), H: p.i64("h"),
		LineRate: at.LineRate, MTU: p.i64("mtu"), Seed: p.seed(at.Seed),
	}
	if p.has("pool_size") {
		cfg.PoolSize = p.i64("pool_size")
	}
	if p.has("alpha") {
		cfg.Alpha = p.f64("alpha")
	}
	if p.has("reserve") {
		cfg.Reserve = p.i64("reserve")
	}
	if p.has("ports") {
		cfg.Ports = int(p.i64("ports"))
	}
	deriving := !p.has("kmin") && !p.has("kmax")
	if deriving && cfg.Alpha == 0 {
		return nil, paramError(SchemeBCC, "alpha", "bcc derives its pool thresholds from the Dynamic Threshold α, but every queue of pool %q has a static cap; set alpha, or kmin and kmax", at.Pool.Name)
	}
	if (deriving || (!p.has("port_threshold") && p.has("rtt"))) && at.LineRate == 0 {
		return nil, noRate(SchemeBCC, "", "derive its thresholds from C·RTT (002 §IV-C)")
	}
	ms, err := NewBCC(cfg, at.Stage, at.Queues)
	if err != nil {
		return nil, err
	}
	ms[0].Name, ms[1].Name = name+"-port", name+"-pool"
	return ms, nil
}

// BCC defaults and limits.
const (
	// BCCDefaultH is h, the time that sets K_max − K_min = C·N·h: 8 µs
	// (002 §IV-C).
	BCCDefaultH = 8000 // ns
	bccAlphaMax = 1024.0
	bccPortsMax = 4096
)

// BCCConfig configures BCC (002 §IV): per-port standard ECN plus RED on
// the shared pool's occupancy. The pool thresholds are either set by hand
// (KMin, KMax) or derived from the buffer model (PoolSize, Alpha, RTT,
// Lambda, Reserve, Ports, H, LineRate) by Derive.
type BCCConfig struct {
	// PortThreshold is the per-port standard ECN threshold K, a cut-off;
	// unset, it is C·RTT·λ (002 §III-A). Key port_threshold.
	PortThreshold Threshold
	// PerQueue compares PortThreshold with the queue's occupancy instead
	// of the port's ("per-port (queue)", 002 §V-A). Key per_queue.
	PerQueue bool

	// KMin and KMax are the shared-pool RED thresholds when set by hand;
	// an unset KMax equals KMin. Leave both unset to derive them. Keys
	// kmin, kmax.
	KMin, KMax Threshold
	// PMax is the pool RED's P_max; 0 means 10% (002 §IV-C). Key pmax.
	PMax float64
	// Count is the pool RED's count correction. CountDefault is CountOn:
	// shared buffer ECN/RED "follows the original RED" (002 §IV-B), whose
	// marking probability is p_a = p_b/(1 − count·p_b); CountOff marks with
	// p_b alone. Key count.
	Count Count

	// PoolSize is B, the shared pool's size in bytes; key pool_size.
	PoolSize int64
	// Alpha is the Dynamic Threshold α of the pool's queues (002 Eq. 1);
	// with several, the smallest. Key alpha.
	Alpha float64
	// RTT is the base round-trip time in ns; key rtt.
	RTT int64
	// Lambda is λ; 0 means 1. Key lambda.
	Lambda float64
	// Reserve is S_min, each port's static reserved (private) buffer in
	// bytes (002 §V-A); key reserve.
	Reserve int64
	// Ports is N, the number of ports (egress queues) sharing the pool
	// (002 Table II, §V-A); key ports.
	Ports int
	// H is h in ns; 0 means BCCDefaultH. Key h.
	H int64
	// LineRate is C in bit/s; needed to derive the pool thresholds and
	// for thresholds given as Delay or Standard (0 then takes C from each
	// View). Key line_rate.
	LineRate int64
	// MTU is the packet size of thresholds given in Packets; 0 means
	// 1500. Key mtu.
	MTU int64
	// Seed seeds the pool RED's random generator; key seed.
	Seed uint64
}

// BCCParams are the shared-pool RED parameters of BCC in bytes.
type BCCParams struct {
	BR         int64   // B_R, the buffer one port needs (002 §IV-C)
	KMin, KMax int64   // the pool RED's thresholds
	PMax       float64 // the pool RED's maximum probability
}

// Derive computes BCC's shared-pool RED parameters from the buffer model
// (002 §IV-B/C, with the static reserve of §V-A):
//
//	B_R   = C·RTT·(1+λ) − S_min              (§IV-C; − S_min per §V-A)
//	K_max = B − B_R/α                        (§IV-B Eq. 2, §IV-C)
//	K_min = B − B_R/α − C·N·h = K_max − C·N·h (§IV-C Eq. 3)
//	P_max = 10% unless configured            (§IV-C)
//
// C·RTT and C·h are ⌊C·t/8e9⌋ bytes; the products with 1+λ and 1/α are
// rounded to whole bytes. A reserve that alone covers C·RTT·(1+λ) gives
// B_R = 0. For the evaluation's values (C = 100 Gbit/s, RTT = 80 µs,
// λ = 0.72, S_min = 128 KB, B = 3 MB, α = 4, N = 8, h = 8 µs) this gives
// B_R ≈ 1.6 MB, K_max ≈ 2.6 MB and K_min ≈ 1.8 MB, as 002 §V-A does.
func (cfg BCCConfig) Derive() (BCCParams, error) {
	const scheme = SchemeBCC
	if cfg.LineRate <= 0 {
		return BCCParams{}, paramError(scheme, "line_rate", "line_rate %d bit/s out of range (0, ∞): deriving kmin and kmax needs C", cfg.LineRate)
	}
	if err := checkRTT(scheme, cfg.RTT); err != nil {
		return BCCParams{}, err
	}
	if err := checkLambda(scheme, &cfg.Lambda); err != nil {
		return BCCParams{}, err
	}
	if err := checkPMax(scheme, &cfg.PMax); err != nil {
		return BCCParams{}, err
	}
	if cfg.PoolSize <= 0 {
		return BCCParams{}, paramError(scheme, "pool_size", "pool_size %d bytes out of range (0, ∞)", cfg.PoolSize)
	}
	if !(cfg.Alpha > 0 && cfg.Alpha <= bccAlphaMax) {
		return BCCParams{}, paramError(scheme, "alpha", "alpha %g out of range (0, %g]", cfg.Alpha, bccAlphaMax)
	}
	if cfg.Reserve < 0 {
		return BCCParams{}, paramError(scheme, "reserve", "reserve %d bytes out of range [0, ∞)", cfg.Reserve)
	}
	if cfg.Ports < 1 || cfg.Ports > bccPortsMax {
		return BCCParams{}, paramError(scheme, "ports", "ports %d out of range [1, %d]", cfg.Ports, bccPortsMax)
	}
	if cfg.H == 0 {
		cfg.H = BCCDefaultH
	}
	if cfg.H < 0 || cfg.H > thresholdTimeMax {
		return BCCParams{}, paramError(scheme, "h", "h %d ns out of range (0, %d] ns", cfg.H, thresholdTimeMax)
	}
	bdp := mulDivSat(cfg.LineRate, cfg.RTT, 8e9)
	br := max(int64(math.Round(float64(bdp)*(1+cfg.Lambda)))-cfg.Reserve, 0)
	kmax := cfg.PoolSize - int64(math.Round(float64(br)/cfg.Alpha))
	if kmax <= 0 {
		return BCCParams{}, paramError(scheme, "pool_size", "pool_size %d bytes must exceed B_R/α = %d/%g bytes (002 Eq. 2): K_max = B − B_R/α would be %d", cfg.PoolSize, br, cfg.Alpha, kmax)
	}
	span := mulDivSat(mulDivSat(cfg.LineRate, cfg.H, 8e9), int64(cfg.Ports), 1)
	kmin := kmax - span
	if kmin < 0 {
		return BCCParams{}, paramError(scheme, "", "K_min = K_max − C·N·h = %d − %d < 0 bytes (002 Eq. 3): lower h (%d ns) or ports (%d)", kmax, span, cfg.H, cfg.Ports)
	}
	return BCCParams{BR: br, KMin: kmin, KMax: kmax, PMax: cfg.PMax}, nil
}

// Names of the members NewBCC returns.
const (
	BCCPortMember = SchemeBCC + "-port"
	BCCPoolMember = SchemeBCC + "-pool"
)

// NewBCC returns BCC (002 §IV-B) as the two members to put in a port's
// chain, which marks a packet "if anyone decides to mark it":
//
//   - BCCPortMember: per-port standard ECN, a cut-off at PortThreshold on
//     View.PortBytes (View.QueueBytes with PerQueue);
//   - BCCPoolMember: shared-buffer ECN/RED on the instantaneous pool
//     occupancy View.PoolBytes (002 §IV-C), with K_min, K_max, P_max set by
//     hand or derived (Derive), and original RED's count correction unless
//     Count is CountOff (002 §IV-B).
//
// BCC marks at the egress (002 §V-B footnote 4); either stage is accepted.
func NewBCC(cfg BCCConfig, stage Stage, queues int) ([]Member, error) {
	const scheme = SchemeBCC
	if err := checkStage(scheme, stage); err != nil {
		return nil, err
	}
	if err := checkQueues(scheme, queues); err != nil {
		return nil, err
	}
	if err := checkPort(scheme, cfg.LineRate, &cfg.MTU); err != nil {
		return nil, err
	}
	port := cfg.PortThreshold
	if port.IsZero() {
		if err := checkRTT(scheme, cfg.RTT); err != nil {
			if pe, ok := err.(*ParamError); ok {
				pe.Msg += " (needed for the default port_threshold C·RTT·λ)"
			}
			return nil, err
		}
		lambda := cfg.Lambda
		if err := checkLambda(scheme, &lambda); err != nil {
			return nil, err
		}
		port = Standard(cfg.RTT, lambda)
	}
	if err := port.check(scheme, "port_threshold"); err != nil {
		return nil, err
	}
	pool := REDConfig{Measure: MeasurePool, LineRate: cfg.LineRate, MTU: cfg.MTU, Seed: cfg.Seed, Count: cfg.Count}
	if pool.Count == CountDefault {
		pool.Count = CountOn
	}
	if cfg.KMin.IsZero() {
		if !cfg.KMax.IsZero() {
			return nil, paramError(scheme, "kmax", "kmax %v given without kmin", cfg.KMax)
		}
		p, err := cfg.Derive()
		if err != nil {
			return nil, err
		}
		pool.KMin, pool.KMax, pool.PMax = Bytes(p.KMin), Bytes(p.KMax), p.PMax
	} else {
		if cfg.KMax.IsZero() {
			cfg.KMax = cfg.KMin
		}
		if err := checkPair(scheme, cfg.KMin, cfg.KMax, cfg.LineRate, cfg.MTU); err != nil {
			return nil, err
		}
		if err := checkPMax(scheme, &cfg.PMax); err != nil {
			return nil, err
		}
		pool.KMin, pool.KMax, pool.PMax = cfg.KMin, cfg.KMax, cfg.PMax
	}
	measure := MeasurePort
	if cfg.PerQueue {
		measure = MeasureQueue
	}
	portCfg := CutOff(measure, port)
	portCfg.LineRate, portCfg.MTU = cfg.LineRate, cfg.MTU
	pm, err := NewRED(portCfg, stage, queues)
	if err != nil {
		return nil, fmt.Errorf("marking: bcc: port: %w", err)
	}
	rm, err := NewRED(pool, stage, queues)
	if err != nil {
		return nil, fmt.Errorf("marking: bcc: pool: %w", err)
	}
	return []Member{{Name: BCCPortMember, Marker: pm}, {Name: BCCPoolMember, Marker: rm}}, nil
}
