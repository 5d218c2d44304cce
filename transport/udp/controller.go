package udp

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/transport"
)

// newController returns the congestion control of cfg: HPCC with its
// parameters, which needs INT records to run on; Prague with its virtual
// RTT; the others through transport.New.
func newController(cfg Config) (transport.Controller, error) {
	if cfg.Target < 0 {
		return nil, fmt.Errorf("udp transport: target %v: want ≥ 0", cfg.Target)
	}
	if cfg.Target != 0 && cfg.CC != transport.KindPrague {
		return nil, fmt.Errorf("udp transport: target %v set for %v: only prague has a virtual RTT", cfg.Target, cfg.CC)
	}
	switch cfg.CC {
	case transport.KindPrague:
		return transport.NewPrague(int64(cfg.Target)), nil
	case transport.KindHPCC:
		if cfg.INTHops == 0 {
			return nil, fmt.Errorf("udp transport: hpcc needs int hops > 0: its feedback is the switches' INT records")
		}
		h, err := transport.NewHPCC(cfg.HPCC)
		if err != nil {
			return nil, fmt.Errorf("udp transport: %w", err)
		}
		return h, nil
	}
	return transport.New(cfg.CC, int64(cfg.Headroom))
}
