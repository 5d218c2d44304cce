package scheduler

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Scheduler holds one egress port's queues and decides which packet leaves
// next. A Scheduler is owned by one goroutine, the port's worker; it takes no
// lock and never reads a clock: every method that needs the time is told it.
type Scheduler interface {
	// Enqueue appends d to queue d.Queue and stamps d.EnqTime = now. It
	// returns false, leaving d untouched, only when that queue's ring is
	// full. d.Queue must be below Queues(); Enqueue panics otherwise, as
	// the classifier is validated against the port's queue count.
	Enqueue(d *packet.Desc, now int64) bool
	// Dequeue removes and returns the next packet to transmit at now, or nil
	// when every queue is empty. It never returns nil while a queue holds a
	// packet: rate limiting is the Shaper's job, not the scheduler's.
	Dequeue(now int64) *packet.Desc
	// Queues returns the number of queues.
	Queues() int
	// Backlog returns the bytes (sum of Desc.Len) and packets in queue q.
	Backlog(q int) (bytes, packets int64)
	// Len returns the bytes and packets in all queues of the port.
	Len() (bytes, packets int64)
	// Queue describes queue q's place in the scheduler.
	Queue(q int) QueueInfo
	// RoundTime returns the smoothed round time T_round in ns as it stands
	// at now, idle decay included (001 §3.3.1). It is 0 for SP and WFQ, and
	// for WRR and DWRR before the first sample or after a long idle period.
	RoundTime(now int64) int64
	// BusyWeightSum returns the sum of the weights (QueueInfo.Weight) of
	// the non-empty queues of the weighted level, the WRR, DWRR or WFQ
	// queues below any strict ones: w_sum of 001 §3.4, the share of the
	// backlogged queues that MQ-ECN divides its threshold by under WFQ. It
	// is 0 when they are all empty, and always with SP.
	BusyWeightSum() int64
	// EmptySince returns when queue q, and the whole port, last became
	// empty: the now of the Dequeue that took their last packet, in ns, or
	// 0 if they never held one. It is meaningful while they are empty, as
	// the start of RED's idle time (Floyd and Jacobson's q_time).
	EmptySince(q int) (queue, port int64)
	// Head returns the enqueue time (Desc.EnqTime) of the packet at the
	// head of queue q, and false when q is empty: a coupled AQM reads
	// another queue's sojourn from it.
	Head(q int) (enqTime int64, ok bool)
	// SetQueue changes queue q's Weight and Quantum to c's, validated as
	// New validates a Config, without touching the packets it holds: a
	// new quantum applies from the queue's next turn, a new WFQ weight
	// from its next packet. c.Strict must be what the queue has. Every
	// queue's QueueInfo changes with it (its level's WeightSum, the
	// port's PortWeightSum).
	SetQueue(q int, c QueueConfig) error
	// SetLineRate changes the line rate C the scheduler times a port's
	// transmissions with (Config.LineRate), validated as New validates
	// it, and with it the default TIdle: what a port whose shaper changes
	// rate tells its scheduler.
	SetLineRate(rate int64) error
}

// QueueInfo describes a queue's place in the scheduler, as a marker needs it
// (marking.View's Quantum, Weight, WeightSum and Strict).
type QueueInfo struct {
	// Strict is set for a queue at a strict-priority level.
	Strict bool
	// Quantum is the bytes a WRR or DWRR queue is served per round
	// (quantum_i of 001 §3.3.2); 0 for strict and WFQ queues.
	Quantum int64
	// Weight is the queue's weight in its level: for WRR and DWRR queues it
	// is the quantum (001 §3.2 sets quantum_i = w_i), for WFQ queues the
	// configured weight, for a strict queue its configured weight.
	Weight int64
	// WeightSum is the sum of the weights of the queues in the same level.
	// A strict queue is alone at its priority, so its WeightSum is its Weight.
	WeightSum int64
	// PortWeight is the queue's weight in a unit common to every queue of
	// the port, so that weights of different levels add up: Weight, except
	// for a strict queue above WRR or DWRR, whose configured weight counts
	// as a quantum of that many charged MTUs, as a WRR or DWRR queue's
	// weight does by default. It is weight_i of PMSB (003 Table II, Eq. 6)
	// and W_i of the "minimum" per-queue threshold (001 §2.2.2 Eq. 2).
	PortWeight int64
	// PortWeightSum is the sum of PortWeight over all queues of the port:
	// weight_sum of 003 Table II ("the sum of all queues' weights in port
	// p") and Σ_j W_j of 001 Eq. 2.
	PortWeightSum int64
	// Capacity is the queue's ring size in packets.
	Capacity int
}

