package capture

import (
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// record is the fixed metadata a slot keeps next to the frame's bytes.
type record struct {
	time      int64 // the switch's timestamp of the event, monotonic ns
	sojourn   int64 // ns, -1 if not queued
	value     int64 // what the marker compared
	threshold int64
	length    int32 // frame length
	caplen    int32 // bytes kept in the slot
	queue     int16 // -1 before classification
	kind      dataplane.EventKind
	drop      dataplane.DropReason
	trimmed   bool   // a trimmed packet (dataplane.Event.Trimmed)
	cutFrom   int32  // for a trim, the frame's length before the cut
	marker    string // the marker's name; points into the switch's own list
	intOut    dataplane.INTOutcome
	intAt     int16 // frame offset of the INT headers, when intOut says the packet carries some
}

// ring is a bounded single-producer/single-consumer queue of fixed-size
// slots: a record and up to slot bytes of frame each. The producer (the
// port's worker) fills the slot at tail in place and release-stores tail;
// the consumer (the writer) acquire-loads tail, reads the slots and
// release-stores head. Each side caches the other's index and reloads it
// only when the cache says full or empty, so the shared cache lines move
// once per batch rather than once per packet. Indices run free and wrap by
// masking.
type ring struct {
	_         [64]byte
	tail      atomic.Uint64 // written by the producer
	headCache uint64        // the producer's last view of head
	_         [48]byte
	head      atomic.Uint64 // written by the consumer
	tailCache uint64        // the consumer's last view of tail
	_         [48]byte

	mask uint64
	slot int
	recs []record
	data []byte // len(recs) × slot
}

func newRing(slots, slot int) *ring {
	return &ring{
		mask: uint64(slots - 1), slot: slot,
		recs: make([]record, slots),
		data: make([]byte, slots*slot),
	}
}

// push copies ev into the next slot, at most slot bytes of its frame, and
// reports whether there was room. Producer only.
func (r *ring) push(ev *dataplane.Event) bool {
	t := r.tail.Load()
	if t-r.headCache > r.mask {
		r.headCache = r.head.Load()
		if t-r.headCache > r.mask {
			return false
		}
	}
	i := t & r.mask
	off := int(i) * r.slot
	n := copy(r.data[off:off+r.slot], ev.Frame)
	r.recs[i] = record{
		time: ev.Time, sojourn: ev.Sojourn, value: ev.Value, threshold: ev.Threshold,
		length: int32(len(ev.Frame)), caplen: int32(n), queue: int16(ev.Queue),
		kind: ev.Kind, drop: ev.Drop, marker: ev.Marker, trimmed: ev.Trimmed, cutFrom: int32(ev.CutFrom), intOut: ev.INT,
	}
	if ev.INT != dataplane.INTNone && ev.Desc != nil {
		r.recs[i].intAt = int16(ev.Desc.L4Off + 8) // the UDP payload
	}
	r.tail.Store(t + 1)
	return true
}

// peek returns the oldest slot without removing it. Consumer only.
func (r *ring) peek() (*record, []byte, bool) {
	h := r.head.Load()
	if h == r.tailCache {
		r.tailCache = r.tail.Load()
		if h == r.tailCache {
			return nil, nil, false
		}
	}
	i := h & r.mask
	off := int(i) * r.slot
	rec := &r.recs[i]
	return rec, r.data[off : off+int(rec.caplen)], true
}

// pop frees the slot peek returned. Consumer only.
func (r *ring) pop() {
	r.head.Store(r.head.Load() + 1)
}
