package dataplane

import (
	"errors"
	"fmt"

	"github.com/ecnswitch/ecnswitch/internal/counter"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// INT is a port's in-band network telemetry (INT-MD over UDP, package
// intmd): every UDP packet that carries INT headers, by its destination
// port or its DSCP, gets this hop's record on top of its metadata stack as
// it leaves the port's virtual line, with whatever fields its instruction
// bitmap asks for: the occupancy of the queue it leaves and of the port,
// the bytes the port has sent, the egress time on the switch's clock, the
// link rate, and the rest of INT v2.1's standard fields (HPCC, Li et al.,
// SIGCOMM 2019, §3.2, reads the first four). A record never grows a
// packet past the port's MTU (its scheduler's, scheduler.DefaultMTU
// unless set), the device's largest frame, or the switch's frame size: a
// packet without room is sent without it, its INT header's M flag set,
// and counted (PortStats.INT). INT needs a shaped port: its records carry
// the shaper's rate as the link's.
type INT struct {
	// Port, when not 0, marks UDP packets to this destination port as
	// carrying INT headers.
	Port uint16
	// DSCP, when set, marks UDP packets with this DSCP, 0 to MaxDSCP, as
	// carrying INT headers.
	DSCP *uint8
	// NodeID is the node ID records carry (instruction bit 0).
	NodeID uint32
}

// validate checks i on a port shaped to rate bit/s.
func (i *INT) validate(rate int64) error {
	if i == nil {
		return nil
	}
	switch {
	case i.Port == 0 && i.DSCP == nil:
		return errors.New("int: neither port nor dscp: say which UDP packets carry INT headers")
	case i.DSCP != nil && *i.DSCP > MaxDSCP:
		return fmt.Errorf("int.dscp: %d outside [0, %d]", *i.DSCP, MaxDSCP)
	case rate == 0:
		return errors.New("int: on an unshaped port; records carry the shaper's rate as the link's, so the port needs one")
	}
	return nil
}

// INTOutcome is what a port's INT did with a packet as it left: the
// egress Event says so.
type INTOutcome uint8

// INT outcomes.
const (
	INTNone      INTOutcome = iota // the packet carries no INT headers, or the port has no INT
	INTAdded                       // this hop's record is on top of the stack
	INTNoRoom                      // no record: it would have grown the packet past the limit (M set)
	INTHopLimit                    // no record: no remaining hop count (E set)
	INTMalformed                   // it matched the port's INT, but its INT headers did not parse
)

var intOutcomeNames = [...]string{"none", "added", "no_room", "hop_limit", "malformed"}

// String returns the outcome's name as telemetry labels it.
func (o INTOutcome) String() string {
	if int(o) < len(intOutcomeNames) {
		return intOutcomeNames[o]
	}
	return "unknown"
}

// INTStats are a port's INT counters.
type INTStats struct {
	// Added counts records added, NoRoom the packets sent without one for
	// want of room, HopLimit those whose remaining hop count was 0, and
	// Malformed those that matched but whose INT headers did not parse.
	Added     uint64 `json:"added"`
	NoRoom    uint64 `json:"no_room"`
	HopLimit  uint64 `json:"hop_limit"`
	Malformed uint64 `json:"malformed"`
	// TxBytes is what the port's line has sent, in bytes as its shaper
	// counts them: what records carry as TX bytes.
	TxBytes uint64 `json:"tx_bytes"`
	// Limit is the largest frame a record may grow a packet to, bytes.
	Limit int `json:"limit"`
}

// inband is a port's INT state, owned by its worker.
type inband struct {
	port   uint16
	dscp   int // -1: none
	node   uint32
	limit  int            // the largest frame a record may grow a packet to
	tx     counter.Uint64 // bytes the line has sent, as the shaper counts them
	meta   intmd.Metadata // scratch for each record
	counts [5]counter.Uint64
}

// newInband returns the INT state of a port with INT i, whose scheduler
// carries frames of up to mtu bytes (0: scheduler.DefaultMTU) and whose
// device sends up to maxFrame (0: any); nil when i is.
func newInband(i *INT, mtu, maxFrame int) *inband {
	if i == nil {
		return nil
	}
	b := &inband{port: i.Port, dscp: -1, node: i.NodeID, limit: mtu}
	if b.limit == 0 {
		b.limit = scheduler.DefaultMTU
	}
	if maxFrame > 0 {
		b.limit = min(b.limit, maxFrame)
	}
	if i.DSCP != nil {
		b.dscp = int(*i.DSCP)
	}
	return b
}

// carries reports whether d is a UDP packet the port's INT looks into.
func (b *inband) carries(d *packet.Desc) bool {
	return d.Proto == packet.ProtoUDP && d.L4Off != 0 && (b.port != 0 && d.DstPort == b.port || int(d.DSCP) == b.dscp)
}

// telemetry adds p's record to d, which leaves p's line at t, if d carries
// INT headers, and counts d's bytes as sent; it returns what it did.
func (w *worker) telemetry(p *port, d *packet.Desc, t int64) INTOutcome {
	b := p.inband
	out := INTNone
	if b.carries(d) {
		out = w.push(p, b, d, t, b.tx.Load())
		b.counts[out].Add(1)
	}
	b.tx.Add(uint64(p.shaper.Wire(d.Len)))
	return out
}

// push opens d's INT headers and pushes p's record, made of what their
// instructions ask for.
func (w *worker) push(p *port, b *inband, d *packet.Desc, t int64, tx uint64) INTOutcome {
	tr, err := intmd.Open(d)
	if err != nil {
		return INTMalformed
	}
	m := &b.meta
	in, ds := tr.Instructions, uint16(0)
	if tr.Domain == intmd.DomainID {
		ds = tr.DSInstr
	}
	m.NodeID, m.InPort, m.OutPort = b.node, uint32(d.InPort), uint32(p.idx)
	m.IngressTS, m.EgressTS = d.RxTime, t
	m.QueueID, m.QueueBytes = d.Queue, 0
	if in&intmd.InstrQueue != 0 {
		m.QueueBytes, _ = p.sched.Backlog(int(d.Queue))
	}
	m.BufferID, m.BufferBytes = uint8(p.pool), 0
	if in&intmd.InstrBuffer != 0 {
		m.BufferBytes = w.s.mmu.PoolBytes(p.pool)
	}
	m.PortBytes = 0
	if ds&intmd.DSPortBytes != 0 {
		m.PortBytes, _ = p.sched.Len()
	}
	m.TxBytes, m.LinkRate = tx, p.shaper.Rate()
	switch tr.Push(d, m, min(b.limit, len(d.Buf))) {
	case intmd.Added:
		return INTAdded
	case intmd.NoRoom:
		return INTNoRoom
	}
	return INTHopLimit
}

// stats returns b's counters; nil for a port without INT.
func (b *inband) stats() *INTStats {
	if b == nil {
		return nil
	}
	return &INTStats{
		Added: b.counts[INTAdded].Load(), NoRoom: b.counts[INTNoRoom].Load(),
		HopLimit: b.counts[INTHopLimit].Load(), Malformed: b.counts[INTMalformed].Load(),
		TxBytes: b.tx.Load(), Limit: b.limit,
	}
}
