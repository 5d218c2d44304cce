// Package memport provides in-memory ports: a pair of ports joined by a link
// of a given rate and propagation delay, in the time of a timestamp.Clock.
// With a virtual clock it is the test double of a NIC, in the way
// wireguard-go's tuntest stands in for a TUN device; with the monotonic
// clock it is a fast software link for benchmarks.
//
// A frame transmitted at time t on one end departs when the link is free,
// takes (len + Overhead)·8/Rate to serialize, and can be received on the
// other end Delay later. The receiver sees the arrival time as the frame's
// RxTime, as a NIC with hardware timestamps would report it.
//
// A link copies frames by default. With Link.Swap its ports exchange
// buffers with the caller instead, as AF_XDP ports do with the frames of a
// UMEM they share with the switch: ports.Port allows both, and a switch
// must work with either.
package memport

import (
	"fmt"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/internal/spsc"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
)

// Clock reads monotonic nanoseconds; timestamp.Clock satisfies it.
type Clock interface {
	Now() int64
}

// Link describes one direction of the wire between the two ports of a pair.
type Link struct {
	Rate      int64 // bit/s; 0 serializes instantly
	Delay     int64 // propagation delay in ns
	Overhead  int   // bytes added per frame on the wire (24 for preamble, IFG and FCS)
	Capacity  int   // frames in flight per direction; a power of two, default 4096
	FrameSize int   // largest frame the link carries, default 2048
	// Swap makes the ports exchange buffers with their callers instead of
	// copying frames: Transmit puts the caller's buffer itself on the wire
	// and gives the caller a free one, and Receive hands the caller the
	// buffer the frame crossed the wire in and takes the caller's. Only a
	// buffer of FrameSize bytes is exchanged; others are copied.
	Swap bool
}

func (l *Link) setDefaults() error {
	if l.Capacity == 0 {
		l.Capacity = 4096
	}
	if l.FrameSize == 0 {
		l.FrameSize = 2048
	}
	switch {
	case l.Rate < 0:
		return fmt.Errorf("memport: rate %d bit/s is negative; want ≥ 0 (0 is unlimited)", l.Rate)
	case l.Delay < 0:
		return fmt.Errorf("memport: delay %d ns is negative; want ≥ 0", l.Delay)
	case l.Overhead < 0:
		return fmt.Errorf("memport: overhead %d bytes is negative; want ≥ 0", l.Overhead)
	case l.FrameSize < 64:
		return fmt.Errorf("memport: frame size %d below 64 bytes", l.FrameSize)
	}
	return nil
}

// slot is one frame on the wire.
type slot struct {
	buf    []byte
	n      int
	arrive int64
}

// wire is one direction: an SPSC ring of slots, written by the sending port
// and read by the receiving one. Slot buffers are preallocated and cycle
// through free, so no frame is allocated per packet.
type wire struct {
	link  Link
	clock Clock
	full  *spsc.Ring[*slot] // in flight, in departure order
	free  *spsc.Ring[*slot] // returned by the receiver
	busy  int64             // time the sender's serializer is busy until (sender only)

	oversize atomic.Uint64 // frames too large for the link or the receiver
}

func newWire(clock Clock, l Link) (*wire, error) {
	full, err := spsc.New[*slot](l.Capacity)
	if err != nil {
		return nil, fmt.Errorf("memport: capacity: %w", err)
	}
	free, _ := spsc.New[*slot](l.Capacity)
	mem := make([]byte, l.Capacity*l.FrameSize)
	for i := 0; i < l.Capacity; i++ {
		free.Push(&slot{buf: mem[i*l.FrameSize : (i+1)*l.FrameSize : (i+1)*l.FrameSize]})
	}
	return &wire{link: l, clock: clock, full: full, free: free}, nil
}

// serialize returns the wire time of an n-byte frame in ns.
func (w *wire) serialize(n int) int64 {
	if w.link.Rate == 0 {
		return 0
	}
	return int64(n+w.link.Overhead) * 8 * 1_000_000_000 / w.link.Rate
}

// Port is one end of a pair. Use from one goroutine at a time; the two ends
// of a pair may be used from two different goroutines.
type Port struct {
	name    string
	tx, rx  *wire
	closed  atomic.Bool
	swapped atomic.Uint64 // buffers exchanged with callers (Link.Swap)
	stats   struct {
		rxPackets, rxBytes, txPackets, txBytes atomic.Uint64
	}
}

