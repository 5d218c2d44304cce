package closedloop

import (
	"github.com/ecnswitch/ecnswitch/timestamp"
	"github.com/ecnswitch/ecnswitch/transport"
)

// flow is one long-lived window-based flow of the sender model. It sees
// sequence numbers and ACKs only; the harness moves its packets.
type flow struct {
	id, queue, host int
	cc              CC
	start           int64 // ns: when the flow starts sending

	cwnd     float64 // packets
	ssthresh float64 // packets; slow start below it
	next     uint64  // next sequence number to send
	acked    uint64  // ACKs received
	lost     uint64  // packets the receiver reported missing
	recover  uint64  // a reduction needs an ACK of a sequence ≥ recover (once per window)

	alpha            float64 // DCTCP's α
	winEnd           uint64  // DCTCP: the observation window ends with the ACK of winEnd
	winAcks, winMark uint64

	reductions uint64 // window reductions on marks (DX: on delay)
	lossEvents uint64 // window reductions on losses

	dx    *transport.DX   // DX's window law; nil for the others
	delay timestamp.Delay // DX: OWD_base and the queueing delay of each ACK
	dxQ   []int64         // DX: the queueing delays measured, while the harness measures
}

func newFlow(id, queue, host int, cc CC, start int64, headroom int64) *flow {
	f := &flow{
		id: id, queue: queue, host: host, cc: cc, start: start,
		cwnd: initCwnd, ssthresh: 1e18, alpha: 1, // DCTCP starts at α = 1 (Linux's default)
	}
	if cc == DX {
		f.dx = transport.NewDX(headroom)
		f.cwnd = f.dx.Window()
	}
	return f
}

// onDXAck processes the ACK of sequence seq for DX: t1 is the data's send
// time on the sender's clock, t2 its arrival on the receiver's (skewed
// and drifting, see receiverClock), t4 the ACK's arrival; the receiver
// acknowledges at once (t3 = t2). It returns the queueing delay measured.
func (f *flow) onDXAck(seq, lost uint64, t1, t2, t4 int64) int64 {
	f.acked++
	f.lost += lost
	st := timestamp.Stamps{T1: t1, T2: t2, T3: t2, T4: t4}
	q := f.delay.Observe(st.OWD(), st.RTT())
	base, _ := f.delay.MinRTT()
	c0, _ := f.dx.Reductions()
	f.dx.OnAck(transport.Ack{Seq: seq, Next: f.next, Lost: lost, Queue: q, BaseRTT: base})
	c1, _ := f.dx.Reductions()
	f.reductions += c1 - c0
	f.cwnd = f.dx.Window()
	return q
}

// inFlight returns the packets sent and neither acknowledged nor lost.
func (f *flow) inFlight() uint64 { return f.next - f.acked - f.lost }

// canSend reports whether the window allows one more packet.
func (f *flow) canSend() bool { return float64(f.inFlight()+1) <= f.cwnd }

// sent records that sequence number f.next left and returns it.
func (f *flow) sent() uint64 {
	s := f.next
	f.next++
	return s
}

// onAck processes the ACK of sequence seq, which echoes CE when ce is set
// and reports lost packets missing before it.
func (f *flow) onAck(seq uint64, ce bool, lost uint64) {
	f.acked++
	f.lost += lost
	if f.cc == DCTCP {
		f.winAcks++
		if ce {
			f.winMark++
		}
		if seq >= f.winEnd {
			// One window of ACKs: α ← (1−g)·α + g·F.
			frac := float64(f.winMark) / float64(f.winAcks)
			f.alpha = (1-dctcpG)*f.alpha + dctcpG*frac
			f.winAcks, f.winMark = 0, 0
			f.winEnd = f.next
		}
	}
	outside := seq >= f.recover // not within a window already reduced
	switch {
	case lost > 0 && outside:
		f.reduce(0.5)
		f.lossEvents++
	case ce && outside:
		if f.cc == DCTCP {
			f.reduce(1 - f.alpha/2)
		} else {
			f.reduce(0.5)
		}
		f.reductions++
	case !ce && lost == 0 && outside:
		if f.cwnd < f.ssthresh {
			f.cwnd++ // slow start
		} else {
			f.cwnd += 1 / f.cwnd // one packet per RTT
		}
	}
}

// reduce multiplies cwnd by factor, ends slow start, and opens a new
// reduction window: the next reduction needs an ACK of what is sent from
// now on.
func (f *flow) reduce(factor float64) {
	f.cwnd = max(f.cwnd*factor, minCwnd)
	f.ssthresh = f.cwnd
	f.recover = f.next
}
