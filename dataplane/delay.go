package dataplane

import (
	"fmt"
	"math/rand/v2"

	"github.com/ecnswitch/ecnswitch/internal/spsc"
	"github.com/ecnswitch/ecnswitch/packet"
)

// delayLine holds packets for an emulated propagation delay before they
// reach the egress queue, because this kernel has no netem. Packets wait per
// egress queue in FIFO order: a packet's release time is at least that of
// the packet ahead of it, so jitter never reorders a queue. Held packets
// are not in the buffer: they are admitted when they leave the line.
type delayLine struct {
	queues []delayQueue
	rng    *rand.Rand
	held   int
}

type delayQueue struct {
	fixed, jitter int64
	dist          Distribution
	last          int64 // release time of the newest packet
	fifo          *spsc.Ring[delayed]
}

type delayed struct {
	d  *packet.Desc
	at int64
}

// delayCapacity bounds the packets one queue's line holds.
const delayCapacity = 1 << 14

// validate checks c for a port of nq queues.
func (c Delay) validate(nq int) error {
	for q := range c.PerQueue {
		if q < 0 || q >= nq {
			return fmt.Errorf("delay.per_queue: queue %d outside [0, %d]", q, nq-1)
		}
	}
	return nil
}

func newDelayLine(c Delay, nq int) (*delayLine, error) {
	if err := c.validate(nq); err != nil {
		return nil, err
	}
	any := c.Fixed > 0 || c.Jitter > 0
	for _, d := range c.PerQueue {
		any = any || d.Fixed > 0 || d.Jitter > 0
	}
	if !any {
		return nil, nil
	}
	l := &delayLine{queues: make([]delayQueue, nq), rng: rand.New(rand.NewPCG(c.Seed, 0x6563_6e73))}
	for q := range l.queues {
		d := c
		if o, ok := c.PerQueue[q]; ok {
			d = o
		}
		fifo, _ := spsc.New[delayed](delayCapacity)
		l.queues[q] = delayQueue{fixed: int64(d.Fixed), jitter: int64(d.Jitter), dist: c.Distribution, fifo: fifo}
	}
	return l, nil
}

// push holds d until its ingress time (RxTime, which the dataplane always
// sets) plus its queue's delay, and not less than now; false when the line
// is full.
func (l *delayLine) push(d *packet.Desc, now int64) bool {
	dq := &l.queues[d.Queue]
	at := d.RxTime + dq.fixed
	if dq.jitter > 0 {
		switch dq.dist {
		case Uniform:
			at += l.rng.Int64N(dq.jitter)
		case Normal:
			at += int64(l.rng.NormFloat64() * float64(dq.jitter))
		case Exponential:
			at += int64(l.rng.ExpFloat64() * float64(dq.jitter))
		}
	}
	at = max(at, now, dq.last)
	if !dq.fifo.Push(delayed{d, at}) {
		return false
	}
	dq.last = at
	l.held++
	return true
}

// next returns the queue whose head leaves first and when; ties go to the
// lowest queue. ok is false when the line is empty (or nil).
func (l *delayLine) next() (q int, at int64, ok bool) {
	if l == nil || l.held == 0 {
		return 0, 0, false
	}
	for i := range l.queues {
		if e, found := l.queues[i].fifo.Peek(); found && (!ok || e.at < at) {
			q, at, ok = i, e.at, true
		}
	}
	return q, at, ok
}

// take removes and returns the head of queue q, which next returned.
func (l *delayLine) take(q int) *packet.Desc {
	e, _ := l.queues[q].fifo.Pop()
	l.held--
	return e.d
}

// len returns the packets held; 0 for a nil line.
func (l *delayLine) len() int {
	if l == nil {
		return 0
	}
	return l.held
}
