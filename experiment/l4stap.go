package experiment

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// l4sTap keeps, while on is set, the queueing delay and class of every
// data packet of l4s-coexist's flows that the bottleneck port sends, and
// counts per class the packets it sends, those it sends CE and those the
// switch drops (on any port: a drop at admission is its ingress port's
// event). The class is the packet's destination port, so that the two
// classes are told apart in one queue too. It also times the gaps
// between packets arriving at the switch, on any port: while the flows run
// a gap of l4sGap or more means the worker or the hosts were off their
// CPUs, and the packets of the gap then arrive as one burst. It runs on
// the worker: it neither allocates nor locks, and drops records that do
// not fit.
type l4sTap struct {
	on     atomic.Bool
	port   int // the bottleneck's index
	n      atomic.Int64
	missed atomic.Uint64
	recs   []l4sRecord

	pkts, marks, drops [2]atomic.Uint64

	lastIn         atomic.Int64 // the last arrival's time, ns; 0 before the first
	gaps           atomic.Uint64
	gapNS, longest atomic.Int64
}

// l4sGap is the least silence at the switch's ports that l4sTap counts as
// a gap: at the flows' rates the switch sees a packet every 12 µs or so.
const l4sGap = 2 * time.Millisecond

type l4sRecord struct {
	t, sojourn int64 // the switch's dequeue time and the packet's queueing delay, ns
	class      uint8
}

// newL4STap returns a tap for port with room for duration of full frames
// at rate, and half as many again.
func newL4STap(port int, rate int64, duration time.Duration) *l4sTap {
	n := int(float64(rate)/(8*wireFrame)*duration.Seconds()*1.5) + 1024
	return &l4sTap{port: port, recs: make([]l4sRecord, n)}
}

// Record implements dataplane.Tap.
func (t *l4sTap) Record(ev *dataplane.Event) {
	if !t.on.Load() {
		return
	}
	if ev.Kind == dataplane.EventIngress {
		if last := t.lastIn.Swap(ev.Time); last != 0 && ev.Time-last >= int64(l4sGap) {
			d := ev.Time - last
			t.gaps.Add(1)
			t.gapNS.Add(d)
			if d > t.longest.Load() {
				t.longest.Store(d)
			}
		}
		return
	}
	c, ok := l4sClass(ev.Frame)
	if !ok {
		return
	}
	if ev.Kind == dataplane.EventDrop {
		t.drops[c].Add(1)
		return
	}
	if ev.Port != t.port {
		return
	}
	t.pkts[c].Add(1)
	if ev.Frame[14+1]&3 == 3 {
		t.marks[c].Add(1)
	}
	i := t.n.Add(1) - 1
	if i >= int64(len(t.recs)) {
		t.missed.Add(1)
		return
	}
	t.recs[i] = l4sRecord{t: ev.Time, sojourn: ev.Sojourn, class: uint8(c)}
}

// records returns what the tap kept; call it once the worker stopped.
func (t *l4sTap) records() []l4sRecord {
	return t.recs[:min(t.n.Load(), int64(len(t.recs)))]
}

// l4sClass returns the class of an untagged IPv4 frame carrying a TCP
// segment to one of the experiment's receiver ports: data of its flows,
// not their ACKs.
func l4sClass(f []byte) (int, bool) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 6 {
		return 0, false
	}
	ihl := int(f[14]&0xf) * 4
	p := 14 + ihl
	if ihl < 20 || len(f) < p+4 {
		return 0, false
	}
	switch binary.BigEndian.Uint16(f[p+2:]) {
	case l4sPortL:
		return clsL, true
	case l4sPortC:
		return clsC, true
	}
	return 0, false
}
