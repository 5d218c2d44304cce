package capture

import (
	"strconv"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
)

// appendINT appends to b what the port's INT did with an egress packet and
// the records its INT headers carry, newest first, decoded from data (the
// frame as captured), e.g.
//
//	; INT (switch clock monotonic): added, 1 hop left; records, newest first: {queue 0: 12000 B, t 1250000 ns, tx 987654 B, 995 Mbit/s}
//
// Only the fields a record holds are shown. A frame cut by the snap
// length before the end of its INT headers shows none.
func appendINT(b []byte, r *record, data []byte, clock string) []byte {
	if r.intOut == dataplane.INTNone {
		return b
	}
	b = append(b, "; INT (switch clock "...)
	b = append(b, clock...)
	b = append(b, "): "...)
	switch r.intOut {
	case dataplane.INTAdded:
		b = append(b, "added"...)
	case dataplane.INTNoRoom:
		b = append(b, "no room for this hop's record"...)
	case dataplane.INTHopLimit:
		b = append(b, "no hops left for this hop's record"...)
	default:
		return append(b, "malformed INT headers"...)
	}
	at := int(r.intAt)
	if at <= 0 || at > len(data) {
		return append(b, "; records beyond the snap length"...)
	}
	h, stack, err := intmd.Parse(data[at:])
	if err != nil {
		return append(b, "; records beyond the snap length"...)
	}
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(h.RemainingHops), 10)
	b = append(b, " hops left"...)
	if h.Flags&intmd.FlagM != 0 {
		b = append(b, ", M (a hop had no room)"...)
	}
	if h.Flags&intmd.FlagE != 0 {
		b = append(b, ", E (a hop found no hops left)"...)
	}
	b = append(b, "; records, newest first:"...)
	for i := range h.Hops() {
		hop, _ := h.Hop(stack, i)
		b = appendHop(append(b, ' '), &hop)
	}
	return b
}

// appendHop appends one record's fields, in braces.
func appendHop(b []byte, h *intmd.Hop) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = append(b, name...)
	}
	num := func(v uint64, unit string) {
		b = strconv.AppendUint(b, v, 10)
		b = append(b, unit...)
	}
	in, ds := h.Instructions, h.DSInstr
	if in&intmd.InstrNodeID != 0 {
		field("node ")
		num(uint64(h.NodeID), "")
	}
	if in&(intmd.InstrL1Ports|intmd.InstrL2Ports) != 0 {
		field("ports ")
		num(uint64(h.InPort), "→")
		num(uint64(h.OutPort), "")
	}
	if in&intmd.InstrQueue != 0 {
		field("queue ")
		num(uint64(h.QueueID), ": ")
		num(uint64(h.QueueBytes), " B")
	}
	if ds&intmd.DSPortBytes != 0 {
		field("port ")
		num(uint64(h.PortBytes), " B")
	}
	if in&intmd.InstrBuffer != 0 {
		field("pool ")
		num(uint64(h.BufferID), ": ")
		num(uint64(h.BufferBytes), " B")
	}
	if in&intmd.InstrIngressTS != 0 {
		field("in ")
		num(h.IngressTS, " ns")
	}
	if in&intmd.InstrEgressTS != 0 {
		field("t ")
		num(h.EgressTS, " ns")
	}
	if in&intmd.InstrHopLatency != 0 {
		field("latency ")
		num(uint64(h.HopLatency), " ns")
	}
	if ds&intmd.DSTxBytes != 0 {
		field("tx ")
		num(h.TxBytes, " B")
	}
	if ds&intmd.DSLinkRate != 0 {
		field("")
		b = strconv.AppendFloat(b, float64(h.LinkRateKbps)/1000, 'f', -1, 64)
		b = append(b, " Mbit/s"...)
	}
	if h.Unknown > 0 {
		field("")
		num(uint64(h.Unknown), " B of another domain")
	}
	return append(b, '}')
}
