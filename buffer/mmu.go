package buffer

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/internal/counter"
)

// cacheLine is the padding unit that keeps counters written by different
// workers out of each other's cache lines (two lines, for the adjacent-line
// prefetcher).
const cacheLine = 128

// MMU is the buffer of one emulated switch: its pools, ports and queues and
// all their counters. Make one with New. Ports and queues are indexed as in
// the Config; an index out of range panics, like a slice index.
type MMU struct {
	pools []pool
	ports []port
}

// pool is one shared pool. shared is written by every worker owning one of
// its ports; it shares its cache line with nothing they write.
type pool struct {
	shared atomic.Int64 // ΣQ of 002 §IV-B Eq. 1: shared bytes of all its queues, ≤ size
	size   int64        // B
	ports  []*port      // attached to it, for PoolBytes and PoolPackets
	_      [cacheLine - 40]byte
}

// port is one egress port, written only by its owning worker. Its bytes and
// packets are the sums of its queues', added up when read, so that Admit
// and Release touch as few atomics as possible.
type port struct {
	held   int64        // bytes its queues hold; read and written only by the owner, for peak
	peak   atomic.Int64 // raised by the owner, reset by ResetPeaks from any goroutine
	pool   *pool
	index  int // of pool in MMU.pools
	queues []queue
	_      [cacheLine - 56]byte
}

// queue is one egress queue, written only by its port's owning worker
// (peak is also reset by ResetPeaks).
type queue struct {
	bytes   counter.Int64 // B_q: private and shared
	packets counter.Int64
	peak    atomic.Int64
	reserve int64
	cap     int64         // > 0: static cap on shared bytes, else DT
	alpha   atomic.Uint64 // DT α, as math.Float64bits; +Inf with a cap, which no DT test then refuses; SetAlpha changes it
	drops   [NumReasons]tally
}

// tally counts packets and bytes.
type tally struct {
	packets counter.Int64
	bytes   counter.Int64
}

// New validates cfg and returns an MMU with every counter at zero. Errors
// wrap ErrConfig and name the offending key, its value and the allowed range.
func New(cfg Config) (*MMU, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &MMU{
		pools: make([]pool, len(cfg.Pools)),
		ports: make([]port, len(cfg.Ports)),
	}
	for i, pc := range cfg.Pools {
		m.pools[i].size = pc.Size
	}
	for i, pc := range cfg.Ports {
		p := &m.ports[i]
		p.pool = &m.pools[pc.Pool]
		p.pool.ports = append(p.pool.ports, p)
		p.index = pc.Pool
		p.queues = make([]queue, len(pc.Queues))
		for j, qc := range pc.Queues {
			q := &p.queues[j]
			q.reserve = qc.Reserve
			q.cap = qc.Cap
			alpha := qc.Alpha
			if q.cap > 0 {
				alpha = math.Inf(1)
			}
			q.alpha.Store(math.Float64bits(alpha))
		}
	}
	return m, nil
}

// Admit decides whether a packet of size bytes may join queue of port and,
// if so, accounts it and returns Admitted. Otherwise it counts the drop
// under the returned reason and changes nothing else.
//
// The bytes the queue holds up to its reserve are private and always
// admitted (002 §II-A, step 1). The part beyond the reserve is shared
// (step 2) and is admitted only if it fits in the pool's free space (else
// PoolFull) and either, for a DT queue, the queue's shared occupancy before
// the packet is below T = α·(B − ΣQ) (002 §IV-B Eq. 1; else
// DynamicThreshold), or, for a capped queue, its shared occupancy after the
// packet is at most Cap (else StaticCap; checked before pool space).
//
// The pool's shared occupancy is claimed with a compare-and-swap loop that
// evaluates both tests on the very value it swaps, so a decision is exact
// against one instant of the pool even while another worker admits to it,
// and the pool never holds more than B shared bytes, not even for a moment.
// The alternative, add-then-check-and-undo, would let a reader (telemetry, a
// BCC marker, another worker's DT test) see a pool fuller than it is, and
// two workers that overshoot together could both undo and both drop a packet
// that one of them should have admitted. The loop retries only when another
// worker changed the pool between the load and the swap.
//
// Admit must be called only by port's owning worker. size must be positive.
func (m *MMU) Admit(port, queue, size int) Reason {
	p := &m.ports[port]
	q := &p.queues[queue]
	if size <= 0 {
		panic("buffer: Admit of a packet of size <= 0")
	}
	n := int64(size)
	b := q.bytes.Load()
	if b+n > q.reserve {
		old := max(b-q.reserve, 0) // Q_i: the queue's shared bytes before the packet
		if r := p.pool.claim(q, old, b+n-q.reserve-old); r != Admitted {
			d := &q.drops[r]
			d.packets.Add(1)
			d.bytes.Add(n)
			return r
		}
	}
	if b = q.bytes.Add(n); b > q.peak.Load() {
		raise(&q.peak, b)
	}
	q.packets.Add(1)
	if p.held += n; p.held > p.peak.Load() {
		raise(&p.peak, p.held)
	}
	return Admitted
}

