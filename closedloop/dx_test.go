package closedloop

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestDXAgainstDCTCP runs 004 §VI's testbed comparison (2 flows through a
// 1 Gbit/s bottleneck, DCTCP's K about 20 packets) and 10 flows: DX, on
// an unmarked switch, must keep the link at least 95% busy with a mean
// queue at least three times shorter than DCTCP's (the paper: 4.85×), and
// the queueing delay its flows measure from one-way delays — across a
// receiver clock 3 s off and drifting 40 ns/ms — must match the
// bottleneck's sampled occupancy within 15%.
func TestDXAgainstDCTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("four closed-loop runs")
	}
	for _, n := range []int{2, 10} {
		run := func(cc CC, s Scheme) Result {
			r, err := Run(Scenario{Scheme: s, CC: cc, Flows: []int{n}, Warmup: 50 * time.Millisecond, Duration: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		dx, dctcp := run(DX, Unmarked), run(DCTCP, PerPort)
		if dx.Throughput < 0.95 || dctcp.Throughput < 0.95 {
			t.Errorf("%d flows: utilisation dx %.3f, dctcp %.3f; want ≥ 0.95", n, dx.Throughput, dctcp.Throughput)
		}
		if dx.PortMean*3 > dctcp.PortMean {
			t.Errorf("%d flows: mean queue dx %.0f B, dctcp %.0f B; want dx at least 3× shorter", n, dx.PortMean, dctcp.PortMean)
		}
		truth := dx.PortMean * 8 / float64(DefaultRate) * 1e9 // ns
		if got := float64(dx.DXQueueMean); math.Abs(got-truth) > 0.15*truth {
			t.Errorf("%d flows: DX measured %v of queueing on average, the switch held %v", n, dx.DXQueueMean, time.Duration(truth))
		}
		// Per packet, against the switch's own sojourn: the error is the
		// drift since the last base update (tens of ns), or a wait behind
		// another flow's frame on the shared 10 Gbit/s host link (1.2 µs),
		// queueing the switch never sees.
		errs := slices.Clone(dx.DXErrors)
		slices.Sort(errs)
		if len(errs) < 1000 || errs[0] < -100 || errs[len(errs)-1] > 1300 || errs[len(errs)/2] > 100 {
			t.Errorf("%d flows: %d matched packets, error min %d ns, median %d ns, max %d ns; want ≥ 1000 within [−100, 1300], median ≤ 100",
				n, len(errs), errs[0], errs[len(errs)/2], errs[len(errs)-1])
		}
		if dx.Drops != 0 || dx.Losses != 0 || dctcp.DXQueueMean != 0 {
			t.Errorf("%d flows: dx drops %d losses %d; dctcp DXQueueMean %v", n, dx.Drops, dx.Losses, dctcp.DXQueueMean)
		}
		if want := int(100 * time.Millisecond / DefaultSample); len(dx.PortSamples) < want || len(dx.PortSamples) > want+1 || dx.PortMax < dx.PortMedian {
			t.Errorf("%d flows: %d samples, median %.0f, max %.0f", n, len(dx.PortSamples), dx.PortMedian, dx.PortMax)
		}
	}
}

// The receiver's clock in the model is 3 s behind and drifts 40 ns/ms.
func TestReceiverClock(t *testing.T) {
	if got := receiverClock(0); got != -3*int64(time.Second) {
		t.Fatalf("receiverClock(0) = %d", got)
	}
	if got := receiverClock(int64(time.Millisecond)) - receiverClock(0); got != int64(time.Millisecond)+40 {
		t.Fatalf("one true ms reads %d ns on the receiver, want 1 ms + 40 ns", got)
	}
}
