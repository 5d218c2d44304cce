package marking

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// ErrEnqueueOnly is returned by the constructors of schemes whose paper
// places them before the packet joins its queue (MQ-ECN, 001 §2.3: "RED-like
// enqueue marking") when they are asked to run at Dequeue.
var ErrEnqueueOnly = errors.New("marking: scheme needs the enqueue stage")

// ParamError is an invalid parameter given to a scheme's constructor.
// Scheme names the scheme (red, mqecn, …); Key names the parameter as the
// scheme's config and the YAML file do (kmin, pmax, rtt, …), or is empty
// when the error is about the stage, the queue count or a combination of
// parameters. Err is ErrEnqueueOnly or ErrDequeueOnly for a scheme placed
// at a stage its paper does not use, else nil.
type ParamError struct {
	Scheme string
	Key    string
	Msg    string // what is wrong: the key, the value and what is allowed
	Err    error
}

// Error returns "marking: SCHEME: MSG".
func (e *ParamError) Error() string { return "marking: " + e.Scheme + ": " + e.Msg }

// Unwrap returns Err.
func (e *ParamError) Unwrap() error { return e.Err }

func paramError(scheme, key, format string, args ...any) error {
	return &ParamError{Scheme: scheme, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// stageError reports a scheme placed at a stage its paper does not use;
// it wraps sentinel, ErrEnqueueOnly or ErrDequeueOnly.
func stageError(scheme string, sentinel error, format string, args ...any) error {
	return &ParamError{Scheme: scheme, Msg: fmt.Sprintf(format, args...) + ": " + sentinel.Error(), Err: sentinel}
}

// Measure names the occupancy a queue-length scheme compares with its
// thresholds: the packet's queue, its egress port, or the shared pool, the
// per-queue, per-port and per-service-pool ECN of commodity chips (001 §2.1,
// 003 §II-A).
type Measure uint8

// Measures.
const (
	MeasureQueue Measure = iota // View.QueueBytes
	MeasurePort                 // View.PortBytes
	MeasurePool                 // View.PoolBytes
)

func (m Measure) String() string {
	switch m {
	case MeasureQueue:
		return "queue"
	case MeasurePort:
		return "port"
	case MeasurePool:
		return "pool"
	}
	return "measure(?)"
}

// bytes returns the occupancy m reads from v.
func (m Measure) bytes(v *View) int64 {
	switch m {
	case MeasurePort:
		return v.PortBytes
	case MeasurePool:
		return v.PoolBytes
	}
	return v.QueueBytes
}

// Defaults and limits of the enqueue-side schemes.
const (
	// DefaultPMax is the maximum marking probability RED uses between K_min
	// and K_max when none is configured: 10%, as Floyd and Jacobson suggest
	// and BCC sets it (002 §IV-C).
	DefaultPMax = 0.1
	// DefaultLambda is λ when none is configured: 1, regular ECN-enabled
	// TCP that halves its window on a mark (001 §2.2 footnote 2).
	DefaultLambda = 1.0

	markQueuesMax = 1024    // the most queues one marker may serve
	markMTUMax    = 1 << 20 // bytes: the largest MTU accepted
)

// Limits every constructor enforces, exported for the YAML layer to quote.
const (
	MaxLambda = thresholdLambdaMax // the largest λ
	MaxMTU    = markMTUMax         // bytes: the largest mtu
)

// checkStage checks that stage is one of the two stages.
func checkStage(scheme string, stage Stage) error {
	if stage != Enqueue && stage != Dequeue {
		return paramError(scheme, "", "stage %d is not a stage, want enqueue or dequeue", stage)
	}
	return nil
}

// checkQueues checks the number of queues a marker serves.
func checkQueues(scheme string, queues int) error {
	if queues < 1 || queues > markQueuesMax {
		return paramError(scheme, "", "queues %d out of range [1, %d]", queues, markQueuesMax)
	}
	return nil
}

// checkPort validates the line rate and MTU a config gives for resolving
// its thresholds, replacing a zero MTU by 1500.
func checkPort(scheme string, lineRate int64, mtu *int64) error {
	if lineRate < 0 {
		return paramError(scheme, "line_rate", "line_rate %d bit/s out of range [0, ∞) (0: take C from each packet's view)", lineRate)
	}
	if *mtu == 0 {
		*mtu = defaultMTU
	}
	if *mtu < 0 || *mtu > markMTUMax {
		return paramError(scheme, "mtu", "mtu %d bytes out of range (0, %d] bytes", *mtu, markMTUMax)
	}
	return nil
}

// checkPMax validates P_max, replacing 0 by DefaultPMax.
func checkPMax(scheme string, pmax *float64) error {
	if *pmax == 0 {
		*pmax = DefaultPMax
	}
	if !(*pmax > 0 && *pmax <= 1) { // also rejects NaN
		return paramError(scheme, "pmax", "pmax %g out of range (0, 1]", *pmax)
	}
	return nil
}

// checkLambda validates λ, replacing 0 by DefaultLambda.
func checkLambda(scheme string, lambda *float64) error {
	if *lambda == 0 {
		*lambda = DefaultLambda
	}
	if !(*lambda > 0 && *lambda <= thresholdLambdaMax) {
		return paramError(scheme, "lambda", "lambda %g out of range (0, %g]", *lambda, thresholdLambdaMax)
	}
	return nil
}

// checkRTT validates an RTT in ns.
func checkRTT(scheme string, rtt int64) error {
	if rtt <= 0 || rtt > thresholdTimeMax {
		return paramError(scheme, "rtt", "rtt %d ns out of range (0, %d] ns", rtt, thresholdTimeMax)
	}
	return nil
}

// checkPair validates K_min and K_max and that K_min ≤ K_max. A pair whose
// order could depend on the line rate (one threshold in a rate-dependent
// unit, the other not) needs lineRate > 0; two rate-dependent thresholds
// both scale with C, so they are compared at 1 Gbit/s.
func checkPair(scheme string, kmin, kmax Threshold, lineRate, mtu int64) error {
	if err := kmin.check(scheme, "kmin"); err != nil {
		return err
	}
	if err := kmax.check(scheme, "kmax"); err != nil {
		return err
	}
	rate := lineRate
	if rate == 0 {
		switch {
		case kmin.RateDependent() && kmax.RateDependent():
			rate = 1e9
		case kmin.RateDependent() || kmax.RateDependent():
			return paramError(scheme, "kmin", "kmin %v and kmax %v can be ordered only at a known line rate: set line_rate > 0 or give both in the same kind of unit", kmin, kmax)
		}
	}
	lo, hi := kmin.Bytes(rate, mtu), kmax.Bytes(rate, mtu)
	if lo > hi {
		return paramError(scheme, "kmin", "kmin %v (%d bytes) above kmax %v (%d bytes): want kmin ≤ kmax", kmin, lo, kmax, hi)
	}
	return nil
}

// redProfile is RED's marking decision on an occupancy x (001 §3.4, 002
// §IV-C): below K_min never, from K_min to K_max with probability
// P_max·(x − K_min)/(K_max − K_min), at or above K_max always. With
// K_min = K_max it is DCTCP's cut-off at K. The random draw comes from the
// marker's own PCG, and only for x in [K_min, K_max), so a marker's
// decisions are a function of its seed and the occupancies it saw.
type redProfile struct {
	pmax float64
	rng  rand.PCG
}

// newRedProfile seeds the profile's generator from seed.
func newRedProfile(pmax float64, seed uint64) redProfile {
	return redProfile{pmax: pmax, rng: *rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)}
}

// decide applies the profile to x and, on Mark, records what it compared in
// v: x against K_max at or above it, x against K_min below.
func (p *redProfile) decide(v *View, x, kmin, kmax int64) Verdict {
	if x < kmin {
		return Pass
	}
	if x >= kmax {
		v.Value, v.Threshold = x, kmax
		return Mark
	}
	prob := p.pmax * float64(x-kmin) / float64(kmax-kmin)
	if p.draw() < prob {
		v.Value, v.Threshold = x, kmin
		return Mark
	}
	return Pass
}

// decideCounted is decide with Floyd and Jacobson's count correction
// (1993, Fig. 2): between K_min and K_max, count grows by one and the
// packet is marked with p_a = p_b/(1 − count·p_b), certainly when that is
// 1 or more (or the denominator is not positive); a mark sets count to 0,
// an occupancy below K_min to −1.
func (p *redProfile) decideCounted(v *View, x, kmin, kmax int64, count *int64) Verdict {
	if x < kmin {
		*count = -1
		return Pass
	}
	if x >= kmax {
		*count = 0
		v.Value, v.Threshold = x, kmax
		return Mark
	}
	*count++
	pb := p.pmax * float64(x-kmin) / float64(kmax-kmin)
	if d := 1 - float64(*count)*pb; d <= pb || p.draw() < pb/d {
		*count = 0
		v.Value, v.Threshold = x, kmin
		return Mark
	}
	return Pass
}

// draw returns a uniform random number in [0, 1) with 53 bits.
func (p *redProfile) draw() float64 { return float64(p.rng.Uint64()>>11) * 0x1p-53 }

// Parameters several schemes share, declared once, with the ranges the
// checks above enforce.

// rttParam is the RTT of the standard threshold λ·C·RTT; def says when it
// is needed.
func rttParam(def, doc string) Param {
	return Param{Key: "rtt", Unit: UnitDuration, DefaultText: def, Range: leftOpen(0, float64(thresholdTimeMax)),
		Doc: doc, Paper: "001 §2.2 Eq. 1"}
}

// lambdaParam is λ of the standard threshold λ·C·RTT, 1 by default.
func lambdaParam(doc string) Param {
	return Param{Key: "lambda", Unit: UnitNumber, Default: DefaultLambda, Range: leftOpen(0, thresholdLambdaMax),
		Doc: doc, Paper: "001 §2.2 footnote 2"}
}

// pmaxParam is RED's P_max.
func pmaxParam(doc, paper string) Param {
	return Param{Key: "pmax", Unit: UnitProbability, Default: DefaultPMax, Range: leftOpen(0, 1), Doc: doc, Paper: paper}
}

// thresholdParam is a threshold key.
func thresholdParam(key, def, doc, paper string) Param {
	return Param{Key: key, Unit: UnitThreshold, DefaultText: def, Doc: doc, Paper: paper}
}

// mtuParam is the packet size of thresholds given in packets.
func mtuParam() Param {
	return Param{Key: "mtu", Unit: UnitBytes, Default: int64(defaultMTU), Range: closed(1, markMTUMax),
		Doc: "the packet size of thresholds given in packets (20pkt)"}
}

// seedParam seeds a marker's random draws.
func seedParam() Param {
	return Param{Key: "seed", Unit: UnitSeed, DefaultText: "per port",
		Doc: "seeds the marker's own random generator: the same seeds and traffic repeat a run exactly"}
}

// measureParam is the occupancy a RED marker compares.
func measureParam() Param {
	return Param{Key: "measure", Unit: UnitChoice, Default: MeasureQueue.String(),
		Choices: []string{MeasureQueue.String(), MeasurePort.String(), MeasurePool.String()},
		Doc:     "the occupancy compared: per-queue, per-port or per-service-pool ECN", Paper: "001 §2.1, 003 §II-A"}
}

// measureOf returns the Measure named s, MeasureQueue for "".
func measureOf(s string) Measure {
	switch s {
	case MeasurePort.String():
		return MeasurePort
	case MeasurePool.String():
		return MeasurePool
	}
	return MeasureQueue
}
