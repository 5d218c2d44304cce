package udp

import "net"

// NDP's state machines (Handley et al., "Re-architecting datacenter
// networks and stacks for low latency and high performance", SIGCOMM
// 2017, the transport's design), with no clock and no socket of their
// own: ndpSender and ndpReceiver take the time as a number and say what
// to send, and NDPSender and NDPReceiver (ndpconn.go) run them on
// sockets. The model is small and keeps NDP's four rules:
//
//   - The sender sends its first window (Window packets) at once, at its
//     line rate, without waiting for anything.
//   - A switch trims what it cannot queue (dataplane.Trim) and forwards
//     the header ahead of data.
//   - The receiver ACKs each packet that arrives whole and NACKs each
//     trimmed header at once; for every arrival, whole or trimmed, it adds
//     a PULL to its one pull queue, shared by all its flows, and sends
//     PULLs from it paced so that the packets they pull arrive at its link
//     rate.
//   - A PULL carries the flow's pull counter; a sender that reads counter
//     p sends p − (the last counter it read) packets: first those NACKed,
//     then new ones, so that a lost PULL is made up for by the next. A
//     pull the sender has nothing for is not kept.
//
// What this model leaves out: NDP's switch (8-packet data and header
// queues served 10:1, a random choice between trimming the arrival and
// the packet at the queue's tail, return-to-sender when the header queue
// overflows; dataplane.Trim serves headers in strict priority),
// per-packet multipath spraying, and the pull queue's priorities between
// flows (here FIFO). A header lost with no
// trace (the trim queue full) is recovered by a retransmission timeout,
// as in NDP, which sends one packet unpulled to restart the pulls (see
// ndpSender.timeout).

// ndpSender is the sender's state of one message of total packets.
type ndpSender struct {
	total, next uint64 // packets in the message; the next never sent
	window      int
	acked       []bool
	queued      []bool // in rtx
	nAcked      uint64
	nQueued     uint64   // queued and not acknowledged
	rtx         []uint64 // NACKed or timed out, to send again, FIFO from rtxHead
	rtxHead     int
	credit      int    // packets it may send now: the first window, then one a pull
	pulled      uint64 // the highest pull counter read
	heard       int64  // when it last heard from the receiver (or started)
	backoff     int64  // the RTO's multiplier: doubled by each timeout, reset by a new ACK

	nacks, pulls, idle, timeouts uint64
}

func newNDPSender(total uint64, window int, start int64) *ndpSender {
	return &ndpSender{
		total: total, window: window,
		acked: make([]bool, total), queued: make([]bool, total),
		credit: int(min(uint64(window), total)),
		heard:  start, backoff: 1,
	}
}

// done reports whether every packet is acknowledged.
func (s *ndpSender) done() bool { return s.nAcked == s.total }

// ready reports whether pop would return a packet.
func (s *ndpSender) ready() bool {
	return s.credit > 0 && (s.rtxHead < len(s.rtx) || s.next < s.total)
}

// pop returns the next packet to send, again true when it was sent
// before: one NACKed or timed out first, then a new one; ok is false
// when there is no credit, or nothing to spend it on, which loses it.
func (s *ndpSender) pop() (seq uint64, again, ok bool) {
	for s.credit > 0 {
		if s.rtxHead < len(s.rtx) {
			seq = s.rtx[s.rtxHead]
			s.rtxHead++
			if s.rtxHead == len(s.rtx) {
				s.rtx, s.rtxHead = s.rtx[:0], 0
			}
			s.queued[seq] = false
			if s.acked[seq] {
				continue // acknowledged since: a late copy arrived whole
			}
			s.nQueued--
			s.credit--
			return seq, true, true
		}
		if s.next < s.total {
			s.next++
			s.credit--
			return s.next - 1, false, true
		}
		s.idle += uint64(s.credit)
		s.credit = 0
	}
	return 0, false, false
}

// onAck takes the ACK of packet seq at t.
func (s *ndpSender) onAck(seq uint64, t int64) {
	s.heard = t
	if seq < s.next && !s.acked[seq] {
		s.acked[seq] = true
		s.nAcked++
		s.backoff = 1
		if s.queued[seq] {
			s.nQueued--
		}
	}
}

