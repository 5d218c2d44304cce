package closedloop

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/transport"
)

// CC is a sender's congestion control.
type CC uint8

// Congestion controls of the sender model (see the package doc).
const (
	ECNStar CC = iota + 1 // halve the window on a mark, once per window (λ = 1)
	DCTCP                 // cwnd·(1 − α/2) with α the EWMA of the marked fraction, g = 1/16
	DX                    // 004 §IV-B on one-way queueing delay (transport.DX), blind to marks
)

// String returns "ecn*", "dctcp" or "dx".
func (c CC) String() string {
	switch c {
	case ECNStar:
		return transport.KindECNStar.String()
	case DCTCP:
		return transport.KindDCTCP.String()
	case DX:
		return transport.KindDX.String()
	}
	return fmt.Sprintf("cc(%d)", uint8(c))
}

// Scheme is the marking configuration of the bottleneck port. Every
// threshold derives from the standard threshold K = λ·C·RTT (001 §2.2
// Eq. 1) of the scenario's λ, C and high-percentile base RTT (the base RTT
// itself when every flow has the same), except CoDel's, which are the ECN♯
// paper's.
type Scheme uint8

// Schemes.
const (
	// PerPort is RED cut-off at K on the port's occupancy, at enqueue
	// (001 §2.2.3).
	PerPort Scheme = iota + 1
	// PerQueue is RED cut-off at K on each queue's occupancy, at enqueue:
	// per-queue ECN with the standard threshold (001 §2.2.1).
	PerQueue
	// PerQueueMin is per-queue ECN with the minimum threshold
	// K_i = w_i/Σw·K (001 §2.2.2 Eq. 2), at enqueue.
	PerQueueMin
	// MQECN is K_i = min(quantum_i/T_round, C)/C · K on each queue, at
	// enqueue (001 §3.3 Eq. 4–6).
	MQECN
	// PMSB marks when the port holds at least K and the queue at least
	// w_i/Σw·K (003 Algorithm 1, Eq. 5–6), at enqueue as in 003 §VI.
	PMSB
	// TCN marks at dequeue when the sojourn time exceeds T = λ·RTT
	// (000 §2.1 Eq. 1 with T = K/C; 003 Eq. 4).
	TCN
	// ECNSharp is ECN♯ by its rule of thumb (000 §3.4): ins_target =
	// λ·RTT_p90 (the high-percentile base RTT), pst_interval = RTT_p90,
	// pst_target = λ·RTT̄ with RTT̄ the average base RTT; at dequeue, on
	// sojourn time. With one base RTT all three are that RTT.
	// Scenario.PstTarget overrides pst_target.
	ECNSharp
	// CoDel is RFC 8289 marking at dequeue with the ECN♯ paper's testbed
	// values, target 85 µs and interval 200 µs (000 §5.2), its baseline
	// for base RTTs of 70–210 µs.
	CoDel
	// Unmarked marks nothing: the switch DX runs through (004 needs no
	// switch support).
	Unmarked
)

var schemeNames = [...]string{
	PerPort: "per-port", PerQueue: "per-queue standard", PerQueueMin: "per-queue minimum",
	MQECN: schemeTitle(marking.SchemeMQECN), PMSB: schemeTitle(marking.SchemePMSB), TCN: schemeTitle(marking.SchemeTCN),
	ECNSharp: schemeTitle(marking.SchemeECNSharp), CoDel: schemeTitle(marking.SchemeCoDel), Unmarked: "unmarked",
}

// schemeTitle returns the title of marking's registered scheme name.
func schemeTitle(name string) string {
	s, _ := marking.Lookup(name)
	return s.Title
}

