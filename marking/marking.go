package marking

import "github.com/ecnswitch/ecnswitch/packet"

// Verdict is a marker's decision about one packet.
type Verdict uint8

// Verdicts.
const (
	Pass Verdict = iota // leave the packet alone
	Mark                // set CE (or drop it if it is not ECN-capable, see NonECT)
	Drop                // drop the packet
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Mark:
		return "mark"
	case Drop:
		return "drop"
	}
	return "verdict(?)"
}

// Stage is where in the pipeline a marker runs.
type Stage uint8

// Stages.
const (
	Enqueue Stage = iota // before the packet joins its queue
	Dequeue              // when the scheduler has picked the packet
)

func (s Stage) String() string {
	if s == Dequeue {
		return "dequeue"
	}
	return "enqueue"
}

// View is the state a marker may read about one packet and the queue, port
// and pool it is in. Byte and packet counts exclude the packet itself: at
// enqueue they are the backlog the packet finds, at dequeue the backlog it
// leaves behind.
//
// Value and Threshold are written by a marker that returns Mark or Drop, so
// that telemetry and capture can say what the decision compared.
type View struct {
	Now     int64 // ns
	EnqTime int64 // ns; equal to Now at the enqueue stage
	Len     int   // packet length in bytes
	// ECN is the packet's ECN codepoint as the stage sees it: at dequeue
	// CE if an enqueue marker (or a hop before) marked it.
	ECN packet.ECN

	Port  int // egress port index
	Queue int // egress queue index

	QueueBytes, QueuePackets int64
	PortBytes, PortPackets   int64
	PoolBytes, PoolPackets   int64 // the shared pool's occupancy (ΣQ of 002 Eq. 1); packets may be 0 when not tracked
	PoolSize                 int64 // B: the shared pool's size in bytes

	Quantum int64 // bytes a round-robin scheduler serves the queue per round; 0 if none
	// Weight is the queue's weight, in a unit common to all queues of the
	// port (weight_i of 003 Table II, W_i of 001 Eq. 2); for WRR and DWRR
	// queues it is the quantum. WeightSum is the sum of the weights of all
	// queues of the port, across scheduling levels ("the sum of all queues'
	// weights in port p", 003 Table II; Σ_j W_j of 001 Eq. 2).
	Weight, WeightSum int64
	// BusyWeightSum is the sum of the weights of the non-empty queues of
	// the weighted level, the WRR, DWRR or WFQ queues below any strict ones
	// (w_sum of 001 §3.4). It excludes the packet's own queue when that is
	// empty (QueueBytes = 0).
	BusyWeightSum int64
	Strict        bool // the queue is served at a strict-priority level above the weighted one

	RoundTime int64 // the scheduler's smoothed round time T_round in ns; 0 if unknown
	LineRate  int64 // the port's (shaped) line rate C in bit/s

	// QueueEmptySince and PortEmptySince are when the queue and the port
	// last became empty, in ns: the start of their idle time (RED's
	// q_time). Meaningful while they are empty; 0 if never filled.
	QueueEmptySince, PortEmptySince int64

	// PeerQueue is the other queue of the port that a coupled marker
	// reads beside the packet's own (Peerer, with NeedPeer): a DualQ
	// Coupled AQM's queues read each other, the L queue's coupled marking
	// the C queue's delay (RFC 9332 §2.4), the PI controller the larger of
	// both (Appendix A.2); -1 when
	// none. PeerBytes and PeerPackets are its backlog, PeerSojourn how
	// long its head packet has waited at Now (0 when it is empty).
	PeerQueue                           int
	PeerBytes, PeerPackets, PeerSojourn int64

	// HeadSojourn is how long the packet at the head of the packet's own
	// queue has waited at Now, 0 when the queue is empty (NeedHead): at
	// enqueue the oldest packet the arrival finds, at dequeue the one it
	// leaves at the head. PIE's timestamp-based delay (RFC 8033 §4.3)
	// reads it.
	HeadSojourn int64

	Value     int64 // out: the quantity the marker compared (bytes or ns)
	Threshold int64 // out: the threshold it compared against
}

// Sojourn returns how long the packet has been queued: Now − EnqTime.
func (v *View) Sojourn() int64 { return v.Now - v.EnqTime }

// Need names the View fields that cost a port work to fill, so that it
// fills only those its markers read (Needer). The rest of View is always
// filled.
type Need uint8

// The View fields a marker may need.
const (
	NeedRoundTime  Need = 1 << iota // RoundTime
	NeedBusyWeight                  // BusyWeightSum
	NeedPort                        // PortBytes and PortPackets
	NeedEmptySince                  // QueueEmptySince and PortEmptySince
	NeedPeer                        // PeerQueue and its backlog and head sojourn (Peerer)
	NeedHead                        // HeadSojourn

	// NeedAll is what a Marker that is not a Needer gets: every field but
	// the peer's, which only a Peerer can name, and the head's, which only
	// a Needer can.
	NeedAll = NeedRoundTime | NeedBusyWeight | NeedPort | NeedEmptySince
)

// Peerer is a Marker that reads another queue of the port beside the
// packet's own (View.PeerQueue and the fields after it), as a coupled AQM
// does; it says so with NeedPeer. Peer returns, for a packet of queue q,
// the queue it reads, or -1 for none. A port asks once per queue, when it
// builds its chains.
type Peerer interface {
	Peer(q int) int
}

// Needer is a Marker that says which of the costly View fields it reads;
// a port may leave the others 0. A Marker that is not a Needer gets them
// all.
type Needer interface {
	Needs() Need
}

// Needs returns the costly View fields m reads: m.Needs() for a Needer,
// else NeedAll.
func Needs(m Marker) Need {
	if n, ok := m.(Needer); ok {
		return n.Needs()
	}
	return NeedAll
}

// Marker decides whether to mark one packet. A marker value serves one
// egress port and keeps whatever per-queue state it needs; it is used by one
// goroutine, the port's worker.
type Marker interface {
	Mark(v *View) Verdict
}
