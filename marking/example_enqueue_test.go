package marking_test

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
)

// MQ-ECN at 10 Gbit/s with RTT = 100 µs and λ = 1: one backlogged DWRR
// queue gets the standard threshold C·RTT·λ = 125 KB; with four equal
// queues backlogged, T_round is four times longer and each queue's
// threshold is a quarter of it (001 §3.2).
func ExampleNewMQECN() {
	m, err := marking.NewMQECN(marking.MQECNConfig{RTT: 100_000, Lambda: 1}, marking.Enqueue, 8)
	if err != nil {
		panic(err)
	}
	for _, queues := range []int64{1, 4} {
		v := marking.View{
			QueueBytes: 40_000,
			Quantum:    1500,
			RoundTime:  queues * 1200, // ns: 1500 B per queue at 10 Gbit/s
			LineRate:   10e9,
		}
		verdict := m.Mark(&v)
		fmt.Printf("%d backlogged: %v", queues, verdict)
		if verdict == marking.Mark {
			fmt.Printf(" (%d B ≥ K_i = %d B)", v.Value, v.Threshold)
		}
		fmt.Println()
	}
	// Output:
	// 1 backlogged: pass
	// 4 backlogged: mark (40000 B ≥ K_i = 31250 B)
}

// An enqueue chain with per-queue DCTCP marking and BCC's shared-pool
// RED: a Not-ECT packet that would be marked is dropped.
func ExampleNewChain() {
	queue, err := marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Packets(65)), marking.Enqueue, 8)
	if err != nil {
		panic(err)
	}
	bcc, err := marking.NewBCC(marking.BCCConfig{
		PortThreshold: marking.Bytes(720_000),
		LineRate:      100e9, RTT: 80_000, Lambda: 0.72,
		Reserve: 128_000, PoolSize: 3_000_000, Alpha: 4, Ports: 8,
	}, marking.Enqueue, 8)
	if err != nil {
		panic(err)
	}
	c, err := marking.NewChain(marking.Enqueue, marking.NonECTDrop,
		append([]marking.Member{{Name: "dctcp", Marker: queue}}, bcc...)...)
	if err != nil {
		panic(err)
	}
	v := marking.View{QueueBytes: 100_000, PortBytes: 100_000, PoolBytes: 900_000, LineRate: 100e9}
	fmt.Println(c.Decide(&v, packet.ECT0), c.Name(c.Decider()))
	fmt.Println(c.Decide(&v, packet.NotECT))
	for _, m := range c.Counts(nil) {
		fmt.Printf("%s: %d marks\n", m.Name, m.Marks)
	}
	// Output:
	// mark dctcp
	// drop
	// dctcp: 2 marks
	// bcc-port: 0 marks
	// bcc-pool: 0 marks
}