// claim takes need shared bytes from pl for q, whose shared occupancy is
// old, or returns why it may not.
func (pl *pool) claim(q *queue, old, need int64) Reason {
	if q.cap > 0 && old+need > q.cap {
		return StaticCap
	}
	for {
		s := pl.shared.Load()
		free := pl.size - s
		if need > free {
			return PoolFull
		}
		if float64(old) >= math.Float64frombits(q.alpha.Load())*float64(free) { // never with a cap: α = +Inf (and +Inf·0 is NaN)
			return DynamicThreshold
		}
		if pl.shared.CompareAndSwap(s, s+need) {
			return Admitted
		}
	}
}

// raise sets *a to v unless it already holds more; ResetPeaks may store
// into *a concurrently.
func raise(a *atomic.Int64, v int64) {
	for {
		p := a.Load()
		if v <= p || a.CompareAndSwap(p, v) {
			return
		}
	}
}

// Release gives back a packet of size bytes that Admit admitted to queue of
// port: shared bytes first, then private ones. Releasing more bytes or
// packets than the queue holds, or sizes that do not add up to the admitted
// ones, is a bug in the caller and panics.
//
// Release must be called only by port's owning worker.
func (m *MMU) Release(port, queue, size int) {
	p := &m.ports[port]
	q := &p.queues[queue]
	n := int64(size)
	b := q.bytes.Load()
	k := q.packets.Load()
	if size <= 0 || n > b || k == 0 || (n == b) != (k == 1) {
		panicRelease(port, queue, n, b, k)
	}
	q.bytes.Add(-n)
	q.packets.Add(-1)
	p.held -= n
	// Free the shared space last: another worker may claim it at once.
	if b > q.reserve {
		p.pool.shared.Add(max(q.reserve, b-n) - b)
	}
}

// panicRelease reports a Release that does not match what was admitted.
func panicRelease(port, queue int, size, bytes, packets int64) {
	panic("buffer: Release of " + strconv.FormatInt(size, 10) + " bytes from port " +
		strconv.Itoa(port) + " queue " + strconv.Itoa(queue) + ", which holds " +
		strconv.FormatInt(packets, 10) + " packets of " + strconv.FormatInt(bytes, 10) +
		" bytes: released more than admitted, or sizes that differ from the admitted ones")
}

// CountDrop records a packet of size bytes that the dataplane dropped for
// queue of port for reason r, decided outside the MMU (a marker's Drop), so
// that Drops reports every drop of the queue in one place. It changes no
// occupancy. It must be called only by port's owning worker; r must not be
// Admitted.
func (m *MMU) CountDrop(port, queue int, r Reason, size int) {
	if r == Admitted || r >= NumReasons {
		panic("buffer: CountDrop with reason " + r.String())
	}
	d := &m.ports[port].queues[queue].drops[r]
	d.packets.Add(1)
	d.bytes.Add(int64(size))
}

// Drops returns the packets and bytes of queue of port dropped for reason
// r since New: by Admit, or recorded with CountDrop. Admitted reports 0, 0.
func (m *MMU) Drops(port, queue int, r Reason) (packets, bytes int64) {
	d := &m.ports[port].queues[queue].drops[r]
	return d.packets.Load(), d.bytes.Load()
}

// Threshold returns the limit on the shared occupancy of queue of port
// right now. For a DT queue it is ⌈α·(B − ΣQ)⌉ (002 §IV-B Eq. 1), so a packet
// is admitted, pool space permitting, exactly while QueueSharedBytes is
// below it; for a capped queue it is Cap, which the shared occupancy after a
// packet may reach but not exceed.
func (m *MMU) Threshold(port, queue int) int64 {
	p := &m.ports[port]
	q := &p.queues[queue]
	if q.cap > 0 {
		return q.cap
	}
	return int64(math.Ceil(math.Float64frombits(q.alpha.Load()) * float64(p.pool.size-p.pool.shared.Load())))
}

