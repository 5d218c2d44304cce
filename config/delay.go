package config

import (
	"strconv"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// delay checks port i's delay section: the port's delay, per queue and
// per DSCP class.
func (c *checker) delay(i int, y *delayYAML, nq int, cl dataplane.Classifier) dataplane.Delay {
	k := func(sub string) string { return c.portKey(i, "delay."+sub) }
	d := dataplane.Delay{Seed: uint64(i) + 1}
	params := func(prefix string, p delayParamsYAML) dataplane.Delay {
		var out dataplane.Delay
		for _, f := range []struct {
			name string
			v    *Duration
			dst  *time.Duration
		}{{"fixed", p.Fixed, &out.Fixed}, {"jitter", p.Jitter, &out.Jitter}} {
			if f.v == nil {
				continue
			}
			if f.v.D < 0 || f.v.D > dataplane.MaxDelay {
				c.errf(k(prefix+f.name), "%q outside [0, %v]", f.v, dataplane.MaxDelay)
				continue
			}
			*f.dst = f.v.D
		}
		return out
	}
	base := params("", y.delayParamsYAML)
	d.Fixed, d.Jitter = base.Fixed, base.Jitter
	if y.Distribution != "" {
		if dist, err := dataplane.ParseDistribution(y.Distribution); err != nil {
			c.errf(k("distribution"), "%q is not one of uniform, normal, exponential", y.Distribution)
		} else {
			d.Distribution = dist
		}
	}
	if y.Seed != nil {
		d.Seed = *y.Seed
	}
	for _, q := range sortedKeys(y.PerQueue) {
		key := "per_queue." + strconv.Itoa(q)
		if q < 0 || q >= nq {
			c.errf(k(key), "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		if d.PerQueue == nil {
			d.PerQueue = map[int]dataplane.Delay{}
		}
		d.PerQueue[q] = params(key+".", y.PerQueue[q])
	}
	// A DSCP class's delay applies to the egress queue its DSCPs are
	// classified into, so the class must own one queue.
	fromClass := map[int]int{}
	for _, class := range sortedKeys(y.PerDSCPClass) {
		key := "per_dscp_class." + strconv.Itoa(class)
		if class < 0 || class > 7 {
			c.errf(k(key), "class %d outside [0, 7] (the DSCP class selector, DSCP >> 3)", class)
			continue
		}
		queues := map[int]bool{}
		q := 0
		for dscp := class << 3; dscp < class<<3+8; dscp++ {
			q = cl.DSCPQueue(uint8(dscp), nq)
			queues[q] = true
		}
		if len(queues) > 1 {
			c.errf(k(key), "DSCPs %d–%d of class %d go to %d different queues on this port; the delay applies per egress queue, so use per_queue",
				class<<3, class<<3+7, class, len(queues))
			continue
		}
		if _, dup := d.PerQueue[q]; dup {
			if other, ok := fromClass[q]; ok {
				c.errf(k(key), "class %d shares queue %d with class %d; the delay applies per egress queue, so give them one delay with per_queue", class, q, other)
			} else {
				c.errf(k(key), "class %d goes to queue %d, which per_queue already sets", class, q)
			}
			continue
		}
		if d.PerQueue == nil {
			d.PerQueue = map[int]dataplane.Delay{}
		}
		d.PerQueue[q] = params(key+".", y.PerDSCPClass[class])
		fromClass[q] = class
	}
	return d
}
