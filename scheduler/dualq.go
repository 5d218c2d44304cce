package scheduler

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/packet"
)

// dualq is RFC 9332's DualQ scheduler (§2.4, §4.2.2): two FIFOs, the
// L4S queue (DualQL4S) served first, the Classic queue (DualQClassic)
// protected from starvation by a WRR of byte credit, as Linux's dualpi2
// (dequeue_packet, tc-dualpi2's classic_protection), or by the
// time-shifted FIFO (TS-FIFO) of RFC 9332 §4.2.2 and Appendix A.2, whose
// scheduler() is the one at the bottom of Appendix B's Figure 10:
// lq.time() + tshift >= cq.time() serves the L4S queue.
//
// The WRR keeps one credit in bytes, its sign saying which queue goes
// next while both hold packets: the L4S queue while it is at most 0. A
// packet of the L4S queue adds wc·len to it, one of the Classic queue
// takes wl·len off, each only while the other queue is backlogged
// (Appendix A.1: "only changed if there are packets in both queues"); with
// wc + wl = 100, the Classic queue gets wc% of the port whenever both
// are. When both are empty the credit goes back to mtu·(wc − wl), so an
// idle port starts with the L4S queue when wl > wc ("reset in favour of
// the L queue when the link is idle"). With wc = 0 the Classic queue is
// served only when the L4S queue is empty. Unlike Linux, which moves the
// credit only for a packet its AQM lets through, the credit moves when a
// packet is picked, also one the AQM then drops: the scheduler does not
// know the markers' verdicts.
type dualq struct {
	base
	wc, wl int64 // the queues' weights in percent
	credit int64
	init   int64
	tshift int64 // ns; 0: the WRR
}

// validateDualQ checks a DualQ config's queues and protection, and sets
// the queues' weights in p.
func (c *Config) validateDualQ(p *params) error {
	if p.n != 2 {
		return fmt.Errorf("%w: num_queues: %d for dualq, which has 2 (Classic and L4S)", ErrConfig, p.n)
	}
	for i, q := range c.Queues {
		if q != (QueueConfig{}) {
			return fmt.Errorf("%w: queues[%d]: %+v set on a dualq queue; its weights come from classic_protection", ErrConfig, i, q)
		}
	}
	wc := int64(c.ClassicProtection)
	switch {
	case wc == 0:
		wc = DefaultClassicProtection
	case wc < 0:
		wc = 0
	case wc > 100:
		return fmt.Errorf("%w: classic_protection: %d outside [0, 100] percent", ErrConfig, c.ClassicProtection)
	}
	if c.TShift < 0 || c.TShift > MaxTShift {
		return fmt.Errorf("%w: tshift: %v outside [0, %v]", ErrConfig, c.TShift, MaxTShift)
	}
	p.queues = []QueueConfig{DualQClassic: {Weight: wc}, DualQL4S: {Weight: 100 - wc}}
	return nil
}

func newDualQ(p params) *dualq {
	s := &dualq{wc: p.queues[DualQClassic].Weight, wl: p.queues[DualQL4S].Weight, tshift: int64(p.config.TShift)}
	s.init = int64(p.overhead.Wire(p.mtu)) * (s.wc - s.wl)
	s.credit = s.init
	s.base.init(p)
	return s
}

func (s *dualq) Enqueue(d *packet.Desc, now int64) bool {
	return s.push(int(d.Queue), d, now)
}

func (s *dualq) Dequeue(now int64) *packet.Desc {
	c, l := &s.q[DualQClassic], &s.q[DualQL4S]
	cBusy, lBusy := c.head != c.tail, l.head != l.tail
	switch {
	case lBusy && cBusy && s.tshift > 0:
		// Time-shifted FIFO: the L4S head goes first unless the Classic
		// head has waited more than tshift longer.
		if s.peek(DualQL4S).EnqTime <= s.peek(DualQClassic).EnqTime+s.tshift {
			return s.take(DualQL4S, now)
		}
		return s.take(DualQClassic, now)
	case lBusy && (!cBusy || s.credit <= 0):
		d := s.take(DualQL4S, now)
		if cBusy {
			s.credit += s.wc * int64(s.overhead.Wire(d.Len))
		}
		return d
	case cBusy:
		d := s.take(DualQClassic, now)
		if lBusy {
			s.credit -= s.wl * int64(s.overhead.Wire(d.Len))
		}
		return d
	}
	s.credit = s.init
	return nil
}

// take pops the head of non-empty queue i at now.
func (s *dualq) take(i int, now int64) *packet.Desc {
	d, _ := s.pop(i, now)
	return d
}

func (s *dualq) RoundTime(int64) int64 { return 0 }

// SetQueue refuses: a DualQ's weights come from its classic protection.
func (s *dualq) SetQueue(i int, c QueueConfig) error {
	return fmt.Errorf("%w: queues[%d]: a dualq queue's weight comes from classic_protection", ErrConfig, i)
}
