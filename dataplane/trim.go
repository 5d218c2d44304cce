package dataplane

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/packet"
)

// Limits of Trim.
const (
	// MinTrimSize is the least Trim.Size: a minimum Ethernet frame. Trim
	// never cuts inside the L2–L4 headers, whatever the size.
	MinTrimSize = 60
	// MaxTrimDSCP is the largest DSCP.
	MaxTrimDSCP = 63
)

// Trim is a port's packet trimming: a packet its admission refuses (the
// buffer's Dynamic Threshold, a static cap or a full pool, or an enqueue
// marker's drop) is cut to its headers, marked with DSCP, and queued on
// Queue, instead of dropped — SAI's trim on failed admission
// (SAI_BUFFER_PROFILE_PACKET_ADMISSION_FAIL_ACTION_DROP_AND_TRIM), the
// switch half of NDP (Handley et al., SIGCOMM 2017). The receiver then
// learns of the loss from the header, within a round trip, and asks for
// the packet again. What packet.Trim does not trim (anything but UDP over
// IPv4 or IPv6; see there) is dropped as before, and a trimmed packet
// that Queue's admission refuses too is dropped, for that refusal.
//
// Counters (QueueStats.Trimmed, TrimDropped) are kept on the queue that
// refused the packet, as SAI's SAI_QUEUE_STAT_TRIM_PACKETS and
// _DROPPED_TRIM_PACKETS are; that queue's drop counters by reason count
// the refusal too, trimmed or not (SAI: "DROPPED_PACKETS … will count the
// original discarded frames even if they will be trimmed afterwards"),
// while the port's drops count only what finally left nothing.
type Trim struct {
	// Size is the length a trimmed frame is cut to, bytes, MinTrimSize to
	// MaxFrameSize; 0 keeps the L2–L4 headers plus
	// packet.DefaultTrimPayload, the header of the transport that asked
	// for trimming.
	Size int
	// Queue is the queue trimmed packets go to: normally a strict
	// priority queue above the data's, with a reserve in the buffer, so
	// that headers overtake data and still find room when the pool is
	// full.
	Queue int
	// DSCP marks a trimmed packet (SAI_SWITCH_ATTR_PACKET_TRIM_DSCP_VALUE),
	// 0 to MaxTrimDSCP; its ECN field is kept.
	DSCP uint8
	// Queues are the queues whose refused packets are trimmed (SAI's
	// per-buffer-profile eligibility); nil means every queue but Queue.
	// Queue itself may not be one: what it refuses, trimmed packets
	// among them, is dropped.
	Queues []int
}

// validate checks t for a port of nq queues.
func (t *Trim) validate(nq int) error {
	switch {
	case t.Size != 0 && (t.Size < MinTrimSize || t.Size > MaxFrameSize):
		return fmt.Errorf("trim.bytes: %d outside [%d, %d] (or 0 for the headers plus %d)", t.Size, MinTrimSize, MaxFrameSize, packet.DefaultTrimPayload)
	case t.Queue < 0 || t.Queue >= nq:
		return fmt.Errorf("trim.queue: %d outside [0, %d] (the port has %d queues)", t.Queue, nq-1, nq)
	case t.DSCP > MaxTrimDSCP:
		return fmt.Errorf("trim.dscp: %d outside [0, %d]", t.DSCP, MaxTrimDSCP)
	case t.Queues == nil && nq == 1:
		return fmt.Errorf("trim.queue: %d is the port's only queue; trimmed packets need a queue of their own beside the data's", t.Queue)
	}
	seen := map[int]bool{}
	for i, q := range t.Queues {
		switch {
		case q < 0 || q >= nq:
			return fmt.Errorf("trim.queues[%d]: %d outside [0, %d] (the port has %d queues)", i, q, nq-1, nq)
		case q == t.Queue:
			return fmt.Errorf("trim.queues[%d]: %d is trim.queue; a packet it refuses would be trimmed into the queue that refused it", i, q)
		case seen[q]:
			return fmt.Errorf("trim.queues[%d]: queue %d listed twice", i, q)
		}
		seen[q] = true
	}
	if t.Queues != nil && len(t.Queues) == 0 {
		return fmt.Errorf("trim.queues: empty; list the queues to trim, or leave it out for every queue but trim.queue")
	}
	return nil
}

// checkRoom reports a trim queue whose static cap cannot hold a single
// trimmed packet of the port's shortest possible headers.
func (t *Trim) checkRoom(qc []buffer.QueueConfig) error {
	least := t.Size
	if least == 0 {
		least = 14 + 20 + 8 + packet.DefaultTrimPayload // untagged IPv4 and UDP
	}
	if c := qc[t.Queue]; c.Cap > 0 && c.Cap+c.Reserve < int64(least) {
		return fmt.Errorf("trim.queue: queue %d's buffer (cap %d + reserve %d bytes) cannot hold one %d-byte trimmed packet", t.Queue, c.Cap, c.Reserve, least)
	}
	return nil
}

// trimmer is the Reshaper of a port with a Trim.
type trimmer struct {
	size     int
	queue    int
	dscp     uint8
	eligible uint64 // bit q: queue q's refused packets are trimmed
}

func newTrimmer(t *Trim, nq int) *trimmer {
	tr := &trimmer{size: t.Size, queue: t.Queue, dscp: t.DSCP}
	if t.Queues == nil {
		tr.eligible = (1<<nq - 1) &^ (1 << t.Queue) // nq ≤ scheduler.MaxQueues = 64; 1<<64 is 0

	}
	for _, q := range t.Queues {
		tr.eligible |= 1 << q
	}
	return tr
}

// Reshape implements Reshaper: it trims an eligible queue's refused
// packet, whatever the reason, and sends it to the trim queue.
func (t *trimmer) Reshape(d *packet.Desc, _ DropReason) (int, bool) {
	if t.eligible&(1<<(d.Queue&63)) == 0 || !packet.Trim(d, t.size, t.dscp) {
		return 0, false
	}
	return t.queue, true
}
