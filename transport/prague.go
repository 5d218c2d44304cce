package transport

import "math"

// PragueGain is Prague's EWMA gain g, DCTCP's (tcp_prague.c's
// PRAGUE_SHIFT_G = 4).
const PragueGain = 1.0 / 16

// PragueTarget is the virtual RTT of Linux's TCP Prague
// (prague_rtt_target, 25 ms): with RTT independence, a flow whose RTT is
// shorter behaves as if its RTT were this.
const PragueTarget = 25_000_000 // ns

// Prague is a scalable congestion control after TCP Prague
// (draft-briscoe-iccrg-prague-congestion-control, and tcp_prague.c, its
// Linux reference), as far as a window law over this package's ACKs can
// meet RFC 9331 §4.3's requirements on a scalable sender:
//
//   - its packets are ECT(1) (RFC 9331 §4.1): the endpoint's to send;
//     transport/udp's Codepoint says so;
//   - it reacts to every mark in proportion: once per round,
//     α ← (1 − g)·α + g·F, F the round's marked fraction, g = 1/16, from
//     α = 1, and updated only once a mark has shown there is an AQM on the
//     path; on a marked ACK, at most once per round, cwnd ← cwnd·(1 − α/2)
//     (DCTCP's law, which Prague keeps);
//   - it grows by a per round, a/cwnd for every packet acknowledged
//     unmarked — marked ones add nothing, so a round adds (1 − p)·a —
//     also while a reduction's window is still being acknowledged
//     (tcp_prague.c's "Additive Increase uses unsaturated marking");
//   - on a loss it halves, at most once per window, and does not grow
//     until the window of the loss is acknowledged (Reno-friendly on
//     loss, RFC 9331 §4.3);
//   - it slow-starts until its first reduction.
//
// RTT independence (RFC 9331 §4.3 "Reduce RTT dependence";
// tcp_prague.c's default RTT_CONTROL_RATE): with a Target above the
// flow's RTT r, a round is r/Target of a virtual round of Target, which
// the law counts in rounds: N = ⌈Target/r⌉ rounds make a virtual round,
// α is updated and the window cut at most once per virtual round, and
// a = r/(Target·N) per round, so that a virtual round adds r/Target
// packets, as tcp_prague.c's (r/Target)² per round over Target/r rounds
// does. At a marking probability p the window then settles at
// W = 2·r/(Target·p) and the rate at W/r = 2/(Target·p), whatever r:
// TestPragueRTTIndependence measures it. r is the ACK's smoothed RTT
// (Ack.RTT), else its base RTT, as each virtual round begins. With Target
// 0, or an RTT at or above it, a round is a virtual round and a = 1.
//
// Left out: pacing at cwnd/RTT, the fallback to Reno-friendly on a
// classic ECN bottleneck (classic_ecn detection), fractional windows
// below MinWindow, and the 500 rounds tcp_prague.c waits after slow start
// before it turns RTT independence on.
type Prague struct {
	// Target is the virtual RTT in ns; 0 turns RTT independence off.
	Target int64

	window
	alpha     float64
	sawCE     bool
	inLoss    bool   // growth waits until the lossy window is acknowledged
	roundEnd  uint64 // the round ends with the ACK of roundEnd
	rounds    uint64 // rounds ended
	vStart    uint64 // rounds at the start of the virtual round
	vRounds   uint64 // rounds in the virtual round, N
	ai        float64
	acks, ces uint64 // packets acknowledged and marked in the virtual round
	cutAt     uint64 // rounds at the last cut, valid when cut
	cut       bool
}

// NewPrague returns Prague at InitWindow with α = 1 and virtual RTT
// target in ns (0: none).
func NewPrague(target int64) *Prague {
	return &Prague{Target: max(target, 0), window: newWindow(), alpha: 1, vRounds: 1, ai: 1}
}

// Alpha returns α.
func (p *Prague) Alpha() float64 { return p.alpha }

// Increase returns the additive increase a per round, in packets, and
// the rounds N of a virtual round, as of the current virtual round.
func (p *Prague) Increase() (a float64, rounds uint64) { return p.ai, p.vRounds }

// OnAck updates α at the end of each virtual round and the window for
// one ACK. An ACK covering n packets counts n times.
func (p *Prague) OnAck(a Ack) {
	n := a.packets()
	p.acks += n
	if a.CE {
		p.ces += n
		p.sawCE = true
	}
	if a.Seq >= p.roundEnd {
		p.rounds++
		p.roundEnd = a.Next
		if p.rounds-p.vStart >= p.vRounds {
			p.endVirtualRound(a)
		}
	}
	if p.inLoss && p.outside(a.Seq) {
		p.inLoss = false
	}
	switch {
	case a.Lost > 0:
		if p.outside(a.Seq) {
			p.reduce(0.5, a.Next)
			p.losses++
			p.inLoss = true
		}
	case a.CE:
		if p.outside(a.Seq) && (!p.cut || p.rounds-p.cutAt >= p.vRounds) {
			p.reduce(1-p.alpha/2, a.Next)
			p.marks++
			p.cut, p.cutAt = true, p.rounds
		}
	case p.inLoss:
	case p.cwnd < p.ssthresh:
		p.cwnd += float64(n)
	default:
		p.cwnd += float64(n) * p.ai / p.cwnd
	}
}

// endVirtualRound updates α with the virtual round's marked fraction,
// once a mark has been seen, and sizes the next virtual round by the
// ACK's RTT.
func (p *Prague) endVirtualRound(a Ack) {
	if p.sawCE {
		f := float64(p.ces) / float64(p.acks)
		p.alpha = (1-PragueGain)*p.alpha + PragueGain*f
	}
	p.acks, p.ces = 0, 0
	p.vStart = p.rounds
	rtt := a.RTT
	if rtt <= 0 {
		rtt = a.BaseRTT
	}
	p.vRounds, p.ai = PragueScale(rtt, p.Target)
}

// PragueScale returns, for a flow of RTT r and virtual RTT target in ns,
// the rounds N = ⌈target/r⌉ of a virtual round and the additive increase
// a = r/(target·N) per round; 1 and 1 when target is 0 or r is unknown
// (0) or at least target.
func PragueScale(r, target int64) (rounds uint64, a float64) {
	if target <= 0 || r <= 0 || r >= target {
		return 1, 1
	}
	n := uint64(math.Ceil(float64(target) / float64(r)))
	return n, float64(r) / (float64(target) * float64(n))
}
