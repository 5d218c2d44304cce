package dataplane

import (
	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Where received packets' ingress stamps (RxTime) come from, per port: the
// device's hardware clock where the device stamps (ports.RxStamper),
// taken onto the switch's clock; the device's own model of the link where
// it sets RxTime on the switch's clock already (memport); else the
// worker's clock when it received the batch. PortStats.RxStamps counts
// both kinds.

// An origin is a switch clock whose zero is a known CLOCK_MONOTONIC
// instant (timestamp.Monotonic), so that hardware stamps, which ports
// give on CLOCK_MONOTONIC, can be put on it.
type origin interface {
	Origin() int64
}

// Names of PortStats.RxStamps.Source.
const (
	stampSourceLink   = "link"   // the port sets RxTime on the switch's clock (memport's model of the wire)
	stampSourceWorker = "worker" // the port never stamps: the worker does
)

// rxStamps is how a port's receive stamps become the switch's.
type rxStamps struct {
	source string // the device's clock ("phc0"), stampSourceLink, or stampSourceWorker
	keep   bool   // use the device's nonzero RxTime (minus adjust); else the worker stamps every packet
	adjust int64  // subtracted from a device stamp: CLOCK_MONOTONIC at the switch clock's zero
}

// stampsOf decides how dev's receive stamps are used on a switch running
// on clock, logging when hardware stamps cannot be.
func stampsOf(dev ports.Port, clock timestamp.Clock, log *zap.Logger) rxStamps {
	st, ok := dev.(ports.RxStamper)
	if !ok {
		return rxStamps{source: stampSourceLink, keep: true}
	}
	name := st.RxClock()
	if name == "" {
		return rxStamps{source: stampSourceWorker}
	}
	o, ok := clock.(origin)
	if !ok {
		log.Warn("hardware receive stamps unused: the switch's clock has no CLOCK_MONOTONIC origin to put them on; "+
			"the worker stamps packets as it receives them", zap.String("port", dev.Name()), zap.String("device clock", name))
		return rxStamps{source: stampSourceWorker}
	}
	return rxStamps{source: name, keep: true, adjust: o.Origin()}
}

// stamp sets d's ingress stamp on the switch's clock: the device's where
// it gave one that is not in the future, else now. It reports whether the
// worker stamped it.
func (r *rxStamps) stamp(t, now int64) (int64, bool) {
	if t == 0 || !r.keep {
		return now, true
	}
	if t -= r.adjust; t > now {
		return now, true
	}
	return t, false
}

// RxStampSource names where port's ingress stamps come from: the device's
// hardware clock ("phc0"), "link" (a port modelling its wire on the
// switch's clock), or "worker"; "" for a port the switch does not have.
func (s *Switch) RxStampSource(port int) string {
	if port < 0 || port >= len(s.ports) {
		return ""
	}
	return s.ports[port].stamps.source
}
