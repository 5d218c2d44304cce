package dataplane

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
)

// Tap receives packet events of the ports it is set on, for capture. Record
// runs on the port's worker for every event, so it must not block, lock or
// allocate: it copies what it keeps (the event and its frame are valid only
// during the call, and other taps of the port see them after it, so it
// must not change them) and hands the copy to another goroutine, or skips
// it.
type Tap interface {
	Record(ev *Event)
}

// EventKind says what happened to a packet.
type EventKind uint8

// Event kinds.
const (
	EventIngress EventKind = iota // received, as it arrived
	EventEgress                   // handed to the egress device, after any CE mark
	EventDrop                     // dropped; Drop says why
	// EventTrim: refused for the reason Drop, and trimmed (PortConfig.Trim)
	// for the trim queue instead of dropped, as SAI has it: the original
	// is dropped and its header sent on. Frame is the packet as cut, Queue
	// the queue that refused it, CutFrom its length before the cut. The
	// trimmed packet's later events (egress, or a drop where the trim
	// queue refuses it) come with Trimmed set.
	EventTrim
)

func (k EventKind) String() string {
	switch k {
	case EventIngress:
		return "ingress"
	case EventEgress:
		return "egress"
	case EventTrim:
		return "trim"
	}
	return "drop"
}

// Event is one packet event. Time is the switch's own timestamp of the
// event, from the clock the markers use: the receive time for ingress, the
// dequeue time for egress, the drop time for drops.
type Event struct {
	Kind  EventKind
	Time  int64
	Port  int // the ingress port for ingress events and ingress-side drops, else the egress port
	Queue int // egress queue, -1 before classification
	Desc  *packet.Desc
	Frame []byte

	Drop    DropReason    // for EventDrop and EventTrim
	Marker  string        // the marker that set CE (egress) or dropped the packet; "" if none
	Stage   marking.Stage // the stage Marker runs at
	Sojourn int64         // ns in the queue, for egress events and dequeue-side drops; -1 if not queued

	// Value and Threshold are what Marker compared (bytes or ns).
	Value, Threshold int64

	// Trimmed says the packet is a trimmed header (packet.Desc.Trimmed),
	// and CutFrom, for EventTrim, is its length before the cut.
	Trimmed bool
	CutFrom int
	// INT is what the port's INT (PortConfig.INT) did with the packet, for
	// egress events: INTNone unless the packet carries INT headers the
	// port looked into.
	INT INTOutcome
}

// tapSet is the taps of a port. It is never changed once published:
// ReplaceTap publishes a new one, so that the port's worker reads a set
// with one atomic load and no lock.
type tapSet struct{ taps []Tap }

// tapPointer is a port's set of taps; nil when it has none.
type tapPointer = atomic.Pointer[tapSet]

// AddTap starts delivering the events of port to t, beside the port's
// other taps (captures, an experiment's probe). It is safe to call while
// the switch runs. t must be comparable (a pointer, say), so that
// RemoveTap can find it.
func (s *Switch) AddTap(port int, t Tap) error { return s.ReplaceTap(port, nil, t) }

// RemoveTap stops delivering the events of port to t.
func (s *Switch) RemoveTap(port int, t Tap) error { return s.ReplaceTap(port, t, nil) }

// ReplaceTap puts tap new in the place of tap old on port, in one step,
// so that no event goes to neither or to both: old nil adds new, new nil
// removes old. It fails if old is not one of the port's taps, or new
// already is. It is safe to call while the switch runs.
func (s *Switch) ReplaceTap(port int, old, new Tap) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("dataplane: tap on port %d: outside [0, %d]", port, len(s.ports)-1)
	}
	s.tapMu.Lock()
	defer s.tapMu.Unlock()
	p := s.ports[port]
	var taps []Tap
	if set := p.tap.Load(); set != nil {
		taps = slices.Clone(set.taps)
	}
	if new != nil && slices.Contains(taps, new) {
		return fmt.Errorf("dataplane: tap on port %d (%s): %T is set already", port, p.name, new)
	}
	if old != nil {
		i := slices.Index(taps, old)
		if i < 0 {
			return fmt.Errorf("dataplane: tap on port %d (%s): %T is not set", port, p.name, old)
		}
		taps = slices.Delete(taps, i, i+1)
	}
	if new != nil {
		taps = append(taps, new)
	}
	if len(taps) == 0 {
		p.tap.Store(nil)
	} else {
		p.tap.Store(&tapSet{taps})
	}
	return nil
}

// Ports returns the names of the switch's ports, by index.
func (s *Switch) Ports() []string {
	names := make([]string, len(s.ports))
	for i, p := range s.ports {
		names[i] = p.name
	}
	return names
}

// markerName returns the name of the marker a descriptor's MarkedBy names.
func (p *port) markerName(by uint8) string {
	i := int(by) - 1
	if i < 0 || i >= p.enq.Len()+p.deq.Len() {
		return ""
	}
	if i < p.enq.Len() {
		return p.enq.Name(i)
	}
	return p.deq.Name(i - p.enq.Len())
}

// markerIndex returns the MarkedBy value of member i of the chain at stage.
func (p *port) markerIndex(stage marking.Stage, i int) uint8 {
	if stage == marking.Dequeue && p.enq.Chain != nil {
		i += p.enq.Len()
	}
	return uint8(i + 1)
}

// tapEvent delivers one event to each of the port's taps.
func (w *worker) tapEvent(p *port, kind EventKind, d *packet.Desc, now int64, r DropReason, marker uint8, sojourn int64) {
	w.tapINT(p, kind, d, now, r, marker, sojourn, INTNone)
}

// tapINT is tapEvent with what the port's INT did with the packet.
func (w *worker) tapINT(p *port, kind EventKind, d *packet.Desc, now int64, r DropReason, marker uint8, sojourn int64, in INTOutcome) {
	set := p.tap.Load()
	if set == nil {
		return
	}
	ev := &w.event
	*ev = Event{
		Kind: kind, Time: now, Port: p.idx, Queue: -1, Desc: d, Frame: d.Frame(),
		Drop: r, Sojourn: sojourn, Trimmed: d.Trimmed, INT: in,
	}
	if int(d.OutPort) == p.idx && kind != EventIngress {
		ev.Queue = int(d.Queue)
	}
	if marker != 0 {
		ev.Marker = p.markerName(marker)
		if p.enq.Chain == nil || int(marker) > p.enq.Len() {
			ev.Stage = marking.Dequeue
		}
		ev.Value, ev.Threshold = d.MarkValue, d.MarkThreshold
	}
	for _, t := range set.taps {
		t.Record(ev)
	}
}

// tapTrim delivers the EventTrim of d, which its queue refused for r at
// now and the port cut from from bytes.
func (w *worker) tapTrim(p *port, d *packet.Desc, r DropReason, now int64, from int) {
	set := p.tap.Load()
	if set == nil {
		return
	}
	ev := &w.event
	*ev = Event{
		Kind: EventTrim, Time: now, Port: p.idx, Queue: int(d.Queue), Desc: d, Frame: d.Frame(),
		Drop: r, Sojourn: -1, Trimmed: d.Trimmed, CutFrom: from,
	}
	for _, t := range set.taps {
		t.Record(ev)
	}
}
