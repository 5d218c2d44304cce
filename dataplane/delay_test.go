package dataplane

import (
	"math"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
)

// pop takes the packet that leaves the line first, if it is due by now.
func pop(l *delayLine, now int64) *packet.Desc {
	if q, at, ok := l.next(); ok && at <= now {
		return l.take(q)
	}
	return nil
}

func TestDelayLineFixedAndFIFO(t *testing.T) {
	l, err := newDelayLine(Delay{Fixed: 50 * time.Microsecond, Jitter: 30 * time.Microsecond, Seed: 7}, 2)
	if err != nil || l == nil {
		t.Fatalf("newDelayLine: %v, %v", l, err)
	}
	ds := make([]*packet.Desc, 1000)
	for i := range ds {
		ds[i] = &packet.Desc{Queue: uint8(i % 2), RxTime: 1000}
		if !l.push(ds[i], 1000) {
			t.Fatal("push refused below capacity")
		}
	}
	if d := pop(l, 1000+50_000-1); d != nil {
		t.Fatal("a packet left before its fixed delay")
	}
	// Everything is out by now + fixed + jitter, each queue in FIFO order.
	next := [2]int{0, 1}
	for now, n := int64(1000+50_000), 0; n < len(ds); now += 1000 {
		if now > 1000+80_000 {
			t.Fatalf("%d packets still held after fixed + jitter", len(ds)-n)
		}
		for d := pop(l, now); d != nil; d = pop(l, now) {
			q := int(d.Queue)
			if d != ds[next[q]] {
				t.Fatalf("queue %d released out of order", q)
			}
			next[q] += 2
			n++
		}
	}
	if l.len() != 0 {
		t.Fatalf("len = %d after draining", l.len())
	}
	if l, _ := newDelayLine(Delay{}, 2); l != nil {
		t.Fatal("a zero delay made a delay line")
	}
}

// TestDelayDistributions draws the jitter of packets spaced far apart (so
// that FIFO order never holds one back) and compares mean and standard
// deviation with each distribution's.
func TestDelayDistributions(t *testing.T) {
	const fixed, jitter, n = int64(time.Millisecond), 100_000.0, 40_000
	cases := []struct {
		dist       Distribution
		mean, std  float64
		minJ, maxJ float64
	}{
		{Uniform, jitter / 2, jitter / math.Sqrt(12), 0, jitter},
		{Normal, 0, jitter, -float64(fixed), math.Inf(1)},
		{Exponential, jitter, jitter, 0, math.Inf(1)},
	}
	for _, c := range cases {
		l, err := newDelayLine(Delay{Fixed: time.Duration(fixed), Jitter: time.Duration(jitter), Distribution: c.dist, Seed: 3}, 1)
		if err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		d := &packet.Desc{}
		for i := 0; i < n; i++ {
			now := int64(i) * int64(time.Second)
			d.RxTime = now
			l.push(d, now)
			e, _ := l.queues[0].fifo.Pop()
			l.held--
			j := float64(e.at - now - fixed)
			if j < c.minJ || j >= c.maxJ {
				t.Fatalf("%v: jitter %v outside [%v, %v)", c.dist, j, c.minJ, c.maxJ)
			}
			sum += j
			sq += j * j
		}
		mean := sum / n
		std := math.Sqrt(sq/n - mean*mean)
		// Within 3% of the standard deviation for the mean (≈ 6 standard
		// errors at n = 40000), 3% for the spread.
		if math.Abs(mean-c.mean) > 0.03*c.std || math.Abs(std-c.std) > 0.03*c.std {
			t.Errorf("%v: jitter mean %.0f ns, std %.0f ns; want %.0f, %.0f", c.dist, mean, std, c.mean, c.std)
		}
	}
	if _, err := ParseDistribution("pareto"); err == nil {
		t.Error("ParseDistribution accepted pareto")
	}
	if d, err := ParseDistribution("exponential"); err != nil || d != Exponential {
		t.Errorf("ParseDistribution(exponential) = %v, %v", d, err)
	}
}