// SetAlpha changes the Dynamic Threshold α of queue of port, in
// (0, MaxAlpha] as Config takes it; a queue with a static cap has none.
// The next admission to the queue compares against the new threshold. It
// is safe to call from any goroutine.
func (m *MMU) SetAlpha(port, queue int, alpha float64) error {
	if port < 0 || port >= len(m.ports) || queue < 0 || queue >= len(m.ports[port].queues) {
		return fmt.Errorf("%w: ports[%d].queues[%d]: no such queue", ErrConfig, port, queue)
	}
	q := &m.ports[port].queues[queue]
	if q.cap > 0 {
		return fmt.Errorf("%w: ports[%d].queues[%d].alpha: the queue has a static cap of %d bytes, not a DT alpha", ErrConfig, port, queue, q.cap)
	}
	if !(alpha > 0 && alpha <= MaxAlpha) {
		return fmt.Errorf("%w: ports[%d].queues[%d].alpha: %g outside (0, %d]", ErrConfig, port, queue, alpha, MaxAlpha)
	}
	q.alpha.Store(math.Float64bits(alpha))
	return nil
}

// QueueBytes returns the bytes queue of port holds, private and shared.
func (m *MMU) QueueBytes(port, queue int) int64 { return m.ports[port].queues[queue].bytes.Load() }

// QueuePackets returns the packets queue of port holds.
func (m *MMU) QueuePackets(port, queue int) int64 {
	return m.ports[port].queues[queue].packets.Load()
}

// QueueSharedBytes returns the bytes queue of port holds beyond its reserve,
// in its pool's shared buffer: Q_i of 002 §IV-B Eq. 1.
func (m *MMU) QueueSharedBytes(port, queue int) int64 {
	q := &m.ports[port].queues[queue]
	return max(q.bytes.Load()-q.reserve, 0)
}

// QueuePeak returns the most bytes queue of port has held since New or the
// last ResetPeaks of port (its watermark).
func (m *MMU) QueuePeak(port, queue int) int64 { return m.ports[port].queues[queue].peak.Load() }

// PortBytes returns the bytes all queues of port hold: the sum of their
// QueueBytes, each read atomically.
func (m *MMU) PortBytes(port int) int64 {
	var b int64
	for i := range m.ports[port].queues {
		b += m.ports[port].queues[i].bytes.Load()
	}
	return b
}

// PortPackets returns the packets all queues of port hold: the sum of their
// QueuePackets, each read atomically.
func (m *MMU) PortPackets(port int) int64 {
	var k int64
	for i := range m.ports[port].queues {
		k += m.ports[port].queues[i].packets.Load()
	}
	return k
}

// PortPeak returns the most bytes port has held since New or its last
// ResetPeaks (its watermark).
func (m *MMU) PortPeak(port int) int64 { return m.ports[port].peak.Load() }

// PortPool returns the index of the pool port draws from.
func (m *MMU) PortPool(port int) int { return m.ports[port].index }

// PoolBytes returns the bytes all ports of pool hold, in their private
// reserves and in the shared pool. It sums every queue of those ports, for
// telemetry; it is not a snapshot, so while workers run it may momentarily
// differ from any state the pool was in. Markers want PoolSharedBytes.
func (m *MMU) PoolBytes(pool int) int64 {
	var b int64
	for _, p := range m.pools[pool].ports {
		for i := range p.queues {
			b += p.queues[i].bytes.Load()
		}
	}
	return b
}

// PoolPackets returns the packets all ports of pool hold, summed as
// PoolBytes sums bytes.
func (m *MMU) PoolPackets(pool int) int64 {
	var k int64
	for _, p := range m.pools[pool].ports {
		for i := range p.queues {
			k += p.queues[i].packets.Load()
		}
	}
	return k
}

// PoolSharedBytes returns the pool's shared occupancy ΣQ (002 §IV-B Eq. 1
// and 2): the bytes its queues hold beyond their reserves, never more than
// PoolSize. BCC's shared-buffer ECN/RED marks on this (002 §IV-B).
func (m *MMU) PoolSharedBytes(pool int) int64 { return m.pools[pool].shared.Load() }

// PoolSize returns B, the size of pool's shared buffer in bytes.
func (m *MMU) PoolSize(pool int) int64 { return m.pools[pool].size }

// Pools returns the number of pools.
func (m *MMU) Pools() int { return len(m.pools) }

// Ports returns the number of ports.
func (m *MMU) Ports() int { return len(m.ports) }

// Queues returns the number of queues of port.
func (m *MMU) Queues(port int) int { return len(m.ports[port].queues) }

// ResetPeaks starts new watermarks for port and its queues at their
// current occupancy, for periodic watermark telemetry. It may be called from
// any goroutine; an admission racing with it may leave a peak below that
// admission's occupancy until the queue grows again.
func (m *MMU) ResetPeaks(port int) {
	p := &m.ports[port]
	for i := range p.queues {
		q := &p.queues[i]
		q.peak.Store(q.bytes.Load())
	}
	p.peak.Store(m.PortBytes(port))
}
