package dataplane

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Classifier maps packets to egress queues. By default the queue is the
// DSCP class selector, DSCP>>3, capped to the port's last queue. DSCP
// overrides single codepoints; with UsePCP, VLAN-tagged frames use the
// 802.1Q priority code point instead (PCP n → queue n unless PCP overrides),
// and untagged frames still use DSCP.
type Classifier struct {
	DSCP   map[uint8]int // DSCP (0–63) → queue
	UsePCP bool
	PCP    map[uint8]int // PCP (0–7) → queue
}

// classifier is a Classifier compiled into lookup tables.
type classifier struct {
	dscp   [64]uint8
	usePCP bool
	pcp    [8]uint8
}

// Codepoint limits.
const (
	MaxDSCP = 63
	MaxPCP  = 7
)

// DSCPQueue returns the egress queue of a packet with DSCP dscp, classified
// by its DSCP (untagged, or UsePCP off), on a port with the given number
// of queues: the DSCP map, else the class selector dscp >> 3, capped at
// the port's last queue.
func (c Classifier) DSCPQueue(dscp uint8, queues int) int {
	q := int(dscp >> 3)
	if v, ok := c.DSCP[dscp]; ok {
		q = v
	}
	return min(q, queues-1)
}

// validate checks c for ports of at most maxQueues queues.
func (c Classifier) validate(maxQueues int) error {
	for k, q := range c.DSCP {
		if k > MaxDSCP {
			return fmt.Errorf("classifier: dscp %d outside [0, %d]", k, MaxDSCP)
		}
		if q < 0 || q >= maxQueues {
			return fmt.Errorf("classifier: dscp[%d]: queue %d outside [0, %d]", k, q, maxQueues-1)
		}
	}
	for k, q := range c.PCP {
		if k > MaxPCP {
			return fmt.Errorf("classifier: pcp %d outside [0, %d]", k, MaxPCP)
		}
		if q < 0 || q >= maxQueues {
			return fmt.Errorf("classifier: pcp[%d]: queue %d outside [0, %d]", k, q, maxQueues-1)
		}
	}
	return nil
}

func newClassifier(c Classifier, maxQueues int) (classifier, error) {
	var cl classifier
	if err := c.validate(maxQueues); err != nil {
		return cl, err
	}
	for i := range cl.dscp {
		cl.dscp[i] = uint8(c.DSCPQueue(uint8(i), maxQueues))
	}
	for i := range cl.pcp {
		cl.pcp[i] = uint8(i)
		if q, ok := c.PCP[uint8(i)]; ok {
			cl.pcp[i] = uint8(q)
		}
	}
	cl.usePCP = c.UsePCP
	return cl, nil
}

// queue returns the queue of d on a port with n queues.
func (cl *classifier) queue(d *packet.Desc, n int) uint8 {
	q := cl.dscp[d.DSCP&63]
	if cl.usePCP && d.Tags > 0 {
		q = cl.pcp[d.PCP&7]
	}
	if int(q) >= n {
		q = uint8(n - 1)
	}
	return q
}
