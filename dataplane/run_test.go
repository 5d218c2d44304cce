package dataplane_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// TestRunTwoWorkers forwards traffic between ports owned by two workers in
// real time, so every packet crosses a worker ring, and checks that all of
// it arrives, that the balance holds after Run returns, and that no
// goroutine is left behind.
func TestRunTwoWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := timestamp.NewMonotonic()
	cfg := dataplanetest.Config(4, 2, 0, 4<<20)
	cfg.Workers = 2
	cfg.Spin = 16 // reach the wait path often
	cfg.CPUs = []int{0, 1}
	for i := range cfg.Ports {
		cfg.Ports[i].Worker = i % 2
	}
	// 0 → 1 and 2 → 3: ports 0, 2 belong to worker 0 and 1, 3 to worker 1.
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}, {From: 2, To: 3}}
	hosts := make([]*memport.Port, 4)
	devs := make([]ports.Port, 4)
	for i := range devs {
		a, b, err := memport.Pair("sw", "host", clk, memport.Link{})
		if err != nil {
			t.Fatal(err)
		}
		devs[i], hosts[i] = a, b
	}
	sw, err := dataplane.New(cfg, devs, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sw.Run(ctx) }()

	const n = 20_000
	f := packettest.UDP4(t, packettest.Options{Size: 200, ECN: packet.ECT0})
	d := []*packet.Desc{{Buf: f, Len: len(f)}}
	rx := []*packet.Desc{{Buf: make([]byte, 2048)}}
	got := [4]int{}
	deadline := time.Now().Add(20 * time.Second)
	for sent := 0; (sent < n || got[1] < n || got[3] < n) && time.Now().Before(deadline); {
		// A window of 256 frames in flight keeps the queues far below the
		// buffer, so no packet may be lost.
		if sent < n && sent-min(got[1], got[3]) < 256 {
			if a, _ := hosts[0].Transmit(d); a == 1 {
				for b, _ := hosts[2].Transmit(d); b != 1; b, _ = hosts[2].Transmit(d) {
				}
				sent++
			}
		}
		for _, h := range []int{1, 3} {
			for {
				k, _ := hosts[h].Receive(rx)
				if k == 0 {
					break
				}
				got[h]++
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got[1] != n || got[3] != n {
		t.Fatalf("received %d and %d of %d on ports 1 and 3", got[1], got[3], n)
	}
	if a := sw.Account(); !a.Balanced() || a.Held != 0 {
		t.Fatalf("after Run: %+v, want balanced and nothing held", a)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before Run, %d after", before, after)
	}
}
