package bench

import (
	"context"
	"fmt"
)

// measure runs the trials of one device and size.
func (r *rig) measure(ctx context.Context, dev Device, size int) (Result, error) {
	res, err := search(r.o, func(kind string, pps float64) (Trial, error) {
		t, err := r.trial(ctx, dev, size, kind, pps)
		if err == nil {
			r.rep.Trials = append(r.rep.Trials, t)
			fmt.Fprintf(r.o.Progress, "%-9s %4d B  %-6s offered %8.4f Mpps  forwarded %8.4f Mpps  loss %.4f%%  p50 %v  p99 %v\n",
				dev, size, kind, t.OfferedPPS/1e6, t.ForwardedPPS/1e6, 100*t.LossRatio,
				roundDur(t.Latency.P50), roundDur(t.Latency.P99))
		}
		return t, err
	})
	res.Device, res.Size = dev, size
	return res, err
}

// search finds the maximum forwarding rate and the RFC 2544 throughput
// with trials run by run: the unpaced trial, the sweep (always, for the
// plots; fractions of the offered rate, or of the forwarded one if the
// device forwarded less than half of it), and, if the unpaced trial lost frames, bisection between the
// highest passing rate and the lowest failing one above it, for at most
// o.Iterations steps or until the bracket is narrower than o.Resolution.
// A trial whose generator fell short of its target is run again once; if
// it falls short again and passes, the generator's limit ends the search.
func search(o SwitchOptions, run func(kind string, pps float64) (Trial, error)) (Result, error) {
	var res Result
	var trials []Trial
	do := func(kind string, pps float64) (Trial, error) {
		t, err := run(kind, pps)
		if err == nil && t.Short {
			// A stall (the generator descheduled) is more likely than a
			// generator that cannot keep a rate it held a moment ago: try
			// again once, and take a second shortfall as its limit.
			res.Trials++
			t, err = run(kind, pps)
		}
		if err == nil {
			trials = append(trials, t)
			res.Trials++
		}
		return t, err
	}
	max, err := do("max", 0)
	if err != nil {
		return res, err
	}
	res.MaxOfferedPPS, res.MaxForwardedPPS, res.MaxLossRatio = max.OfferedPPS, max.ForwardedPPS, max.LossRatio
	// The sweep's loads are fractions of the unpaced offered rate, or,
	// when the device forwarded less than half of it, of what it
	// forwarded: a generator many times faster than the device (live
	// frames) would otherwise sweep only loads the device cannot take.
	base := max.OfferedPPS
	if max.ForwardedPPS > 0 && max.ForwardedPPS < max.OfferedPPS/2 {
		base = max.ForwardedPPS
	}
	fail := max.OfferedPPS
	for _, f := range o.Sweep {
		t, err := do("sweep", f*base)
		if err != nil {
			return res, err
		}
		if !t.Pass {
			fail = min(fail, t.TargetPPS)
		}
	}
	if max.Pass {
		res.ThroughputPPS, res.GeneratorBound, res.ThroughputLatency = max.OfferedPPS, true, max.Latency
		return res, nil
	}
	// The highest passing rate below the lowest failing one: noise can make
	// a lower load fail where a higher one passed.
	var best Trial
	for _, t := range trials {
		if t.Pass && t.TargetPPS < fail && t.TargetPPS > best.TargetPPS {
			best = t
		}
	}
	res.GeneratorBound = best.Short
	for i := 0; !best.Short && i < o.Iterations && (fail-best.TargetPPS)/fail > o.Resolution; i++ {
		t, err := do("search", (best.TargetPPS+fail)/2)
		if err != nil {
			return res, err
		}
		if !t.Pass {
			fail = t.TargetPPS
			continue
		}
		best = t // if Short, it passed but the generator could not offer more: the loop ends
		res.GeneratorBound = t.Short
	}
	if best.Pass {
		res.ThroughputPPS, res.ThroughputLatency = best.OfferedPPS, best.Latency
	}
	return res, nil
}
