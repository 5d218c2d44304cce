package scheduler

import "github.com/ecnswitch/ecnswitch/packet"

// wfq is weighted fair queueing below an optional strict-priority level, with
// the self-clocked virtual time of SCFQ (Golestani 1994): a packet of c
// charged bytes arriving at queue i gets the finish tag
//
//	F = max(V, F_prev,i) + c/w_i
//
// where F_prev,i is the tag of the packet before it in queue i and V is the
// tag of the packet most recently sent; a packet arriving at an empty queue
// has F_prev,i ≤ V and gets F = V + c/w_i. The packet with the smallest tag is
// sent next; ties go in heap order, which is deterministic. Tags are in units of 2^-24 byte
// per unit weight and wrap around; comparisons are serial-number ones. They
// are safe because every queued tag lies in [V, V + backlog_i·2^24/w_i], and
// MaxCapacity·(MaxMTU+24)·2^24 < 2^63.
type wfq struct {
	base
	tags []uint64 // finish tag of each queued packet, parallel to slots
	v    uint64   // system virtual time: the tag of the last packet sent

	// A binary min-heap of the non-empty WFQ queues keyed by the finish
	// tag of their head packet: O(log n) per packet.
	heap [MaxQueues]uint8
	key  [MaxQueues]uint64
	n    int
}

func newWFQ(p params) *wfq {
	s := &wfq{}
	s.init(p)
	s.tags = make([]uint64, len(s.slots))
	return s
}

func (s *wfq) Enqueue(d *packet.Desc, now int64) bool {
	i := int(d.Queue)
	if s.strict>>i&1 != 0 {
		return s.enqueueStrict(i, d, now)
	}
	q := &s.q[i]
	slot := i<<s.shift | int(q.tail&s.mask)
	if !s.push(i, d, now) {
		return false
	}
	// F = max(V, F_prev) + c/w. A queue that was empty has F_prev ≤ V (its
	// last tag was served, and V only grows), so its tag starts from V. Its
	// old F_prev is never compared: after 2^63 units of V it would look
	// ahead of V and starve the queue (issue 12).
	f := s.v
	if q.tail-q.head > 1 {
		f = q.lastTag // queued tags lie in [V, V + backlog·2^24/w]
	}
	f += uint64(s.overhead.Wire(d.Len)) * q.inc
	s.tags[slot] = f
	q.lastTag = f
	if q.tail-q.head == 1 {
		s.heapPush(uint8(i), f)
	}
	return true
}

func (s *wfq) Dequeue(now int64) *packet.Desc {
	if s.busy != 0 {
		return s.dequeueStrict(now)
	}
	if s.n == 0 {
		return nil
	}
	i := int(s.heap[0])
	s.v = s.key[0]
	d, empty := s.pop(i, now)
	if empty {
		s.n--
		if s.n > 0 {
			last := s.n & (MaxQueues - 1)
			s.siftDown(s.heap[last], s.key[last])
		}
	} else {
		s.siftDown(uint8(i), s.tags[i<<s.shift|int(s.q[i].head&s.mask)])
	}
	return d
}

func (s *wfq) RoundTime(int64) int64 { return 0 }

// before reports whether tag a precedes tag b, modulo 2^64.
func before(a, b uint64) bool { return int64(a-b) < 0 }

// heapPush adds queue i with head tag f to the heap.
func (s *wfq) heapPush(i uint8, f uint64) {
	j := s.n
	s.n++
	for j > 0 {
		p := (j - 1) / 2
		if !before(f, s.key[p&(MaxQueues-1)]) {
			break
		}
		s.heap[j&(MaxQueues-1)], s.key[j&(MaxQueues-1)] = s.heap[p&(MaxQueues-1)], s.key[p&(MaxQueues-1)]
		j = p
	}
	s.heap[j&(MaxQueues-1)], s.key[j&(MaxQueues-1)] = i, f
}

// siftDown puts queue i with head tag f at the root and restores the heap.
func (s *wfq) siftDown(i uint8, f uint64) {
	j, n := 0, s.n
	for {
		m := 2*j + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && before(s.key[r&(MaxQueues-1)], s.key[m&(MaxQueues-1)]) {
			m = r
		}
		if !before(s.key[m&(MaxQueues-1)], f) {
			break
		}
		s.heap[j&(MaxQueues-1)], s.key[j&(MaxQueues-1)] = s.heap[m&(MaxQueues-1)], s.key[m&(MaxQueues-1)]
		j = m
	}
	s.heap[j&(MaxQueues-1)], s.key[j&(MaxQueues-1)] = i, f
}
