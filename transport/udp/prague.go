package udp

import "github.com/ecnswitch/ecnswitch/transport"

// ECT1 is the ECN codepoint of L4S packets (RFC 9331 §4.1), which a DualQ
// Coupled AQM puts in its L queue.
const ECT1 = 1

// Codepoint returns the ECN codepoint the data of a sender running
// congestion control k carry, and its socket must be prepared with
// (Prepare): ECT(1) for Prague, a scalable sender (RFC 9331 §4.1);
// ECT(0) for the others, whose response to a mark is classic (ECN*) or
// meant for a single-queue datacenter port (DCTCP, DX).
func Codepoint(k transport.Kind) uint8 {
	if k == transport.KindPrague {
		return ECT1
	}
	return ECT0
}
