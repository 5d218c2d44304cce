package marking

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// mask zeroes the costly View fields need does not name, as a port that
// fills only those (dataplane's fillView) leaves them.
func mask(v View, need Need) View {
	if need&NeedRoundTime == 0 {
		v.RoundTime = 0
	}
	if need&NeedBusyWeight == 0 {
		v.BusyWeightSum = 0
	}
	if need&NeedPort == 0 {
		v.PortBytes, v.PortPackets = 0, 0
	}
	if need&NeedEmptySince == 0 {
		v.QueueEmptySince, v.PortEmptySince = 0, 0
	}
	if need&NeedHead == 0 {
		v.HeadSojourn = 0
	}
	return v
}

// A marker that says what it needs decides every packet as it would with
// every field filled: two copies, one fed full views and one the views
// masked to its Needs, agree on every verdict, value and threshold over a
// random walk of occupancies, idle spells included.
func TestNeedsAreEnough(t *testing.T) {
	var cases []REDConfig
	for _, m := range []Measure{MeasureQueue, MeasurePort, MeasurePool} {
		for _, w := range []float64{0, 0.002} {
			for _, c := range []Count{CountOff, CountOn} {
				for _, split := range []bool{false, true} {
					if split && m != MeasureQueue {
						continue
					}
					cases = append(cases, REDConfig{Measure: m, KMin: Bytes(20_000), KMax: Bytes(60_000), PMax: 0.2,
						Weight: w, Count: c, Split: split, Seed: 7})
				}
			}
		}
	}
	cases = append(cases, REDConfig{Measure: MeasureQueue, KMin: Delay(50_000), Seed: 7}) // a time threshold, from LineRate
	for _, cfg := range cases {
		t.Run(fmt.Sprintf("%v/w%g/count%d/split%v/%v", cfg.Measure, cfg.Weight, cfg.Count, cfg.Split, cfg.KMin), func(t *testing.T) {
			full, err := NewRED(cfg, Enqueue, 4)
			if err != nil {
				t.Fatal(err)
			}
			part, _ := NewRED(cfg, Enqueue, 4)
			need := Needs(part)
			if Needs(full) == NeedAll {
				t.Fatal("RED does not say what it needs")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var now, qb, pb int64
			var emptyQ, emptyP int64
			for i := range 20_000 {
				now += 1_000 + rng.Int64N(20_000)
				switch {
				case i%500 < 50: // an idle spell
					if qb > 0 {
						emptyQ = now
					}
					if pb > 0 {
						emptyP = now
					}
					qb, pb = 0, 0
				default:
					qb = max(0, qb+rng.Int64N(6_001)-3_000)
					pb = qb + rng.Int64N(40_000)
				}
				v := View{
					Now: now, EnqTime: now, Len: 1500, Queue: i % 4,
					QueueBytes: qb, QueuePackets: qb / 1500, PortBytes: pb, PortPackets: pb / 1500,
					PoolBytes: pb + 10_000, PoolSize: 1 << 20, Quantum: 1500, Weight: 1500, WeightSum: 6000,
					BusyWeightSum: 3000, RoundTime: 40_000, LineRate: 1e9,
					QueueEmptySince: emptyQ, PortEmptySince: emptyP,
				}
				vm := mask(v, need)
				a, b := full.Mark(&v), part.Mark(&vm)
				if a != b || v.Value != vm.Value || v.Threshold != vm.Threshold {
					t.Fatalf("packet %d (needs %04b): full view %v (%d vs %d), masked %v (%d vs %d)",
						i, need, a, v.Value, v.Threshold, b, vm.Value, vm.Threshold)
				}
			}
		})
	}
}

func TestChainNeeds(t *testing.T) {
	q, _ := NewRED(REDConfig{Measure: MeasureQueue, KMin: Bytes(1000)}, Enqueue, 1)
	p, _ := NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(1000)}, Enqueue, 1)
	a, _ := NewRED(REDConfig{Measure: MeasureQueue, KMin: Bytes(1000), Weight: 0.1}, Enqueue, 1)
	for _, c := range []struct {
		members []Marker
		want    Need
	}{
		{nil, 0},
		{[]Marker{q}, 0},
		{[]Marker{q, p}, NeedPort},
		{[]Marker{p, a}, NeedPort | NeedEmptySince},
		{[]Marker{q, eqFunc(func(*View) Verdict { return Pass })}, NeedAll}, // says nothing: gets everything
	} {
		var ms []Member
		for i, m := range c.members {
			ms = append(ms, Member{Name: fmt.Sprint(i), Marker: m})
		}
		ch, err := NewChain(Enqueue, NonECTDrop, ms...)
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.Needs(); got != c.want {
			t.Errorf("%d members: needs %04b, want %04b", len(c.members), got, c.want)
		}
	}
}
