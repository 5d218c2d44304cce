package dataplane_test

import (
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"syscall"
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

// departures records each packet's departure time on the virtual line.
type departures map[uint16]int64

func (d departures) Record(ev *dataplane.Event) {
	if ev.Kind == dataplane.EventEgress {
		d[binary.BigEndian.Uint16(ev.Frame[34:36])] = ev.Time
	}
}

// TestCoalescedTransmit: with a coalescing window W, a packet reaches its
// device at least at its departure on the virtual line and at most W
// later, and the device gets batches of about W·C bytes, not one packet per
// call; with no window, each packet goes out at its departure.
func TestCoalescedTransmit(t *testing.T) {
	const rate, n, size = 1_000_000_000, 200, 1500 // a departure every 12.3 µs
	for _, c := range []struct {
		window    time.Duration
		wantBatch float64 // mean packets per device call
	}{{-1, 1}, {50 * time.Microsecond, 4}, {200 * time.Microsecond, 16}} {
		cfg := dataplanetest.Config(2, 1, rate, 1<<20)
		cfg.Ports[1].Coalesce = c.window
		r := dataplanetest.New(t, cfg, memport.Link{}) // instant links: a frame arrives when sent
		dep := departures{}
		r.Switch.AddTap(1, dep)
		var frames [][]byte
		for i := 0; i < n; i++ {
			frames = append(frames, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, SrcPort: uint16(i)}))
		}
		r.Send(0, frames...)
		rx := make([]*packet.Desc, 256)
		for i := range rx {
			rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
		}
		got, calls := 0, 0
		for got < n {
			r.Switch.Poll()
			k, _ := r.Hosts[1].Receive(rx)
			if k > 0 {
				calls++
			}
			for _, d := range rx[:k] {
				seq := binary.BigEndian.Uint16(d.Frame()[34:36])
				late := d.RxTime - dep[seq]
				if late < 0 || late > max(int64(c.window), 0) {
					t.Fatalf("window %v: packet %d left the line at %d and reached the device %d ns later", c.window, seq, dep[seq], late)
				}
			}
			got += k
			next := r.Switch.NextEvent()
			if next == 1<<63-1 {
				break
			}
			r.Clock.Set(next)
		}
		if got != n {
			t.Fatalf("window %v: %d of %d frames arrived", c.window, got, n)
		}
		if mean := float64(n) / float64(calls); mean < c.wantBatch*0.75 || mean > c.wantBatch*1.5 {
			t.Errorf("window %v: %.1f packets per device call, want about %.0f", c.window, mean, c.wantBatch)
		}
	}
}

// TestWorkerSleepsWhileBacklogged: a worker whose only work is a
// backlogged port shaped to 1 Mbit/s (a 1500-byte departure every 12 ms)
// sleeps between departures instead of polling, and its time shows it.
// The backlog lasts 3.6 s of line time, so that the port is still
// backlogged when Run returns however late a loaded machine lets it.
// Whether it spun is judged by the CPU time the process used, which other
// processes on the machine cannot inflate; the worker's own busy/sleep
// split is wall-clock time, where a pass preempted by another process
// counts as busy, so it is only checked to cover the run and to show
// sleep.
func TestWorkerSleepsWhileBacklogged(t *testing.T) {
	clk := timestamp.NewMonotonic()
	cfg := dataplanetest.Config(2, 1, 1_000_000, 1<<20)
	cfg.Spin = 1 // sleep at the first idle pass: how long idle passes take (the race detector slows them) is not the point
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	cfg.Forwarding.NoLearning = true
	devs := make([]ports.Port, 2)
	hosts := make([]*memport.Port, 2)
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
	defer sw.Close()
	f := dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 1500})
	ds := make([]*packet.Desc, 300) // 3.6 s of line time
	for i := range ds {
		ds[i] = &packet.Desc{Buf: f, Len: len(f)}
	}
	hosts[0].Transmit(ds)
	const run = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	cpu0 := processCPU(t)
	if err := sw.Run(ctx); err != nil {
		t.Fatal(err)
	}
	cpu := processCPU(t) - cpu0
	w := sw.Stats().Workers[0]
	total := w.Busy + w.Spin + w.Sleep
	t.Logf("process CPU %v in %v; worker busy %v, spin %v, sleep %v", cpu, run, time.Duration(w.Busy), time.Duration(w.Spin), time.Duration(w.Sleep))
	if cpu > run/2 {
		t.Errorf("the process used %v of CPU in %v while the port was backlogged: the worker polled instead of sleeping", cpu, run)
	}
	if total < int64(run*5/6) || w.Sleep == 0 {
		t.Errorf("worker time busy %v + spin %v + sleep %v: want it to cover the %v run, with sleep", time.Duration(w.Busy), time.Duration(w.Spin), time.Duration(w.Sleep), run)
	}
	if sw.Stats().Ports[1].Bytes == 0 {
		t.Error("the port was no longer backlogged at the end; the test proves nothing")
	}
}

