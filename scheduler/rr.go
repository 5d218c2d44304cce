package scheduler

import (
	"math/bits"

	"github.com/ecnswitch/ecnswitch/packet"
)

// rr is WRR or DWRR below an optional strict-priority level, with the
// round-time estimator of 001 §3.3.1 as the MQ-ECN prototype implements it
// (001 §4.2): an active list of non-empty queues served from its head; a
// queue that finishes its turn and still has packets goes to the tail.
type rr struct {
	base
	deficit bool // DWRR; else WRR

	active       [MaxQueues]uint8 // ring of active (non-empty, non-strict) queues
	ahead, atail uint32

	rt        roundTime
	nsPerByte uint64 // Q32 ns per charged byte at the line rate, rounded up; 0 if unknown
	idleSince int64  // when the port last went empty, ns
}

func newRR(p params) *rr {
	s := &rr{deficit: p.kind == DWRR}
	s.init(p)
	s.rt = roundTime{beta: p.beta}
	s.rate(p)
	return s
}

// rate sets what depends on p's line rate: the time per byte and the idle
// time after which T_round decays.
func (s *rr) rate(p params) {
	s.rt.tIdle, s.nsPerByte = p.tIdle, 0
	if p.lineRate > 0 {
		// ⌈8e9·2^32 / C⌉; the quotient fits since C ≥ MinLineRate.
		hi, lo := bits.Mul64(8e9, 1<<32)
		q, r := bits.Div64(hi, lo, uint64(p.lineRate))
		if r != 0 {
			q++
		}
		s.nsPerByte = q
	}
}

// SetLineRate changes the rate the transmissions are timed with and, when
// Config.TIdle left it to the rate, T_idle; T_round keeps its value.
func (s *rr) SetLineRate(rate int64) error {
	p, err := s.rated(rate)
	if err != nil {
		return err
	}
	s.rate(p)
	return nil
}

func (s *rr) Enqueue(d *packet.Desc, now int64) bool {
	i := int(d.Queue)
	if s.pkts == 0 {
		s.rt.decay(now - s.idleSince)
	}
	if s.strict>>i&1 != 0 {
		return s.enqueueStrict(i, d, now)
	}
	if !s.push(i, d, now) {
		return false
	}
	q := &s.q[i]
	if q.tail-q.head == 1 {
		// The queue becomes active: it joins the tail of the active list
		// with a fresh quantum, and its turn is timed from now (001 §4.2
		// "Tstart ... when this queue is inserted to the linked list").
		q.credit = q.info.Quantum
		q.start = now
		q.served = false
		s.active[s.atail%MaxQueues] = uint8(i)
		s.atail++
	}
	return true
}

func (s *rr) Dequeue(now int64) *packet.Desc {
	if s.busy != 0 {
		d := s.dequeueStrict(now)
		if s.pkts == 0 {
			s.idleSince = now + s.wireTime(d.Len)
		}
		return d
	}
	for s.ahead != s.atail {
		i := int(s.active[s.ahead%MaxQueues])
		q := &s.q[i]
		d := s.peek(i)
		c := int64(s.overhead.Wire(d.Len))
		if s.deficit && c > q.credit {
			// Only a packet larger than the quantum gets here: with
			// quantum ≥ MTU the check below rotates a queue before its
			// head can fail to fit. Let the deficit grow over turns.
			s.endTurn(i, q)
			continue
		}
		d, empty := s.pop(i, now)
		q.credit -= c
		q.served = true
		q.lastEnd = now + s.wireTime(d.Len)
		switch {
		case empty:
			// The queue leaves the active list and forgets its deficit
			// (Shreedhar–Varghese); its turn ends here.
			s.rt.sample(q.lastEnd - q.start)
			q.credit = 0
			s.ahead++
			if s.pkts == 0 {
				s.idleSince = q.lastEnd
			}
		case int64(s.overhead.Wire(s.peek(i).Len)) > q.credit:
			// The next packet does not fit: DWRR keeps the deficit for
			// the next turn; WRR ends the round before the packet that
			// would take it above Q_i (001 §3.3.2, "at most transmit
			// Q_i"). A WRR turn's first packet was sent even if it alone
			// exceeded Q_i, which leaves the credit negative and ends
			// the turn here.
			s.endTurn(i, q)
		}
		return d
	}
	return nil
}

// endTurn ends the turn of queue i, at the head of the active list and
// still backlogged: sample the round time (001 §3.3.1: "every time queue i
// finishes its service, it records ... Tsample = Tnow − Tpre. Then we reset
// Tpre with Tnow"), give it its next quantum and move it to the tail.
func (s *rr) endTurn(i int, q *queue) {
	if q.served {
		s.rt.sample(q.lastEnd - q.start)
		q.start = q.lastEnd
	}
	q.served = false
	if s.deficit {
		q.credit += q.info.Quantum
	} else {
		q.credit = q.info.Quantum
	}
	s.ahead++
	s.active[s.atail%MaxQueues] = uint8(i)
	s.atail++
}

// wireTime returns when a frame of frameLen bytes dequeued now has left the
// wire, relative to now: its charged bytes at the line rate, or 0 if the
// rate is unknown.
func (s *rr) wireTime(frameLen int) int64 {
	if s.nsPerByte == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(s.overhead.Wire(frameLen)), s.nsPerByte)
	return int64(hi<<32 | lo>>32)
}

func (s *rr) RoundTime(now int64) int64 {
	if s.pkts != 0 {
		return s.rt.value()
	}
	t := s.rt
	t.decay(now - s.idleSince)
	return t.value()
}

// roundTime is the smoothed round time of 001 §3.3.1 in Q16 fixed point
// nanoseconds, so that the EWMA converges exactly and never drifts.
type roundTime struct {
	avg   uint64 // T_round × 2^16
	beta  uint64 // β × 2^16
	tIdle int64  // ns; 0 disables idle decay
}

// sample folds in one round-time sample of ns nanoseconds:
// T_round = β·T_round + (1−β)·T_sample (001 §3.3.1).
func (r *roundTime) sample(ns int64) {
	ns = min(max(ns, 0), maxSample)
	r.avg = ewma(r.avg, uint64(ns)<<16, r.beta)
}

// decay applies idle decay for a port that has been idle for idle ns:
// T_round ← β·T_round "as if we get a Tsample of 0" once per full T_idle
// (001 §3.3.1), and T_round ← 0 after more than maxIdleSlots of them, as the
// MQ-ECN prototype does (prior-art §3: idle slot 12 µs, reset after more
// than 10 idle slots).
func (r *roundTime) decay(idle int64) {
	if r.tIdle <= 0 || idle < r.tIdle || r.avg == 0 {
		return
	}
	n := idle / r.tIdle
	if n > maxIdleSlots {
		r.avg = 0
		return
	}
	for ; n > 0; n-- {
		r.avg = ewma(r.avg, 0, r.beta)
	}
}

// value returns T_round in ns, rounded to the nearest.
func (r *roundTime) value() int64 { return int64((r.avg + 1<<15) >> 16) }

// ewma returns (avg·β + x·(1−β)) in the Q16 units of avg and x, with β in
// Q16, using 128-bit products so that no range is lost.
func ewma(avg, x, beta uint64) uint64 {
	h1, l1 := bits.Mul64(avg, beta)
	h2, l2 := bits.Mul64(x, betaOne-beta)
	lo, c := bits.Add64(l1, l2, 0)
	hi := h1 + h2 + c
	return hi<<48 | lo>>16
}