// New validates cfg and returns a scheduler with every queue ring allocated.
// Errors wrap ErrConfig and name the offending key, its value and the
// allowed range.
func New(cfg Config) (Scheduler, error) {
	p, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	switch p.kind {
	case WRR, DWRR:
		return newRR(p), nil
	case WFQ:
		return newWFQ(p), nil
	case DualQ:
		return newDualQ(p), nil
	}
	s := &sp{}
	s.init(p)
	return s, nil
}

// queue is one FIFO and its scheduling state.
type queue struct {
	head, tail uint32 // free-running ring indices; tail-head packets queued
	bytes      int64  // sum of Desc.Len queued
	info       QueueInfo

	emptySince int64 // when the queue last became empty, ns

	// Round robin (001 §3.3, §4.2).
	credit  int64 // DWRR deficit counter, or WRR bytes left in this round
	start   int64 // T_pre: when the queue's current turn began, ns
	lastEnd int64 // when the transmission of its last packet ends, ns
	served  bool  // sent a packet in the current turn

	// WFQ.
	inc     uint64 // finish-tag increment per charged byte: 2^24/weight
	lastTag uint64 // finish tag of the packet at the tail
}

// base holds the rings, the byte counts and the strict-priority level that
// every scheduler shares.
type base struct {
	cfg        Config // as validated, for SetQueue
	q          []queue
	slots      []*packet.Desc // queue i's ring is slots[i<<shift:][:capacity]
	shift      uint
	mask       uint32
	strict     uint64 // bit i: queue i is strict
	busy       uint64 // bit i: strict queue i is not empty
	busyWeight int64  // sum of the weights of the non-empty non-strict queues
	emptySince int64  // when the port last became empty, ns
	bytes      int64
	pkts       int64
	overhead   Overhead
}

func (b *base) init(p params) {
	b.q = make([]queue, p.n)
	b.shift = uint(bits.TrailingZeros(uint(p.capacity)))
	b.mask = uint32(p.capacity - 1)
	b.slots = make([]*packet.Desc, p.n<<b.shift)
	b.overhead = p.overhead
	b.cfg = p.config
	b.weigh(p)
}

// weigh sets every queue's weights, quantum and QueueInfo from p.
func (b *base) weigh(p params) {
	b.strict = 0
	var rrSum, wfqSum, portSum int64
	for i, c := range p.queues {
		q := &b.q[i]
		q.info = QueueInfo{Strict: c.Strict, Weight: c.Weight, Quantum: c.Quantum, Capacity: p.capacity}
		q.inc = 0
		switch {
		case c.Strict:
			b.strict |= 1 << i
			q.info.WeightSum = c.Weight
		case p.kind == WFQ:
			q.inc = wfqScale / uint64(c.Weight)
			wfqSum += c.Weight
		case p.kind == DualQ:
			q.info.Weight = c.Weight
			rrSum += c.Weight
		default:
			q.info.Weight = c.Quantum
			rrSum += c.Quantum
		}
		q.info.PortWeight = q.info.Weight
		if c.Strict && (p.kind == WRR || p.kind == DWRR) {
			q.info.PortWeight = c.Weight * int64(p.overhead.Wire(p.mtu))
		}
		portSum += q.info.PortWeight
	}
	for i := range b.q {
		q := &b.q[i]
		q.info.PortWeightSum = portSum
		switch {
		case q.info.Strict:
		case p.kind == WFQ:
			q.info.WeightSum = wfqSum
		default:
			q.info.WeightSum = rrSum
		}
	}
}

func (b *base) Queues() int { return len(b.q) }

