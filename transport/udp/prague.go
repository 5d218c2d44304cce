package udp

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/transport"
)

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

// newController returns the congestion control of cfg: Prague with its
// virtual RTT, the others through transport.New.
func newController(cfg Config) (transport.Controller, error) {
	if cfg.Target < 0 {
		return nil, fmt.Errorf("udp transport: target %v: want ≥ 0", cfg.Target)
	}
	if cfg.CC == transport.KindPrague {
		return transport.NewPrague(int64(cfg.Target)), nil
	}
	if cfg.Target != 0 {
		return nil, fmt.Errorf("udp transport: target %v set for %v: only prague has a virtual RTT", cfg.Target, cfg.CC)
	}
	return transport.New(cfg.CC, int64(cfg.Headroom))
}
