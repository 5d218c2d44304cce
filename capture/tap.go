package capture

import (
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
)

// portTap is the dataplane.Tap of one port: it shows every event to each
// capture running on the port. It is immutable; the Manager installs a new
// one when the set changes.
type portTap struct{ caps []*capture }

// Record implements dataplane.Tap. The filter is written out here rather
// than in a method the inliner would refuse, so that the common case of a
// marked-only capture, an event it leaves out, costs no call (about 3 ns
// against 7 with a call and an atomic add, BenchmarkRecordFiltered).
func (t *portTap) Record(ev *dataplane.Event) {
	for _, c := range t.caps {
		f := &c.filter
		if f.kinds&(1<<ev.Kind) == 0 {
			continue
		}
		// Marked: the dataplane names a marker on an egress event only
		// when it set CE. Queue: -1 for ingress events. DSCP: as the
		// frame carries it at the event.
		if (!f.marked || ev.Marker != "") && (!f.trimmed || ev.Trimmed) && (f.queue < 0 || ev.Queue == f.queue) && (f.dscp < 0 || f.matchDSCP(ev.Frame)) {
			c.record(ev)
			continue
		}
		// Counted in a field of the worker's own and published every
		// filteredEvery events and with each selected packet: no atomic
		// read-modify-write per packet left out.
		c.nFiltered++
		if c.nFiltered%filteredEvery == 0 {
			c.filtered.Store(c.nFiltered)
		}
	}
}

// gate lets Stop know when the port's worker can no longer touch the ring.
// The worker stores busy, then loads stopped; Stop stores stopped, then
// waits for busy to clear. Go's atomics are sequentially consistent, so
// either the worker sees stopped and leaves the ring alone, or Stop sees
// busy and waits for the push to finish.
type gate struct {
	_       [64]byte
	busy    atomic.Bool
	stopped atomic.Bool
	_       [62]byte
}

// filter is a capture's selection, fixed at start.
type filter struct {
	kinds   uint8 // bit k: events of dataplane.EventKind k
	marked  bool  // egress packets with a marker's CE only
	trimmed bool  // trimmed packets only
	queue   int   // -1: any
	dscp    int   // -1: any
}

func newFilter(s Spec) filter {
	f := filter{queue: -1, dscp: -1, marked: s.Filter == Marked, trimmed: s.Filter == Trimmed}
	switch s.Direction {
	case Ingress:
		f.kinds = 1 << dataplane.EventIngress
	case Egress:
		f.kinds = 1 << dataplane.EventEgress
	default:
		// A trim drops the packet and sends its header on (SAI): the
		// drops see it, as cut.
		f.kinds = 1<<dataplane.EventDrop | 1<<dataplane.EventTrim
	}
	if s.Queue != nil {
		f.queue = *s.Queue
	}
	if s.DSCP != nil {
		f.dscp = *s.DSCP
	}
	return f
}

// matchDSCP reports whether frame carries the filter's DSCP. It stays out
// of line to keep Record's common path short.
//
//go:noinline
func (f *filter) matchDSCP(frame []byte) bool {
	d, ok := frameDSCP(frame)
	return ok && int(d) == f.dscp
}

// record runs on the port's worker for a selected event: copy it into the
// ring or count the skip. It never blocks and never allocates.
func (c *capture) record(ev *dataplane.Event) {
	c.gate.busy.Store(true)
	if !c.gate.stopped.Load() {
		if !c.ring.push(ev) {
			c.skipped.Add(1)
		}
		c.filtered.Store(c.nFiltered)
	}
	c.gate.busy.Store(false)
}

// filteredEvery is how many filtered-out events the worker counts before
// it publishes the count.
const filteredEvery = 64

// frameDSCP reads the DSCP of an Ethernet frame's IPv4 or IPv6 header,
// behind up to two VLAN tags. The frame is read as it is at the event, so
// ingress events (which come before parsing) are filtered like the others.
func frameDSCP(f []byte) (uint8, bool) {
	off := 12
	for tags := 0; ; tags++ {
		if len(f) < off+2 {
			return 0, false
		}
		et := uint16(f[off])<<8 | uint16(f[off+1])
		switch {
		case (et == packet.EtherTypeVLAN || et == packet.EtherTypeQinQ) && tags < 2:
			off += 4
			continue
		case et == packet.EtherTypeIPv4 && len(f) >= off+4 && f[off+2]>>4 == 4:
			return f[off+3] >> 2, true
		case et == packet.EtherTypeIPv6 && len(f) >= off+4 && f[off+2]>>4 == 6:
			return (f[off+2]&0x0f)<<2 | f[off+3]>>6, true
		}
		return 0, false
	}
}
