package config

import (
	"strconv"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// maxTIdle bounds scheduler.t_idle, the idle time after which MQ-ECN's
// round time decays.
const maxTIdle = time.Minute

// scheduler checks port i's scheduler section, and for kind dualq the
// port's coupled AQM and classifier.
func (c *checker) scheduler(i int, y *schedulerYAML, nq, mtu int, rate int64, overhead scheduler.Overhead) (scheduler.Config, dataplane.DualQ) {
	k := func(sub string) string { return c.portKey(i, "scheduler."+sub) }
	sc := scheduler.Config{NumQueues: nq, MTU: mtu, Overhead: overhead, LineRate: rate}
	kind, _ := scheduler.ParseKind(c.oneOf(k("kind"), y.Kind, "dwrr", "sp", "wrr", "dwrr", "wfq", "dualq"))
	sc.Kind = kind
	if kind == scheduler.DualQ {
		return c.dualq(i, y, sc)
	}
	c.notDualQ(i, kind)
	if y.Beta != nil {
		if b := *y.Beta; !(b > 0 && b < 1) {
			c.errf(k("beta"), "%g outside (0, 1)", b)
		} else {
			sc.Beta = b
		}
	}
	if y.TIdle != nil {
		if d := y.TIdle.D; d < 0 || d > maxTIdle {
			c.errf(k("t_idle"), "%q outside [0, %v]", y.TIdle, maxTIdle)
		} else {
			sc.TIdle = d
		}
	}
	if len(y.Queues) == 0 {
		return sc, dataplane.DualQ{}
	}
	sc.Queues = make([]scheduler.QueueConfig, nq)
	charged := int64(overhead.Wire(mtu))
	for _, q := range sortedKeys(y.Queues) {
		key := k("queues." + strconv.Itoa(q))
		if q < 0 || q >= nq {
			c.errf(key, "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		yq := y.Queues[q]
		qc := scheduler.QueueConfig{Strict: yq.Strict || kind == scheduler.SP}
		if yq.Weight != nil {
			if w := *yq.Weight; w < 1 || w > scheduler.MaxWeight {
				c.errf(key+".weight", "%d outside [1, %d]", w, scheduler.MaxWeight)
			} else {
				qc.Weight = w
			}
		}
		if yq.Quantum != nil {
			rr := !qc.Strict && (kind == scheduler.WRR || kind == scheduler.DWRR)
			qv := yq.Quantum.N
			switch {
			case !rr:
				c.errf(key+".quantum", "%q set on a %s queue; only non-strict wrr and dwrr queues have a quantum (use weight)", yq.Quantum, map[bool]string{true: "strict", false: kind.String()}[qc.Strict])
			case kind == scheduler.DWRR && (qv < charged || qv > scheduler.MaxQuantum):
				c.errf(key+".quantum", "%q outside [%d, %s]: DWRR needs a quantum of at least the MTU as charged (%d bytes with overhead %v)", yq.Quantum, charged, FormatSize(scheduler.MaxQuantum), charged, overhead)
			case qv < 1 || qv > scheduler.MaxQuantum:
				c.errf(key+".quantum", "%q outside [1, %s]", yq.Quantum, FormatSize(scheduler.MaxQuantum))
			default:
				qc.Quantum = qv
			}
		}
		sc.Queues[q] = qc
	}
	if kind == scheduler.SP {
		for q := range sc.Queues {
			sc.Queues[q].Strict = true
		}
	}
	return sc, dataplane.DualQ{}
}