// String returns the scheme's name as the results table prints it.
func (s Scheme) String() string {
	if int(s) < len(schemeNames) && schemeNames[s] != "" {
		return schemeNames[s]
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// Defaults of a Scenario.
const (
	DefaultRate     = 1_000_000_000          // C, bit/s (the 1 GbE testbed of 001 §5.1)
	DefaultRTT      = 250 * time.Microsecond // base RTT (001 §5.1: "∼250µs")
	DefaultWarmup   = 50 * time.Millisecond  // excluded from the measurement
	DefaultDuration = 500 * time.Millisecond // measured after the warm-up
	DefaultBuffer   = 4 << 20                // bytes in the shared pool
	DefaultStep     = time.Microsecond       // clock step while the switch holds packets
	DefaultSample   = 10 * time.Microsecond  // queue sampling period
)

// The model's fixed parameters.
const (
	hostRate     = 10_000_000_000        // bit/s of the host links
	frameLen     = 1514                  // bytes of a data frame (1500-byte IP packet)
	shaperBucket = 2500                  // bytes (001 §4.2)
	arenaFrames  = 1 << 14               // the switch's frame arena
	minCwnd      = 2.0                   // packets
	initCwnd     = 10.0                  // packets
	dctcpG       = 1.0 / 16              // DCTCP's EWMA gain g
	flowStagger  = 37 * time.Microsecond // start offset between consecutive flows
)

// Limits of a Scenario.
const (
	maxQueues    = 8                          // queues at the bottleneck port
	maxFlowsPerQ = 64                         // flows per queue
	maxDuration  = 10 * time.Second           // of warm-up plus measurement
	minStep      = 100 * time.Nanosecond      // smallest clock step
	maxStep      = 100 * time.Microsecond     // largest clock step
	minRTT       = 10 * time.Microsecond      // smallest base RTT
	maxRTT       = 100 * time.Millisecond     // largest base RTT
	maxBuffer    = arenaFrames / 2 * frameLen // bytes: the arena holds twice the buffer
	minRate      = 1_000_000                  // bit/s
	maxRate      = hostRate                   // bit/s: the host links must stay faster than C
	pstTargetMax = 10 * time.Second           // ECN♯'s pst_target
)

// Scenario is one closed-loop experiment.
type Scenario struct {
	// Name labels the scenario in results; empty means a generated name.
	Name string
	// Scheme is the bottleneck port's marking configuration.
	Scheme Scheme
	// CC is the congestion control of every flow.
	CC CC
	// Queues is the number of DWRR queues at the bottleneck port, 1 to 8,
	// with equal quanta of one MTU; 0 means len(Flows).
	Queues int
	// Flows[q] is the number of long-lived flows in queue q, each 0 to 64;
	// len(Flows) ≤ Queues. Queues without flows stay idle.
	Flows []int
	// Rate is C in bit/s; 0 means DefaultRate.
	Rate int64
	// RTT is the base RTT; 0 means DefaultRTT. The forward links carry
	// RTT/4 each and the modelled return path RTT/2.
	RTT time.Duration
	// RTTMax, when above RTT, spreads the flows' base RTTs evenly from RTT
	// to RTTMax in flow order, the RTT variation of 000 §2.3 (70–210 µs
	// in its testbed, §5.2): the forward links stay RTT/4 and each flow's
	// return path makes up the rest. 0 means every flow has RTT.
	RTTMax time.Duration
	// Lambda is λ of the standard threshold; 0 means 1.
	Lambda float64
	// PstTarget overrides ECN♯'s pst_target; 0 keeps the rule of thumb.
	PstTarget time.Duration
	// Warmup is excluded from the measurement; 0 means DefaultWarmup.
	Warmup time.Duration
	// Duration is measured after the warm-up; 0 means DefaultDuration.
	Duration time.Duration
	// Buffer is the shared pool in bytes; 0 means DefaultBuffer.
	Buffer int64
	// Step is the clock step while the switch holds packets; 0 means
	// DefaultStep.
	Step time.Duration
	// Headroom is DX's (004 §V-B): a round whose mean queueing delay is
	// below it counts as no queue. The paper sizes it to the measurement
	// noise; the model's stamps are exact, so 0 (none) is the default.
	Headroom time.Duration
}

// withDefaults validates s and fills its zero fields.
func (s Scenario) withDefaults() (Scenario, error) {
	if s.Queues == 0 {
		s.Queues = len(s.Flows)
	}
	if s.Rate == 0 {
		s.Rate = DefaultRate
	}
	if s.RTT == 0 {
		s.RTT = DefaultRTT
	}
	if s.Lambda == 0 {
		s.Lambda = 1
	}
	if s.Warmup == 0 {
		s.Warmup = DefaultWarmup
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if s.Buffer == 0 {
		s.Buffer = DefaultBuffer
	}
	if s.Step == 0 {
		s.Step = DefaultStep
	}
	switch {
	case s.Scheme < PerPort || s.Scheme > Unmarked:
		return s, fmt.Errorf("closedloop: scheme: %d is not a scheme, want 1 (per-port) to %d (unmarked)", s.Scheme, Unmarked)
	case s.CC < ECNStar || s.CC > DX:
		return s, fmt.Errorf("closedloop: cc: %d is not a congestion control, want 1 (ecn*), 2 (dctcp) or 3 (dx)", s.CC)
	case s.Headroom < 0 || s.Headroom > maxRTT:
		return s, fmt.Errorf("closedloop: headroom: %v outside [0, %v]", s.Headroom, maxRTT)
	case s.Queues < 1 || s.Queues > maxQueues:
		return s, fmt.Errorf("closedloop: queues: %d outside [1, %d]", s.Queues, maxQueues)
	case len(s.Flows) > s.Queues:
		return s, fmt.Errorf("closedloop: flows: %d queues of flows for %d queues, want at most %d", len(s.Flows), s.Queues, s.Queues)
	case s.Rate < minRate || s.Rate >= maxRate:
		return s, fmt.Errorf("closedloop: rate: %d bit/s outside [%d, %d) bit/s", s.Rate, minRate, int64(maxRate))
	case s.RTT < minRTT || s.RTT > maxRTT:
		return s, fmt.Errorf("closedloop: rtt: %v outside [%v, %v]", s.RTT, minRTT, maxRTT)
	case s.RTTMax != 0 && (s.RTTMax < s.RTT || s.RTTMax > maxRTT):
		return s, fmt.Errorf("closedloop: rtt_max: %v outside [rtt = %v, %v] (or 0: no variation)", s.RTTMax, s.RTT, maxRTT)
	case !(s.Lambda > 0 && s.Lambda <= marking.MaxLambda):
		return s, fmt.Errorf("closedloop: lambda: %g outside (0, %g]", s.Lambda, marking.MaxLambda)
	case s.PstTarget < 0 || s.PstTarget > pstTargetMax:
		return s, fmt.Errorf("closedloop: pst_target: %v outside [0, %v]", s.PstTarget, pstTargetMax)
	case s.Warmup < 0 || s.Warmup >= maxDuration:
		return s, fmt.Errorf("closedloop: warmup: %v outside [0, %v)", s.Warmup, maxDuration)
	case s.Duration <= 0 || s.Warmup+s.Duration > maxDuration:
		return s, fmt.Errorf("closedloop: duration: %v outside (0, %v] (%v minus the warm-up)", s.Duration, maxDuration-s.Warmup, maxDuration)
	case s.Buffer < frameLen || s.Buffer > maxBuffer:
		return s, fmt.Errorf("closedloop: buffer: %d bytes outside [%d, %d]", s.Buffer, frameLen, maxBuffer)
	case s.Step < minStep || s.Step > maxStep:
		return s, fmt.Errorf("closedloop: step: %v outside [%v, %v]", s.Step, minStep, maxStep)
	}
	active := 0
	for q, n := range s.Flows {
		if n < 0 || n > maxFlowsPerQ {
			return s, fmt.Errorf("closedloop: flows[%d]: %d outside [0, %d]", q, n, maxFlowsPerQ)
		}
		active += n
	}
	if active == 0 {
		return s, fmt.Errorf("closedloop: flows: %v has no flow, want at least one", s.Flows)
	}
	if s.Name == "" {
		s.Name = fmt.Sprintf("%v/%v/%v", s.Scheme, s.CC, s.Flows)
	}
	return s, nil
}

// K returns the standard threshold λ·C·RTT in bytes (001 §2.2 Eq. 1),
// with the high-percentile base RTT (RTTHigh) as current practice sets it
// (000 §2.3).
func (s Scenario) K() int64 {
	return marking.Standard(int64(s.RTTHigh()), s.Lambda).Bytes(s.Rate, frameLen)
}

// FlowRTTs returns each flow's base RTT, in flow order: RTT for every flow,
// or spread evenly from RTT to RTTMax.
func (s Scenario) FlowRTTs() []time.Duration {
	n := 0
	for _, f := range s.Flows {
		n += f
	}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = s.RTT
		if s.RTTMax > s.RTT && n > 1 {
			out[i] += (s.RTTMax - s.RTT) * time.Duration(i) / time.Duration(n-1)
		}
	}
	return out
}

// RTTHigh returns the 90th percentile (nearest rank) of the flows' base
// RTTs: the "high-percentile RTT" of ECN♯'s rule of thumb (000 §3.4) and of
// current practice's threshold (000 §2.3).
func (s Scenario) RTTHigh() time.Duration {
	rtts := s.FlowRTTs()
	if len(rtts) == 0 {
		return s.RTT
	}
	slices.Sort(rtts)
	return rtts[int(math.Ceil(0.9*float64(len(rtts))))-1]
}

// RTTMean returns the mean of the flows' base RTTs, the "average RTT" of
// ECN♯'s pst_target (000 §3.4).
func (s Scenario) RTTMean() time.Duration {
	rtts := s.FlowRTTs()
	if len(rtts) == 0 {
		return s.RTT
	}
	var sum time.Duration
	for _, r := range rtts {
		sum += r
	}
	return sum / time.Duration(len(rtts))
}

// pstTarget returns ECN♯'s pst_target in ns.
func (s Scenario) pstTarget() int64 {
	if s.PstTarget > 0 {
		return int64(s.PstTarget)
	}
	return int64(math.Round(s.Lambda * float64(s.RTTMean())))
}

// markers returns the bottleneck port's enqueue and dequeue marker specs,
// and a one-line description of the thresholds.
func (s Scenario) markers() (enq, deq []dataplane.MarkerSpec, desc string) {
	rtt := int64(s.RTTHigh())
	k := marking.Standard(rtt, s.Lambda)
	spec := func(name string, f func(queues int) (marking.Marker, error)) []dataplane.MarkerSpec {
		return []dataplane.MarkerSpec{{Name: name, New: f}}
	}
	kb := s.K()
	lrtt := int64(math.Round(s.Lambda * float64(rtt)))
	switch s.Scheme {
	case PerPort:
		return spec("red-port", func(n int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasurePort, k), marking.Enqueue, n)
		}), nil, fmt.Sprintf("port ≥ K = %d B, enqueue", kb)
	case PerQueue:
		return spec("red-queue", func(n int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, k), marking.Enqueue, n)
		}), nil, fmt.Sprintf("queue ≥ K = %d B, enqueue", kb)
	case PerQueueMin:
		return spec("red-queue-min", func(n int) (marking.Marker, error) {
			return marking.NewRED(marking.Minimum(k), marking.Enqueue, n)
		}), nil, fmt.Sprintf("queue ≥ K/%d = %d B, enqueue", s.Queues, kb/int64(s.Queues))
	case MQECN:
		return spec(marking.SchemeMQECN, func(n int) (marking.Marker, error) {
			return marking.NewMQECN(marking.MQECNConfig{RTT: rtt, Lambda: s.Lambda}, marking.Enqueue, n)
		}), nil, fmt.Sprintf("queue ≥ min(quantum/T_round, C)/C·K, K = %d B, enqueue", kb)
	case PMSB:
		return spec(marking.SchemePMSB, func(n int) (marking.Marker, error) {
			return marking.NewPMSB(marking.PMSBConfig{RTT: rtt, Lambda: s.Lambda}, marking.Enqueue, n)
		}), nil, fmt.Sprintf("port ≥ K = %d B and queue ≥ K/%d, enqueue", kb, s.Queues)
	case TCN:
		return nil, spec(marking.SchemeTCN, func(n int) (marking.Marker, error) {
			return marking.NewTCN(marking.TCNConfig{RTT: rtt, Lambda: s.Lambda}, marking.Dequeue, n)
		}), fmt.Sprintf("sojourn > λ·RTT = %v, dequeue", time.Duration(lrtt))
	case ECNSharp:
		pst := s.pstTarget()
		return nil, spec(marking.SchemeECNSharp, func(n int) (marking.Marker, error) {
			return marking.NewECNSharp(marking.ECNSharpConfig{
				InsTarget: lrtt, PstTarget: pst, PstInterval: rtt,
			}, marking.Dequeue, n)
		}), fmt.Sprintf("ins_target %v, pst_target %v, pst_interval %v, dequeue", time.Duration(lrtt), time.Duration(pst), time.Duration(rtt))
	case CoDel:
		return nil, spec(marking.SchemeCoDel, func(n int) (marking.Marker, error) {
			return marking.NewCoDel(marking.CoDelConfig{}, marking.Dequeue, n)
		}), fmt.Sprintf("target %v, interval %v (000 §5.2), dequeue", time.Duration(marking.CoDelDefaultTarget), time.Duration(marking.CoDelDefaultInterval))
	case Unmarked:
		return nil, nil, "no marking"
	}
	return nil, nil, ""
}
