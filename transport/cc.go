package transport

import "fmt"

// Window limits, in packets.
const (
	MinWindow  = 2.0  // no law takes a window below two packets
	InitWindow = 10.0 // the window a flow starts with
)

// DCTCPGain is DCTCP's EWMA gain g.
const DCTCPGain = 1.0 / 16

// Ack is what a sender learns from one ACK.
type Ack struct {
	// Seq is the sequence number (in packets) the ACK acknowledges.
	Seq uint64
	// Next is the sequence number the sender will send next: a round that
	// starts now ends with the ACK of Next.
	Next uint64
	// CE says the ACK echoes a congestion mark.
	CE bool
	// Lost counts packets the receiver reported missing before Seq.
	Lost uint64
	// Queue is the queueing delay measured for the acknowledged packet,
	// in ns (timestamp.Delay); DX's feedback.
	Queue int64
	// BaseRTT is the smallest RTT measured so far, in ns: DX's R.
	BaseRTT int64
	// RTT is the sender's smoothed RTT, in ns, 0 if it has none yet:
	// Prague's r.
	RTT int64
	// Packets is how many data packets the ACK covers (a receiver that
	// coalesces ACKs, 004 §V-A "LRO handling"); 0 counts as 1. Queue is
	// then their mean, and the laws count the ACK as that many.
	Packets uint64
	// Hops are the in-band telemetry records of the packet Seq names,
	// one per hop, first hop first; HPCC's feedback. The slice is valid
	// during OnAck only.
	Hops []Hop
}

// packets returns how many data packets a covers, at least 1.
func (a Ack) packets() uint64 { return max(a.Packets, 1) }

// Controller is a window-based congestion control.
type Controller interface {
	// OnAck updates the window for one ACK.
	OnAck(a Ack)
	// Window returns the congestion window, in packets.
	Window() float64
	// Reductions returns how many times the window shrank for
	// congestion (marks or delay), and for losses.
	Reductions() (congestion, loss uint64)
}

// Kind names a congestion control.
type Kind uint8

// Congestion controls.
const (
	KindECNStar Kind = iota + 1
	KindDCTCP
	KindDX
	KindHPCC
	KindPrague
)

