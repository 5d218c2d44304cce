package config

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// trimYAML is a port's trim section: packet trimming (dataplane.Trim).
type trimYAML struct {
	Bytes  *Size `yaml:"bytes"`
	Queue  *int  `yaml:"queue"`
	DSCP   *int  `yaml:"dscp"`
	Queues []int `yaml:"queues"`
}

// trim checks port i's trim section, if it has one, against the port's
// nq queues, its mtu, its buffer queues qc and its scheduler sc, and
// returns the dataplane's Trim. Combinations that cannot work are errors;
// those that work, but likely not as meant, are warnings.
func (c *checker) trim(i int, y *trimYAML, nq, mtu int, qc []buffer.QueueConfig, sc scheduler.Config, cls dataplane.Classifier) *dataplane.Trim {
	if y == nil {
		return nil
	}
	k := func(sub string) string { return c.portKey(i, "trim."+sub) }
	if sc.Kind == scheduler.DualQ {
		c.errf(c.portKey(i, "trim"), "set on a port of scheduler kind dualq, whose two queues carry the Classic and the L4S traffic; trimmed headers need a queue of their own")
		return nil
	}
	t := &dataplane.Trim{}
	ok := true
	if y.Bytes != nil {
		switch b := y.Bytes.N; {
		case b != 0 && (b < dataplane.MinTrimSize || b > dataplane.MaxFrameSize):
			c.errf(k("bytes"), "%q outside [%d, %s] (or 0 for the headers plus %d bytes)", y.Bytes, dataplane.MinTrimSize, FormatSize(dataplane.MaxFrameSize), packet.DefaultTrimPayload)
			ok = false
		case b >= int64(mtu):
			c.errf(k("bytes"), "%q not below the port's mtu %d: no frame is longer, so none would be cut", y.Bytes, mtu)
			ok = false
		default:
			t.Size = int(b)
		}
	}
	switch {
	case y.Queue == nil:
		c.errf(k("queue"), "missing; name the queue trimmed packets go to, 0 to %d (usually a strict priority one)", nq-1)
		return nil
	case *y.Queue < 0 || *y.Queue >= nq:
		c.errf(k("queue"), "%d outside [0, %d] (the port has %d queues)", *y.Queue, nq-1, nq)
		return nil
	case nq == 1:
		c.errf(k("queue"), "%d is the port's only queue; trimmed packets need a queue of their own beside the data's (set queues ≥ 2)", *y.Queue)
		return nil
	}
	t.Queue = *y.Queue
	switch {
	case y.DSCP == nil:
		c.errf(k("dscp"), "missing; name the DSCP, 0 to %d, that marks a packet trimmed (SAI's PACKET_TRIM_DSCP_VALUE)", dataplane.MaxTrimDSCP)
		ok = false
	case *y.DSCP < 0 || *y.DSCP > dataplane.MaxTrimDSCP:
		c.errf(k("dscp"), "%d outside [0, %d]", *y.DSCP, dataplane.MaxTrimDSCP)
		ok = false
	default:
		t.DSCP = uint8(*y.DSCP)
	}
	if y.Queues != nil {
		seen := map[int]bool{}
		for j, q := range y.Queues {
			key := fmt.Sprintf("%s[%d]", k("queues"), j)
			switch {
			case q < 0 || q >= nq:
				c.errf(key, "%d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
				ok = false
			case q == t.Queue:
				c.errf(key, "%d is trim.queue; a packet it refuses would be trimmed into the queue that refused it", q)
				ok = false
			case seen[q]:
				c.errf(key, "queue %d listed twice", q)
				ok = false
			}
			seen[q] = true
		}
		if len(y.Queues) == 0 {
			c.errf(k("queues"), "empty; list the queues whose refused packets are trimmed, or leave it out for every queue but trim.queue")
			ok = false
		}
		t.Queues = y.Queues
	}
	if !ok {
		return nil
	}
	least := t.Size
	if least == 0 {
		least = 14 + 20 + 8 + packet.DefaultTrimPayload
	}
	tq := qc[t.Queue]
	if tq.Cap > 0 && tq.Cap+tq.Reserve < int64(least) {
		c.errf(k("queue"), "%d: its buffer (cap %d + reserve %d bytes) cannot hold one %d-byte trimmed packet; raise ports[%d].buffer.queues.%d.cap", t.Queue, tq.Cap, tq.Reserve, least, i, t.Queue)
		return nil
	}
	strict := sc.Kind == scheduler.SP || t.Queue < len(sc.Queues) && sc.Queues[t.Queue].Strict
	if !strict {
		c.warnf(k("queue"), "queue %d is not strict priority (scheduler.queues.%d.strict, or scheduler.kind sp): trimmed headers wait behind the data they report", t.Queue, t.Queue)
	}
	if tq.Reserve == 0 {
		c.warnf(k("queue"), "queue %d has no buffer reserve (buffer.queues.%d.reserve): when the pool is full (pool_full) its trimmed headers are refused too", t.Queue, t.Queue)
	}
	if q := cls.DSCPQueue(t.DSCP, nq); q != t.Queue {
		c.warnf(k("dscp"), "DSCP %d is classified to queue %d, not trim.queue %d: a header another switch trimmed is queued as data here (map it with classifier.dscp.%d: %d)", t.DSCP, q, t.Queue, t.DSCP, t.Queue)
	}
	return t
}
