package udp

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/transport"
)

// In-band telemetry (package intmd) on the endpoints, HPCC's feedback:
//
//   - A sender with Config.INTHops > 0 starts every data datagram with
//     INT-MD headers (INT v2.1 over UDP) that ask up to INTHops switches
//     for HPCC's fields — queue occupancy, egress time, TX bytes, link
//     rate, 24 bytes a hop — before the transport header; it leaves room
//     for those records (Size defaults to DefaultSize less them).
//   - A receiver with ReceiverConfig.INT reads the INT headers and their
//     records off every data datagram before its transport header, and
//     echoes them in the ACK, after the header, with FlagINT: the headers
//     and records of the newest data packet the ACK covers, as it
//     arrived.
//   - The sender decodes the echo into transport.Ack.Hops, first hop
//     first, for its congestion control: HPCC's window law reads them.
//
// Which packets a switch gives records to is the switch's INT port or
// DSCP: the receiver's port, or the senders' DSCP.

// FlagINT on an ACK: the INT headers and records of the data packet it
// answers follow the header.
const FlagINT = 1 << 1

// maxINT is the most bytes of INT headers and records a datagram carries
// (the shim's Length, a byte of words).
const maxINT = 4 * intmd.MaxLength

// hpccHeader returns the INT headers of a data datagram that asks up to
// hops switches for HPCC's fields.
func hpccHeader(hops int) (intmd.Header, error) {
	h, err := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, hops)
	if err != nil {
		return h, fmt.Errorf("udp transport: int hops %d: %w", hops, err)
	}
	return h, nil
}

// intRoom returns the bytes a sender asking up to hops switches for
// HPCC's records leaves for them.
func intRoom(hops int) int {
	if hops == 0 {
		return 0
	}
	h, _ := hpccHeader(hops)
	return h.Room()
}

// splitINT splits a data datagram b that starts with INT headers into
// them (with their records) and the rest.
func splitINT(b []byte) (in, rest []byte, err error) {
	_, stack, err := intmd.Parse(b)
	if err != nil {
		return nil, nil, err
	}
	n := intmd.HeaderLen + len(stack)
	return b[:n], b[n:], nil
}

// hopsOf decodes the INT headers and records in (an ACK's echo) into dst,
// first hop first, and returns how many; 0 if they do not parse or carry
// none of HPCC's fields, or more hops than dst holds.
func hopsOf(dst []transport.Hop, in []byte) int {
	h, stack, err := intmd.Parse(in)
	if err != nil || h.Instructions&intmd.HPCCInstructions != intmd.HPCCInstructions ||
		h.Domain != intmd.DomainID || h.DSInstr&intmd.HPCCDSInstructions != intmd.HPCCDSInstructions {
		return 0
	}
	n := h.Hops()
	if n > len(dst) {
		return 0
	}
	for i := range n {
		r, _ := h.Hop(stack, n-1-i) // the stack is newest first
		dst[i] = transport.Hop{QLen: int64(r.QueueBytes), TxBytes: r.TxBytes, TS: int64(r.EgressTS), Rate: r.LinkRate()}
	}
	return n
}

// pacer is a congestion control that also paces: HPCC, at R = W/T.
type pacer interface {
	PaceRate(size int) int64
}