// String returns "ecn*", "dctcp", "dx", "hpcc" or "prague".
func (k Kind) String() string {
	switch k {
	case KindECNStar:
		return "ecn*"
	case KindDCTCP:
		return "dctcp"
	case KindDX:
		return "dx"
	case KindHPCC:
		return "hpcc"
	case KindPrague:
		return "prague"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind parses a congestion control's name, as Kind.String gives it
// ("ecn*" also as "ecnstar").
func ParseKind(s string) (Kind, error) {
	switch s {
	case "ecn*", "ecnstar":
		return KindECNStar, nil
	case "dctcp":
		return KindDCTCP, nil
	case "dx":
		return KindDX, nil
	case "hpcc":
		return KindHPCC, nil
	case "prague":
		return KindPrague, nil
	}
	return 0, fmt.Errorf("transport: congestion control %q: want dx, dctcp, hpcc, prague or ecn*", s)
}

// New returns a controller of kind k; headroom is DX's, in ns (ignored by
// the others). HPCC takes its parameters from NewHPCC instead; Prague
// comes without RTT independence (NewPrague(0)).
func New(k Kind, headroom int64) (Controller, error) {
	switch k {
	case KindECNStar:
		return NewECNStar(), nil
	case KindDCTCP:
		return NewDCTCP(), nil
	case KindDX:
		if headroom < 0 {
			return nil, fmt.Errorf("transport: dx headroom %d ns: must be ≥ 0", headroom)
		}
		return NewDX(headroom), nil
	case KindHPCC:
		return nil, fmt.Errorf("transport: hpcc needs its parameters: use NewHPCC")
	case KindPrague:
		return NewPrague(0), nil
	}
	return nil, fmt.Errorf("transport: congestion control %d: want %d (ecn*), %d (dctcp), %d (dx) or %d (prague)", k, KindECNStar, KindDCTCP, KindDX, KindPrague)
}

// window is the state the TCP-like laws share: slow start, additive
// increase, and at most one reduction per window of data.
type window struct {
	cwnd, ssthresh float64
	recover        uint64 // a reduction needs an ACK of a sequence ≥ recover
	marks, losses  uint64
}

func newWindow() window { return window{cwnd: InitWindow, ssthresh: 1e18} }

func (w *window) Window() float64                       { return w.cwnd }
func (w *window) Reductions() (congestion, loss uint64) { return w.marks, w.losses }
func (w *window) outside(seq uint64) bool               { return seq >= w.recover }
func (w *window) reduce(factor float64, next uint64) {
	w.cwnd = max(w.cwnd*factor, MinWindow)
	w.ssthresh = w.cwnd
	w.recover = next
}

// grow is slow start below ssthresh, else one packet per window, for n
// packets acknowledged (appropriate byte counting, RFC 3465, in packets).
func (w *window) grow(n uint64) {
	if w.cwnd < w.ssthresh {
		w.cwnd += float64(n)
	} else {
		w.cwnd += float64(n) / w.cwnd
	}
}

// ECNStar is regular ECN TCP: halve on a mark or a loss, at most once per
// window; otherwise slow start, then one packet per round trip.
type ECNStar struct{ window }

// NewECNStar returns ECN* at InitWindow.
func NewECNStar() *ECNStar { return &ECNStar{newWindow()} }

// OnAck updates the window.
func (e *ECNStar) OnAck(a Ack) {
	switch {
	case !e.outside(a.Seq):
	case a.Lost > 0:
		e.reduce(0.5, a.Next)
		e.losses++
	case a.CE:
		e.reduce(0.5, a.Next)
		e.marks++
	default:
		e.grow(a.packets())
	}
}

// DCTCP cuts the window by half the marked fraction's moving average α.
type DCTCP struct {
	window
	alpha          float64
	winEnd         uint64 // the observation window ends with the ACK of winEnd
	winAcks, winCE uint64
}

// NewDCTCP returns DCTCP at InitWindow with α = 1 (Linux's default).
func NewDCTCP() *DCTCP { return &DCTCP{window: newWindow(), alpha: 1} }

// Alpha returns α.
func (d *DCTCP) Alpha() float64 { return d.alpha }

// OnAck updates α once per window of ACKs and the window. α's fraction
// counts packets: an ACK covering n of them counts n times.
func (d *DCTCP) OnAck(a Ack) {
	n := a.packets()
	d.winAcks += n
	if a.CE {
		d.winCE += n
	}
	if a.Seq >= d.winEnd {
		f := float64(d.winCE) / float64(d.winAcks)
		d.alpha = (1-DCTCPGain)*d.alpha + DCTCPGain*f
		d.winAcks, d.winCE = 0, 0
		d.winEnd = a.Next
	}
	switch {
	case !d.outside(a.Seq):
	case a.Lost > 0:
		d.reduce(0.5, a.Next)
		d.losses++
	case a.CE:
		d.reduce(1-d.alpha/2, a.Next)
		d.marks++
	default:
		d.grow(n)
	}
}

// DX is 004 §IV-B's window law. Once per round trip — a round ends with
// the ACK of the first packet sent after it began — Q is the mean of the
// round's queueing delays:
//
//	Q = 0 or Q < headroom:  cwnd ← cwnd + 1
//	otherwise:              cwnd ← W*·(1 − Q/V),  V = R·W*/(W* − 1)   (Eq. 1, Eq. 8)
//
// with W* the window of the round that saw Q and R the base RTT. The
// headroom absorbs measurement noise and the instant queueing of packets
// that meet at the switch (§V-B, "Practical considerations"). Until the
// first round with Q ≥ headroom the window doubles every round trip, as
// slow start does (the paper builds DX into Linux TCP, which keeps slow
// start). Losses and timeouts leave the window alone (§IV-B): DX takes
// only delay as congestion.
type DX struct {
	Headroom int64 // ns

	cwnd     float64
	slow     bool
	roundEnd uint64
	qSum     int64
	qN       int64
	lastQ    int64
	rounds   uint64
	cuts     uint64
}

// NewDX returns DX at InitWindow with the given headroom, in ns.
func NewDX(headroom int64) *DX { return &DX{Headroom: headroom, cwnd: InitWindow, slow: true} }

// Window returns the window.
func (d *DX) Window() float64 { return d.cwnd }

// Reductions returns the rounds that cut the window; DX never cuts for loss.
func (d *DX) Reductions() (congestion, loss uint64) { return d.cuts, 0 }

// LastQ returns the Q of the last round that ended, in ns.
func (d *DX) LastQ() int64 { return d.lastQ }

// Rounds returns how many rounds have ended.
func (d *DX) Rounds() uint64 { return d.rounds }

// OnAck adds the ACK's queueing delay to the round, once for every packet
// it covers (§V-A: an ACK covering several packets carries their mean),
// and ends the round on the ACK of its last packet.
func (d *DX) OnAck(a Ack) {
	n := a.packets()
	d.qSum += a.Queue * int64(n)
	d.qN += int64(n)
	if d.slow && d.idle(a.Queue) {
		d.cwnd += float64(n) // slow start: one packet per packet acknowledged while no queue shows
	}
	if a.Seq < d.roundEnd {
		return
	}
	q := d.qSum / d.qN
	d.lastQ, d.qSum, d.qN = q, 0, 0
	d.rounds++
	d.roundEnd = a.Next
	if d.idle(q) {
		if !d.slow {
			d.cwnd++
		}
		return
	}
	d.slow = false
	d.cwnd = max(d.cwnd*DXFactor(q, a.BaseRTT, d.cwnd), MinWindow)
	d.cuts++
}

// idle reports whether a queueing delay counts as none: Q = 0 (Eq. 1) or
// below the headroom.
func (d *DX) idle(q int64) bool { return q <= 0 || q < d.Headroom }

// DXFactor returns DX's multiplicative decrease 1 − Q/V with
// V = R·W*/(W* − 1) (004 Eq. 8), for queueing delay q and base RTT r in
// ns and window w in packets; 1 when w ≤ 1 (V is unbounded), 0 when
// Q ≥ V.
func DXFactor(q, r int64, w float64) float64 {
	if w <= 1 || r <= 0 {
		return 1
	}
	v := float64(r) * w / (w - 1)
	return max(1-float64(q)/v, 0)
}
