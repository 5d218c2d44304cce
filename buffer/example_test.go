package buffer_test

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/buffer"
)

// Two saturated queues of α = 1 on two ports of a 3 MB pool each settle at
// α·B/(1 + M·α) = B/3 of shared buffer (002 §IV-B), on top of their reserves.
func Example() {
	m, err := buffer.New(buffer.Config{
		Pools: []buffer.PoolConfig{{Size: 3_000_000}},
		Ports: []buffer.PortConfig{
			{Pool: 0, Queues: []buffer.QueueConfig{{Alpha: 1, Reserve: 100_000}}},
			{Pool: 0, Queues: []buffer.QueueConfig{{Alpha: 1, Reserve: 100_000}}},
		},
	})
	if err != nil {
		panic(err)
	}
	for {
		r0 := m.Admit(0, 0, 1000)
		r1 := m.Admit(1, 0, 1000)
		if r0 != buffer.Admitted && r1 != buffer.Admitted {
			fmt.Println("stopped by", r0)
			break
		}
	}
	fmt.Println("queue bytes:", m.QueueBytes(0, 0), m.QueueBytes(1, 0))
	fmt.Println("shared:", m.QueueSharedBytes(0, 0), "of", m.PoolSharedBytes(0), "pool")
	fmt.Println("threshold:", m.Threshold(0, 0))
	// Output:
	// stopped by dynamic_threshold
	// queue bytes: 1100000 1100000
	// shared: 1000000 of 2000000 pool
	// threshold: 1000000
}
