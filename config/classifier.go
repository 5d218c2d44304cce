package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// classifier checks the classifier section's codepoints; classifierQueues
// checks their queues once the ports are known.
func (c *checker) classifier(y classifierYAML) dataplane.Classifier {
	return dataplane.Classifier{
		UsePCP: y.UsePCP,
		DSCP:   c.codepoints("classifier.dscp", "DSCP", y.DSCP, dataplane.MaxDSCP),
		PCP:    c.codepoints("classifier.pcp", "PCP", y.PCP, dataplane.MaxPCP),
	}
}

// codepoints checks a map of codepoints in [0, maxCode] to queues; nil
// when it is empty.
func (c *checker) codepoints(key, name string, m map[int]int, maxCode int) map[uint8]int {
	var out map[uint8]int
	for _, k := range sortedKeys(m) {
		key := fmt.Sprintf("%s.%d", key, k)
		q := m[k]
		switch {
		case k < 0 || k > maxCode:
			c.errf(key, "%s %d outside [0, %d]", name, k, maxCode)
		case q < 0 || q >= scheduler.MaxQueues:
			c.errf(key, "queue %d outside [0, %d]", q, scheduler.MaxQueues-1)
		default:
			if out == nil {
				out = map[uint8]int{}
			}
			out[uint8(k)] = q
		}
	}
	return out
}

// classifierQueues checks that every queue the classifier names exists on
// the port with the most queues.
func (c *checker) classifierQueues(cfg *Config) {
	maxQ := 1
	for _, p := range cfg.Switch.Ports {
		maxQ = max(maxQ, p.Scheduler.NumQueues)
	}
	cl := cfg.Switch.Classifier
	for key, m := range map[string]map[uint8]int{"classifier.dscp": cl.DSCP, "classifier.pcp": cl.PCP} {
		for _, k := range sortedKeys(m) {
			if q := m[k]; q >= maxQ {
				c.errf(fmt.Sprintf("%s.%d", key, k), "queue %d outside [0, %d] (the most queues any port has, minus 1)", q, maxQ-1)
			}
		}
	}
}

// sortedKeys returns m's keys in order, so that errors come in file order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