func (b *base) SetQueue(i int, c QueueConfig) error {
	if i < 0 || i >= len(b.q) {
		return fmt.Errorf("%w: queue %d outside [0, %d]", ErrConfig, i, len(b.q)-1)
	}
	if c.Strict != b.q[i].info.Strict && b.cfg.Kind != SP {
		return fmt.Errorf("%w: queues[%d].strict: %v, and the queue is %v: a queue cannot change level while the port runs", ErrConfig, i, c.Strict, b.q[i].info.Strict)
	}
	cfg := b.cfg
	cfg.Queues = slices.Clone(cfg.Queues)
	if len(cfg.Queues) == 0 {
		cfg.Queues = make([]QueueConfig, len(b.q))
	}
	cfg.Queues[i] = c
	p, err := cfg.validate()
	if err != nil {
		return err
	}
	b.cfg = p.config
	b.weigh(p)
	b.busyWeight = 0
	for i := range b.q {
		if q := &b.q[i]; q.head != q.tail && b.strict>>i&1 == 0 {
			b.busyWeight += q.info.Weight
		}
	}
	return nil
}

func (b *base) Backlog(i int) (bytes, packets int64) {
	q := &b.q[i]
	return q.bytes, int64(q.tail - q.head)
}

func (b *base) Len() (bytes, packets int64) { return b.bytes, b.pkts }

func (b *base) Queue(i int) QueueInfo { return b.q[i].info }

func (b *base) BusyWeightSum() int64 { return b.busyWeight }

func (b *base) EmptySince(i int) (queue, port int64) { return b.q[i].emptySince, b.emptySince }

// SetLineRate validates the rate and records it; SP and WFQ time nothing
// with it.
func (b *base) SetLineRate(rate int64) error {
	_, err := b.rated(rate)
	return err
}

// rated validates the scheduler's config with line rate rate, records it,
// and returns its parameters.
func (b *base) rated(rate int64) (params, error) {
	cfg := b.cfg
	cfg.LineRate = rate
	p, err := cfg.validate()
	if err != nil {
		return p, err
	}
	b.cfg = p.config
	return p, nil
}

func (b *base) Head(i int) (int64, bool) {
	if q := &b.q[i]; q.head == q.tail {
		return 0, false
	}
	return b.peek(i).EnqTime, true
}

// push appends d to queue i; false if the ring is full.
func (b *base) push(i int, d *packet.Desc, now int64) bool {
	q := &b.q[i]
	if q.tail-q.head > b.mask {
		return false
	}
	d.EnqTime = now
	b.slots[i<<b.shift|int(q.tail&b.mask)] = d
	q.tail++
	if q.tail-q.head == 1 && b.strict>>i&1 == 0 {
		b.busyWeight += q.info.Weight
	}
	q.bytes += int64(d.Len)
	b.bytes += int64(d.Len)
	b.pkts++
	return true
}

// peek returns the packet at the head of non-empty queue i.
func (b *base) peek(i int) *packet.Desc {
	return b.slots[i<<b.shift|int(b.q[i].head&b.mask)]
}

// pop removes the head of non-empty queue i at now and reports whether the
// queue is empty afterwards.
func (b *base) pop(i int, now int64) (*packet.Desc, bool) {
	q := &b.q[i]
	slot := &b.slots[i<<b.shift|int(q.head&b.mask)]
	d := *slot
	*slot = nil
	q.head++
	q.bytes -= int64(d.Len)
	b.bytes -= int64(d.Len)
	b.pkts--
	empty := q.head == q.tail
	if empty {
		q.emptySince = now
		if b.strict>>i&1 == 0 {
			b.busyWeight -= q.info.Weight
		}
		if b.pkts == 0 {
			b.emptySince = now
		}
	}
	return d, empty
}

// enqueueStrict queues d on strict queue i.
func (b *base) enqueueStrict(i int, d *packet.Desc, now int64) bool {
	if !b.push(i, d, now) {
		return false
	}
	b.busy |= 1 << i
	return true
}

// dequeueStrict serves the highest-index non-empty strict queue at now;
// b.busy must be non-zero.
func (b *base) dequeueStrict(now int64) *packet.Desc {
	i := 63 - bits.LeadingZeros64(b.busy)
	d, empty := b.pop(i, now)
	if empty {
		b.busy &^= 1 << i
	}
	return d
}

// sp is the strict-priority scheduler: every queue is strict.
type sp struct{ base }

func (s *sp) Enqueue(d *packet.Desc, now int64) bool {
	return s.enqueueStrict(int(d.Queue), d, now)
}

func (s *sp) Dequeue(now int64) *packet.Desc {
	if s.busy == 0 {
		return nil
	}
	return s.dequeueStrict(now)
}

func (s *sp) RoundTime(int64) int64 { return 0 }