// onNack takes the NACK of packet seq at t: the packet is sent again
// when a pull lets it.
func (s *ndpSender) onNack(seq uint64, t int64) {
	s.heard = t
	s.nacks++
	s.enqueue(seq)
}

// enqueue queues packet seq to be sent again, unless it is acknowledged,
// already queued or was never sent.
func (s *ndpSender) enqueue(seq uint64) bool {
	if seq >= s.next || s.acked[seq] || s.queued[seq] {
		return false
	}
	s.queued[seq] = true
	s.nQueued++
	s.rtx = append(s.rtx, seq)
	return true
}

// silent returns how many packets are out with no news of them: sent, and
// neither acknowledged nor NACKed (nor queued again).
func (s *ndpSender) silent() uint64 { return s.next - s.nAcked - s.nQueued }

// onPull takes a PULL carrying pull counter n at t: one packet of credit
// for each pull since the last counter read, so that a lost PULL is made
// up for by the next.
func (s *ndpSender) onPull(n uint64, t int64) {
	s.heard = t
	s.pulls++
	if n > s.pulled {
		s.credit = int(min(uint64(s.credit)+n-s.pulled, s.total))
		s.pulled = n
	}
}

// ndpStall is how many RTOs a sender whose every missing packet was NACKed
// waits, hearing nothing, before it sends one of them unpulled: their
// pulls were lost.
const ndpStall = 4

// timeout runs the retransmission timer at t, and reports whether it
// fired. A packet NACKed waits for its pull, which the receiver has
// queued, however long: in an incast the pull queue is longer than an
// RTO, and sending such packets again unpulled would only make it longer.
// What the timer recovers are packets with no news at all (their headers
// lost without trace: the trim queue full): when the sender has heard
// nothing for rto while some are out, they are queued again, and one
// packet of the queue leaves unpulled; its arrival, whole or trimmed,
// starts the receiver's pulls again, and they fetch the rest. A window
// would do it faster, and on a switch whose headers are being lost it
// would lose more of them. When only NACKed or unsent packets are missing
// and nothing was heard for ndpStall RTOs (their pulls were lost), one of
// them leaves the same way. Each timeout doubles the RTO, up to 64 times,
// until a packet is newly acknowledged (RFC 6298 §5.5's backoff): on a
// path slower than the RTO, spurious timeouts would add packets to it.
func (s *ndpSender) timeout(t, rto int64) bool {
	rto *= s.backoff
	switch {
	case s.done() || t-s.heard < rto:
		return false
	case s.silent() > 0:
		for seq := range s.next {
			s.enqueue(seq)
		}
	case s.nQueued == 0 && s.next == s.total || t-s.heard < ndpStall*rto:
		return false
	}
	s.credit = max(s.credit, 1)
	s.heard = t
	s.backoff = min(2*s.backoff, 64)
	s.timeouts++
	return true
}

// deadline returns when timeout may next fire.
func (s *ndpSender) deadline(rto int64) int64 {
	rto *= s.backoff // as timeout has it
	if s.silent() > 0 {
		return s.heard + rto
	}
	return s.heard + ndpStall*rto
}

// NDPFlowStats are what an NDPReceiver counted of one flow, a message.
type NDPFlowStats struct {
	Flow       uint32
	Packets    uint64 // the message's length in packets
	Received   uint64 // packets received whole, each once
	Bytes      uint64 // their UDP payload bytes
	Trimmed    uint64 // trimmed headers received
	Duplicates uint64 // packets received whole again
	Acks       uint64 // ACKs sent
	Nacks      uint64 // NACKs sent
	Pulls      uint64 // PULLs sent
	First      int64  // receive stamp of the first packet, whole or trimmed, ns
	Done       int64  // receive stamp of the packet that completed the message; 0 until then
}

// ndpFlow is the receiver's state of one flow.
type ndpFlow struct {
	NDPFlowStats
	got  []bool
	addr net.Addr // the sender's
}

