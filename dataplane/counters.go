package dataplane

import "github.com/ecnswitch/ecnswitch/internal/counter"

// DropReason says why the dataplane dropped a packet. Buffer admission and
// marker drops are also counted per queue by the buffer (see QueueStats).
type DropReason uint8

// Drop reasons. Ingress-side reasons count on the ingress port, the others
// on the egress port.
const (
	DropMalformed        DropReason = iota // the frame failed to parse (ingress)
	DropFiltered                           // its destination is behind its ingress port (ingress)
	DropNoFrame                            // no arena frame for a flooded copy (ingress)
	DropCrossWorker                        // the ring to the egress port's worker was full (ingress)
	DropPoolFull                           // buffer: the shared pool is full
	DropDynamicThreshold                   // buffer: the queue is at its Dynamic Threshold
	DropStaticCap                          // buffer: the queue is at its static cap
	DropEnqueueMarker                      // an enqueue marker dropped it (e.g. non-ECT)
	DropDequeueMarker                      // a dequeue marker dropped it
	DropQueueFull                          // the queue's descriptor ring was full
	DropDelayFull                          // the delay line was full
	DropTxError                            // the egress device returned an error
	DropStorm                              // it would flood, beyond its ingress port's flood rate (ingress)
	DropOversize                           // larger than the egress device can send (ports.MaxFramer)
	DropArenaEmpty                         // the worker's arena had no free frame to receive it into (ingress)

	NumDropReasons = iota
)

var dropNames = [NumDropReasons]string{
	"malformed", "filtered", "no_frame", "cross_worker",
	"pool_full", "dynamic_threshold", "static_cap",
	"enqueue_marker", "dequeue_marker", "queue_full", "delay_full", "tx_error",
	"storm", "oversize", "arena_empty",
}

// String returns the reason's name as telemetry labels it.
func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return "unknown"
}

// portCounters are written by the port's owning worker (ingress counters by
// the worker receiving on it, which is the same one) and read by telemetry.
type portCounters struct {
	rxPackets, rxBytes counter.Uint64
	txPackets, txBytes counter.Uint64
	flooded            counter.Uint64 // extra copies made by flooding
	rxStampedWorker    counter.Uint64 // received packets the worker stamped (the device gave no usable stamp)
	drops              [NumDropReasons]counter.Uint64
}

type queueCounters struct {
	enqueued, dequeued   counter.Uint64
	enqBytes, deqBytes   counter.Uint64
	markedEnq, markedDeq counter.Uint64
	// trimmed counts the packets this queue refused that the port's
	// Reshaper (Trim) cut for another queue, and trimDropped those of
	// them that queue refused too (SAI's _TRIM_PACKETS and
	// _DROPPED_TRIM_PACKETS).
	trimmed, trimDropped counter.Uint64
}
