package capture_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// A capture of everything a port sends, on a two-port switch in virtual
// time: start it, forward three frames, stop it and read the counters.
func ExampleManager() {
	clk := timestamp.NewVirtual(0)
	port := func(name string) dataplane.PortConfig {
		return dataplane.PortConfig{
			Name:      name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1},
			Queues:    []buffer.QueueConfig{{Alpha: 1}},
			Worker:    -1,
		}
	}
	cfg := dataplane.Config{
		Ports:      []dataplane.PortConfig{port("in"), port("out")},
		Pools:      []buffer.PoolConfig{{Size: 1 << 20}},
		Forwarding: dataplane.Forwarding{Patches: []dataplane.Patch{{From: 0, To: 1}}},
	}
	swIn, host, _ := memport.Pair("in", "host", clk, memport.Link{})
	swOut, _, _ := memport.Pair("out", "sink", clk, memport.Link{})
	sw, err := dataplane.New(cfg, []ports.Port{swIn, swOut}, clk, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sw.Close()

	dir, _ := os.MkdirTemp("", "capture")
	defer os.RemoveAll(dir)
	m := capture.New(sw, clk, capture.Options{Dir: dir})
	id, err := m.Start(capture.Spec{Port: "out", Format: capture.PCAP, Path: "out.pcap"})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Three minimal Ethernet frames (an unknown EtherType is forwarded as is).
	frame := make([]byte, 60)
	frame[12], frame[13] = 0x88, 0xb5
	for i := 0; i < 3; i++ {
		host.Transmit([]*packet.Desc{{Buf: frame, Len: len(frame)}})
	}
	clk.Set(1000)
	sw.Poll()

	st, _ := m.Stop(id)
	fmt.Println(filepath.Base(st.File), st.Written, "packets,", st.Bytes, "bytes,", st.SkippedRingFull, "skipped")
	// Output: out.pcap 3 packets, 252 bytes, 0 skipped
}

// Spec errors name the key, the value and what is allowed.
func ExampleSpec_Validate() {
	err := capture.Spec{Port: "eth1", Filter: capture.Marked, Path: "m.pcapng", SnapLen: 32}.Validate()
	fmt.Println(err)
	// Output: snaplen: 32 outside [64, 65535]
}
