package dataplane

import (
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// The virtual line.
//
// Each egress port follows an ideal line at its shaper's rate C: a packet
// leaves the queue at the first instant the token bucket allows (Shaper:
// credit not negative) at which the queue holds a packet, never before the
// port's previous event, and the dequeue markers, the sojourn time, the
// round time and the buffer's release all happen at that instant — the
// packet's departure time — whenever the worker gets round to computing
// it. Packets released from the delay line enter the queue at their own
// release time. So every marking decision is the one a perfect shaper,
// serving each packet at its instant, would make, however the worker's
// passes fall (TestVirtualLineMatchesPerPacketShaper checks this against a
// run polled every nanosecond). Physically, the packets that have left the
// line wait in staged and go to the device in batches (due), each at most
// PortConfig.Coalesce after its departure time.

// line is a port's virtual line: its queues, shaper and delay line, the
// time of its last and next events, and the packets that have left it for
// the device. The port's worker owns it.
type line struct {
	sched  scheduler.Scheduler
	shaper *scheduler.Shaper
	delay  *delayLine // nil when the port adds no delay

	now      int64          // time of the last event: arrival, release from the delay line, departure
	next     int64          // time of the next event; never if none
	staged   []*packet.Desc // left the line, waiting for the device; their TxTime is their departure time
	blocked  bool           // the device refused staged packets: departures wait for it
	coalesce int64          // ns a departed packet may wait to be batched
}

// stagedBatches is how many passes' worth of departed packets (a batch
// each) a port may stage for one transmit call: 4 × 64 = 256, the most
// one call of XDP live frames sends (afxdp.MaxLiveMin).
const stagedBatches = 4

func newLine(sched scheduler.Scheduler, shaper *scheduler.Shaper, delay *delayLine, batch int, coalesce, now int64) line {
	return line{
		sched: sched, shaper: shaper, delay: delay,
		now: now, next: never,
		staged:   make([]*packet.Desc, 0, stagedBatches*batch),
		coalesce: max(coalesce, 0),
	}
}

// reschedule sets and returns the time of the line's next event: the
// release of the first packet of its delay line or the next departure,
// whichever is first; never when there is none (or the device holds the
// line up).
func (l *line) reschedule() int64 {
	next := int64(never)
	if _, at, ok := l.delay.next(); ok {
		next = at
	}
	if _, queued := l.sched.Len(); !l.blocked && queued > 0 {
		next = min(next, l.shaper.Next(l.now))
	}
	l.next = next
	return next
}

// arrive moves the line's time to an arrival at at, if it is later.
func (l *line) arrive(at int64) { l.now = max(l.now, at) }

// departAt moves the line's time to a departure at t.
func (l *line) departAt(t int64) { l.now = t }

// stage adds a departed packet to the batch for the device and reports
// whether the batch is full.
func (l *line) stage(d *packet.Desc) (full bool) {
	l.staged = append(l.staged, d)
	return len(l.staged) == cap(l.staged)
}

// sent removes the first n staged packets, which the device took (or
// which were dropped) at now: the line stops while the device holds
// packets up, and restarts at now when it has taken them all. It reports
// whether the line's next event must be rescheduled.
func (l *line) sent(n int, now int64) bool {
	l.staged = l.staged[:copy(l.staged, l.staged[n:])]
	was := l.blocked
	l.blocked = len(l.staged) > 0
	if was && !l.blocked {
		l.now = max(l.now, now)
	}
	return l.blocked || was // blocked, only releases from the delay line go on
}

// due reports whether the staged packets must go to the device at now:
// the first has waited coalesce, or the device has been holding them up,
// or no packet can join the batch before that deadline: the line's next
// departure comes later, and the line is not an idle one whose batch is
// worth growing.
//
// An idle line (an unshaped port, or a shaped one with its queues empty)
// sends an arrival at once, so one that holds a full pass's worth of
// frames (batch), or half of that with more input waiting (more), is a
// busy egress: its batch waits for the next passes, up to stagedBatches
// passes' worth or coalesce. Each transmit call has a fixed cost, and on
// veth each call of XDP live frames leaves the kernel a page pool to tear
// down, at a cost that grows with the pools not yet torn down: in bench
// tcp, unshaped at 4 Gbit/s, a kworker spent half the worker's CPU on it
// at 59 frames a call. A line with few frames staged (the ACKs of the
// other direction) still sends them at once.
func (l *line) due(now int64, batch int, more bool) bool {
	if len(l.staged) == 0 {
		return false
	}
	deadline := l.staged[0].TxTime + l.coalesce
	grow := l.next == never && (len(l.staged) >= batch || more && 2*len(l.staged) >= batch)
	return l.blocked || now >= deadline || l.next > deadline && !grow
}

// deadline returns when the staged packets are due at the latest, never
// if there are none.
func (l *line) deadline() int64 {
	if len(l.staged) == 0 {
		return never
	}
	return l.staged[0].TxTime + l.coalesce
}

// wake returns when the line next needs its worker without an arrival:
// now while the device holds it up, soon while the device holds taken
// frames unsent (pending), the deadline of its staged packets, or that of
// the next packet to leave it; never when it is idle.
func (l *line) wake(now int64, pending bool) int64 {
	switch {
	case l.blocked:
		return now
	case pending:
		return now + pendingWait
	case len(l.staged) > 0:
		return l.deadline()
	case l.next == never:
		return never
	}
	return l.next + l.coalesce
}
