package udp

import (
	"encoding/binary"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// datagram is one datagram in a pipe.
type datagram struct {
	b    []byte
	rx   RX
	from net.Addr
}

// pipeEnd is one end of a lossless, unbounded in-memory datagram pipe.
// What one end writes the other reads, with a kernel-like receive stamp
// (the time of the write) and TOS byte; filter, when set, sees every
// datagram written and drops it by returning false or changes its TOS.
type pipeEnd struct {
	addr   net.Addr
	in     chan datagram
	peer   *pipeEnd
	filter func(d *datagram) bool
	tos    uint8

	mu       sync.Mutex
	deadline time.Time
}

// newPipe returns two connected ends; a sends with TOS aTOS, b with bTOS.
func newPipe(aTOS, bTOS uint8) (a, b *pipeEnd) {
	a = &pipeEnd{addr: &net.UDPAddr{IP: net.IPv4(198, 18, 0, 1), Port: 1}, in: make(chan datagram, 1<<16), tos: aTOS}
	b = &pipeEnd{addr: &net.UDPAddr{IP: net.IPv4(198, 18, 0, 2), Port: 2}, in: make(chan datagram, 1<<16), tos: bTOS}
	a.peer, b.peer = b, a
	return a, b
}

func (p *pipeEnd) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	p.deadline = t
	p.mu.Unlock()
	return nil
}

func (p *pipeEnd) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	var first datagram
	if flags&unix.MSG_DONTWAIT != 0 {
		select {
		case first = <-p.in:
		default:
			return -1, unix.EAGAIN
		}
	} else {
		p.mu.Lock()
		deadline := p.deadline
		p.mu.Unlock()
		var expired <-chan time.Time // none: no deadline
		if !deadline.IsZero() {
			timer := time.NewTimer(max(time.Until(deadline), 0))
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case first = <-p.in:
		case <-expired:
			return -1, os.ErrDeadlineExceeded // as recvmmsg returns it
		}
	}
	n := 0
	for {
		m := &ms[n]
		m.N = copy(m.Buffers[0], first.b)
		m.NN = len(appendControl(m.OOB[:0], first.rx))
		m.Addr = first.from
		n++
		if n == len(ms) {
			return n, nil
		}
		select {
		case first = <-p.in:
		default:
			return n, nil
		}
	}
}

// WriteBatch cuts datagrams as UDP GSO would when a message carries
// UDP_SEGMENT.
func (p *pipeEnd) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	for _, m := range ms {
		b := m.Buffers[0]
		seg := len(b)
		if len(m.OOB) > 0 {
			seg = int(binary.NativeEndian.Uint16(m.OOB[unix.SizeofCmsghdr:]))
		}
		for ; len(b) > 0; b = b[min(seg, len(b)):] {
			d := datagram{
				b:    append([]byte(nil), b[:min(seg, len(b))]...),
				rx:   RX{TOS: p.tos, HasTOS: true, Stamp: now(), HasStamp: true},
				from: p.addr,
			}
			if p.filter != nil && !p.filter(&d) {
				continue
			}
			p.peer.in <- d
		}
	}
	return len(ms), nil
}