// ndpReceiver is the receiver's state: its flows and the one pull queue
// they share, paced at interval ns a pull — a full data packet of wire
// bytes at the link's rate — with a bucket of burst pulls, which leave in
// groups of up to half the bucket. A trimmed header takes the link's time
// too: it delays the next pull by its own wire time, so that data and
// headers together arrive at the link's rate.
type ndpReceiver struct {
	flows     map[uint32]*ndpFlow
	pullq     []*ndpFlow // FIFO from pullHead
	pullHead  int
	next      int64 // the pacer: the next pull may leave at next
	interval  int64
	wire      int64 // bytes on the wire of a full data packet
	burst     int64
	malformed uint64
}

func newNDPReceiver(interval, wire int64, burst int) *ndpReceiver {
	return &ndpReceiver{flows: map[uint32]*ndpFlow{}, interval: interval, wire: wire, burst: int64(burst)}
}

// maxNDPPackets bounds a message, so that a datagram's claim cannot make
// the receiver allocate without bound.
const maxNDPPackets = 1 << 20

// onData takes a data packet with header h and size bytes of UDP payload
// from addr at t, whole or trimmed, and returns the ACK or NACK to send back at once (ok false:
// none, the packet was malformed or a stale trimmed copy). It queues a
// pull for the flow unless the message is complete.
func (r *ndpReceiver) onData(h Header, trimmed bool, size int, addr net.Addr, t int64) (reply Header, ok bool) {
	f := r.flows[h.Flow]
	if f == nil {
		if h.Cum == 0 || h.Cum > maxNDPPackets {
			r.malformed++
			return Header{}, false
		}
		f = &ndpFlow{NDPFlowStats: NDPFlowStats{Flow: h.Flow, Packets: h.Cum, First: t}, got: make([]bool, h.Cum)}
		r.flows[h.Flow] = f
	}
	if h.Cum != f.Packets || h.Seq >= f.Packets {
		r.malformed++
		return Header{}, false
	}
	f.addr = addr
	switch {
	case trimmed:
		f.Trimmed++
		r.next = max(r.next, t-(r.burst-1)*r.interval) + r.interval*int64(size+wireOverhead)/r.wire
		if !f.got[h.Seq] {
			reply, ok = Header{Type: TypeNack, Flow: h.Flow, Seq: h.Seq, Cum: f.Received}, true
			f.Nacks++
		}
	case f.got[h.Seq]:
		f.Duplicates++
		reply, ok = Header{Type: TypeAck, Flow: h.Flow, Seq: h.Seq, Cum: f.Received}, true
		f.Acks++
	default:
		f.got[h.Seq] = true
		f.Received++
		f.Bytes += uint64(size)
		if f.Received == f.Packets {
			f.Done = t
		}
		reply, ok = Header{Type: TypeAck, Flow: h.Flow, Seq: h.Seq, Cum: f.Received}, true
		f.Acks++
	}
	if ok {
		reply.DX.Stamp = h.DX.Stamp // the data's send time, echoed: the sender's RTT sample
	}
	if f.Received < f.Packets {
		r.pullq = append(r.pullq, f)
	}
	return reply, ok
}

// pullAt returns when the receiver should next send pulls, and false
// when none is queued: when a group of them may leave, up to half the
// pacer's bucket (and never more than are queued), so that a receiver
// wakes once for a few pulls rather than for each. The pulls keep their
// rate; each waits at most the group's time.
func (r *ndpReceiver) pullAt() (int64, bool) {
	n := int64(len(r.pullq) - r.pullHead)
	if n == 0 {
		return 0, false
	}
	return r.next + (min(n, max(r.burst/2, 1))-1)*r.interval, true
}

// popPull returns the next pull to send at t, with where to, if the
// pacer lets one leave; pulls of flows completed since they were queued
// are dropped.
func (r *ndpReceiver) popPull(t int64) (Header, net.Addr, bool) {
	r.next = max(r.next, t-(r.burst-1)*r.interval) // a pause saves up at most burst pulls
	for r.pullHead < len(r.pullq) && t >= r.next {
		f := r.pullq[r.pullHead]
		r.pullq[r.pullHead] = nil
		r.pullHead++
		if r.pullHead == len(r.pullq) {
			r.pullq, r.pullHead = r.pullq[:0], 0
		}
		if f.Received == f.Packets {
			continue
		}
		r.next += r.interval
		f.Pulls++
		return Header{Type: TypePull, Flow: f.Flow, Seq: f.Pulls, Cum: f.Received}, f.addr, true
	}
	return Header{}, nil, false
}