// processCPU returns the CPU time, user and system, the process has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIdleLineBatchGrows: on an idle line (here unshaped), a batch of
// departed packets that holds a full pass's worth waits for the next
// passes, up to four passes' worth or the coalescing window, so that a
// busy egress makes few, large transmit calls; a handful of packets (the
// ACKs of the other direction) goes out in the pass that sends it; and
// with no window every pass transmits what it sent.
func TestIdleLineBatchGrows(t *testing.T) {
	const window = 50 * time.Microsecond
	for _, c := range []struct {
		name   string
		window time.Duration
		n      int
		calls  []int // frames per device call while the clock stands still
		after  int   // frames that wait for the window
	}{
		{"200 frames", window, 200, nil, 200},
		{"300 frames", window, 300, []int{256, 44}, 0},
		{"10 frames", window, 10, []int{10}, 0},
		{"no window", -1, 200, []int{64, 64, 64, 8}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := dataplanetest.Config(2, 1, 0, 1<<20)
			cfg.Ports[1].Coalesce = c.window
			r := dataplanetest.New(t, cfg, memport.Link{})
			dep := departures{}
			r.Switch.AddTap(1, dep)
			var frames [][]byte
			for i := range c.n {
				frames = append(frames, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 100, SrcPort: uint16(i)}))
			}
			r.Send(0, frames...)
			var calls []int
			for range 8 { // the clock stands still
				r.Switch.Poll()
				if k := len(r.Recv(1)); k > 0 {
					calls = append(calls, k)
				}
			}
			if !slices.Equal(calls, c.calls) {
				t.Errorf("frames per call %v, want %v", calls, c.calls)
			}
			if c.after == 0 {
				return
			}
			next := r.Switch.NextEvent()
			if first := slices.Min(slices.Collect(maps.Values(dep))); next != first+int64(c.window) {
				t.Errorf("next event at %d, want the window's end %d", next, first+int64(c.window))
			}
			r.Clock.Set(next)
			r.Switch.Poll()
			if k := len(r.Recv(1)); k != c.after {
				t.Errorf("%d frames at the window's end, want %d", k, c.after)
			}
		})
	}
}

// takeAtMost is a device that takes at most max frames per Transmit call,
// as one call of XDP live frames takes at most 256, however many it is
// offered.
type takeAtMost struct {
	dataplanetest.Sink
	max, calls int
}

func (d *takeAtMost) Transmit(ds []*packet.Desc) (int, error) {
	d.calls++
	return d.Sink.Transmit(ds[:min(len(ds), d.max)])
}

// TestPartialTakeIsNotPushBack: a device that takes fewer frames than it
// is offered, but takes some, is not pushing back: the worker offers it
// the rest at once, and a backlogged port shaped to 10 Gbit/s keeps its
// line at every batch size, from 64 to 1024 (staged lists of 256 to 4096
// frames, against a device that takes 256 a call). The line once stopped
// at each partial take, and ran at 82% of its rate with batch 128 and 35%
// with 256 (#28).
func TestPartialTakeIsNotPushBack(t *testing.T) {
	const (
		rate = 10_000_000_000
		size = 100                          // bytes: 80 ns a frame on the line
		run  = int64(10 * time.Millisecond) // of virtual time, measured after a warm-up as long
	)
	for _, batch := range []int{64, 128, 256, 1024} {
		cfg := dataplanetest.Config(2, 1, rate, 1<<20)
		cfg.Batch = batch
		cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
		cfg.Forwarding.NoLearning = true
		clk := timestamp.NewVirtual(0)
		gen := &dataplanetest.Gen{Frame: dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size})}
		dev := &takeAtMost{max: 256}
		sw, err := dataplane.New(cfg, []ports.Port{gen, dev}, clk, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A pass receives a batch: arrivals at twice the line's rate.
		step := int64(batch) * 40
		var start int
		for now := int64(0); now < 2*run; now += step {
			clk.Set(now)
			sw.Poll()
			if now < run {
				start = dev.Bytes
			}
		}
		share := float64(dev.Bytes-start) * 8 / (float64(rate) * float64(run) / 1e9)
		t.Logf("batch %d: %.1f%% of the line, %d device calls", batch, 100*share, dev.calls)
		if share < 0.98 {
			t.Errorf("batch %d: the port sent %.1f%% of its line rate while backlogged, want ≥ 98%%", batch, 100*share)
		}
		sw.Close()
	}
}