var (
	_ ports.Port          = (*Port)(nil)
	_ ports.StatsReporter = (*Port)(nil)
)

// Pair returns two ports joined by a link; a→b and b→a both follow l.
func Pair(nameA, nameB string, clock Clock, l Link) (*Port, *Port, error) {
	if err := l.setDefaults(); err != nil {
		return nil, nil, err
	}
	ab, err := newWire(clock, l)
	if err != nil {
		return nil, nil, err
	}
	ba, err := newWire(clock, l)
	if err != nil {
		return nil, nil, err
	}
	return &Port{name: nameA, tx: ab, rx: ba}, &Port{name: nameB, tx: ba, rx: ab}, nil
}

// Name returns the port's name.
func (p *Port) Name() string { return p.name }

// Transmit puts frames on the wire. It takes frames until the link holds
// Capacity frames in flight; a frame larger than the link's FrameSize is
// counted as oversize and consumed (it is "sent" and lost, as on a real
// link with a smaller MTU).
func (p *Port) Transmit(ds []*packet.Desc) (int, error) {
	if p.closed.Load() {
		return 0, ports.ErrClosed
	}
	w := p.tx
	now := w.clock.Now()
	var bytes uint64
	for i, d := range ds {
		if d.Len > w.link.FrameSize {
			w.oversize.Add(1)
			continue
		}
		s, ok := w.free.Pop()
		if !ok {
			p.stats.txPackets.Add(uint64(i))
			p.stats.txBytes.Add(bytes)
			return i, nil
		}
		if w.link.Swap && len(d.Buf) == w.link.FrameSize {
			s.buf, d.Buf = d.Buf, s.buf
			s.n = d.Len
			p.swapped.Add(1)
		} else {
			s.n = copy(s.buf, d.Frame())
		}
		start := max(now, w.busy)
		w.busy = start + w.serialize(s.n)
		s.arrive = w.busy + w.link.Delay
		w.full.Push(s)
		bytes += uint64(s.n)
	}
	p.stats.txPackets.Add(uint64(len(ds)))
	p.stats.txBytes.Add(bytes)
	return len(ds), nil
}

// MaxFrame returns the largest frame the link toward the peer carries, its
// FrameSize.
func (p *Port) MaxFrame() int { return p.tx.link.FrameSize }

// Receive copies frames that have arrived by now into ds and stamps each
// with its arrival time.
func (p *Port) Receive(ds []*packet.Desc) (int, error) {
	if p.closed.Load() {
		return 0, ports.ErrClosed
	}
	w := p.rx
	now := w.clock.Now()
	n := 0
	var bytes uint64
	for n < len(ds) {
		s, ok := w.full.Peek()
		if !ok || s.arrive > now {
			break
		}
		w.full.Pop()
		d := ds[n]
		if s.n > len(d.Buf) {
			w.oversize.Add(1)
			w.free.Push(s)
			continue
		}
		if w.link.Swap && len(d.Buf) == w.link.FrameSize {
			s.buf, d.Buf = d.Buf, s.buf
			d.Len = s.n
			p.swapped.Add(1)
		} else {
			d.Len = copy(d.Buf, s.buf[:s.n])
		}
		d.RxTime = s.arrive
		w.free.Push(s)
		bytes += uint64(d.Len)
		n++
	}
	p.stats.rxPackets.Add(uint64(n))
	p.stats.rxBytes.Add(bytes)
	return n, nil
}

// NextArrival returns the arrival time of the next frame on the wire toward
// this port, and false when none is in flight. Virtual-time tests use it to
// advance the clock exactly.
func (p *Port) NextArrival() (int64, bool) {
	s, ok := p.rx.full.Peek()
	if !ok {
		return 0, false
	}
	return s.arrive, true
}

// InFlight returns the number of frames on the wire toward this port.
func (p *Port) InFlight() int { return p.rx.full.Len() }

// Swapped returns how many buffers the port exchanged with its callers
// (Link.Swap), transmitting and receiving.
func (p *Port) Swapped() uint64 { return p.swapped.Load() }

// Stats returns the port's counters.
func (p *Port) Stats() ports.Stats {
	return ports.Stats{
		RxPackets:  p.stats.rxPackets.Load(),
		RxBytes:    p.stats.rxBytes.Load(),
		RxOversize: p.rx.oversize.Load(),
		TxPackets:  p.stats.txPackets.Load(),
		TxBytes:    p.stats.txBytes.Load(),
	}
}

// Close marks the port closed.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return ports.ErrClosed
	}
	return nil
}
