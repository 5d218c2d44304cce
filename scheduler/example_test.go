package scheduler_test

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// An SP-over-DWRR port at 1 Gbit/s: queue 2 is strict, queues 0 and 1 share
// the DWRR level with one 1500-byte quantum each. The shaper paces the port
// at the line rate, one 1500-byte frame per 12 µs. A DWRR round takes two
// frame times, 24 µs. Each sample spans from a queue's arrival (or the end
// of its previous turn) to the end of its frame on the wire: 24, 36, 24 and
// 24 µs, the first two stretched by the strict packet; T_round starts from
// 0 and approaches 24 µs with β = 0.75.
func Example() {
	s, err := scheduler.New(scheduler.Config{
		Kind:     scheduler.DWRR,
		MTU:      1500,
		LineRate: 1e9,
		Queues:   []scheduler.QueueConfig{{}, {}, {Strict: true}},
	})
	if err != nil {
		panic(err)
	}
	sh, err := scheduler.NewShaper(scheduler.ShaperConfig{Rate: 1e9}, 0)
	if err != nil {
		panic(err)
	}
	for _, q := range []uint8{0, 0, 1, 1, 2} {
		s.Enqueue(&packet.Desc{Queue: q, Len: 1500}, 0)
	}
	for now := int64(0); ; now = sh.Next(now) {
		d := s.Dequeue(now)
		if d == nil {
			break
		}
		sh.Take(now, d.Len)
		fmt.Printf("t=%2dµs queue %d  T_round=%dns\n", now/1000, d.Queue, s.RoundTime(now))
	}
	// Output:
	// t= 0µs queue 2  T_round=0ns
	// t=12µs queue 0  T_round=6000ns
	// t=24µs queue 1  T_round=13500ns
	// t=36µs queue 0  T_round=16125ns
	// t=48µs queue 1  T_round=18094ns
}
