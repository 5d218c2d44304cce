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

// Record implements dataplane.Tap.
func (t *portTap) Record(ev *dataplane.Event) {
	for _, c := range t.caps {
		c.record(ev)
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
	kind   dataplane.EventKind
	marked bool // egress packets with a marker's CE only
	queue  int  // -1: any
	dscp   int  // -1: any
}

func newFilter(s Spec) filter {
	f := filter{queue: -1, dscp: -1, marked: s.Filter == Marked}
	switch s.Direction {
	case Ingress:
		f.kind = dataplane.EventIngress
	case Egress:
		f.kind = dataplane.EventEgress
	default:
		f.kind = dataplane.EventDrop
	}
	if s.Queue != nil {
		f.queue = *s.Queue
	}
	if s.DSCP != nil {
		f.dscp = *s.DSCP
	}
	return f
}

// match reports whether ev, already of the filter's kind, is selected.
func (f *filter) match(ev *dataplane.Event) bool {
	if f.marked && ev.Marker == "" {
		return false // the dataplane names a marker on egress only when it set CE
	}
	if f.queue >= 0 && ev.Queue != f.queue {
		return false
	}
	if f.dscp >= 0 {
		if d, ok := frameDSCP(ev.Frame); !ok || int(d) != f.dscp {
			return false
		}
	}
	return true
}

// record runs on the port's worker: filter, copy into the ring or count
// the skip. It never blocks and never allocates. Filtered-out events, the
// common case of a marked-only capture, cost no atomic read-modify-write:
// they are counted in a field of the worker's own and published every
// filteredEvery of them and with each selected packet.
func (c *capture) record(ev *dataplane.Event) {
	if ev.Kind != c.filter.kind {
		return
	}
	if !c.filter.match(ev) {
		c.nFiltered++
		if c.nFiltered%filteredEvery == 0 {
			c.filtered.Store(c.nFiltered)
		}
		return
	}
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
