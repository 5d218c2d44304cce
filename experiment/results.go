package experiment

import (
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
)

// What several experiments read from demo.Run's results and the switch's
// counters.

// sampleEvery is how often the experiments that run demo.Run sample each
// queue's goodput, the port's occupancy and the flows' RTTs.
const sampleEvery = 50 * time.Millisecond

// scheme returns the result of scheme name in r.
func scheme(r *demo.Result, name string) (demo.SchemeResult, bool) {
	i := slices.IndexFunc(r.Schemes, func(s demo.SchemeResult) bool { return s.Scheme == name })
	if i < 0 {
		return demo.SchemeResult{}, false
	}
	return r.Schemes[i], true
}

// pooled returns every flow's RTT samples of s, all queues together.
func pooled(s demo.SchemeResult) []time.Duration {
	var all []time.Duration
	for _, q := range s.RTTs {
		all = append(all, q...)
	}
	return all
}

// meanDelay returns the mean queueing delay over a run's queues, each
// weighted by its goodput (its share of the packets).
func meanDelay(s demo.SchemeResult) time.Duration {
	var sum, w float64
	for _, q := range s.Queues {
		sum += float64(q.MeanDelay) * q.Goodput
		w += q.Goodput
	}
	if w == 0 {
		return 0
	}
	return time.Duration(sum / w)
}

// queueDrops returns the drops of a port's queue q, every reason, between
// two snapshots of its counters.
func queueDrops(p0, p1 dataplane.PortStats, q int) uint64 {
	var n uint64
	for reason, d := range p1.Queues[q].Drops {
		n += d - p0.Queues[q].Drops[reason]
	}
	return n
}

// queueSum returns f summed over a run's queues.
func queueSum(s demo.SchemeResult, f func(demo.QueueResult) uint64) uint64 {
	var n uint64
	for _, q := range s.Queues {
		n += f(q)
	}
	return n
}
