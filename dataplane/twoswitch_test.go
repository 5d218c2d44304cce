package dataplane_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// fabric is two switches in one process, a and b, in a line:
// host A ─ a[0] a[1] ─ b[0] b[1] ─ host B, every link a memport pair.
type fabric struct {
	a, b           *dataplane.Switch
	hostA, hostB   *memport.Port
	toA, toB, link [2]*memport.Port // the switch ends: toA[0] is a's port 0, link is a[1]↔b[0]
}

// newFabric builds the two switches on clock: each patches port 0 to port
// 1, a's egress at rate, b's egress at rate/10 with a step marker at k
// bytes, so that b's queue builds and marks.
func newFabric(t *testing.T, clock timestamp.Clock, rate, k int64) *fabric {
	t.Helper()
	f := &fabric{}
	pair := func(x, y string) (*memport.Port, *memport.Port) {
		p, q, err := memport.Pair(x, y, clock, memport.Link{})
		if err != nil {
			t.Fatal(err)
		}
		return p, q
	}
	f.hostA, f.toA[0] = pair("hostA", "a0")
	f.toA[1], f.link[0] = pair("a1", "b0")
	f.toB[1], f.hostB = pair("b1", "hostB")
	f.link[1] = f.toB[1]
	build := func(egress int64, marked bool, devs ...ports.Port) *dataplane.Switch {
		cfg := dataplanetest.Config(2, 1, egress, 1<<20)
		cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
		cfg.Forwarding.NoLearning = true
		if marked {
			step := func(q int) (marking.Marker, error) {
				return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, q)
			}
			cfg.Ports[1].Enqueue = []dataplane.MarkerSpec{{Name: "step", New: step}}
		}
		sw, err := dataplane.New(cfg, devs, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sw.Close() })
		return sw
	}
	f.a = build(rate, false, f.toA[0], f.toA[1])
	f.b = build(rate/10, true, f.link[0], f.toB[1])
	return f
}

// frames returns n ECT(0) frames of size bytes numbered in their UDP
// source port.
func fabricFrames(t *testing.T, n, size int) []*packet.Desc {
	ds := make([]*packet.Desc, n)
	for i := range ds {
		fr := dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, SrcPort: uint16(i)})
		ds[i] = &packet.Desc{Buf: fr, Len: len(fr)}
	}
	return ds
}

// TestTwoSwitchesInVirtualTime: two switches of one process, linked by a
// memport link and stepped on one virtual clock, carry a burst end to
// end: every frame arrives in order, at the times the slower switch's line
// sets, the second switch marks what its queue holds above K, and each
// switch accounts for every packet.
func TestTwoSwitchesInVirtualTime(t *testing.T) {
	const (
		rate = 1_000_000_000 // a's egress; b's is 100 Mbit/s
		n    = 200
		size = 1000
		k    = 20_000 // bytes
	)
	clk := timestamp.NewVirtual(0)
	f := newFabric(t, clk, rate, k)
	if k, err := f.hostA.Transmit(fabricFrames(t, n, size)); k != n || err != nil {
		t.Fatalf("host A sent %d of %d: %v", k, n, err)
	}
	rx := make([]*packet.Desc, 64)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	var got, marked int
	var last int64
	for got < n {
		f.a.Poll()
		f.b.Poll()
		k, _ := f.hostB.Receive(rx)
		for _, d := range rx[:k] {
			if seq := int(binary.BigEndian.Uint16(d.Frame()[34:36])); seq != got {
				t.Fatalf("frame %d arrived as number %d", seq, got)
			}
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			if d.ECN == packet.CE {
				marked++
			}
			got++
			last = d.RxTime
		}
		next := min(f.a.NextEvent(), f.b.NextEvent())
		for _, p := range []*memport.Port{f.toA[0], f.link[0], f.hostB} {
			if at, ok := p.NextArrival(); ok {
				next = min(next, at)
			}
		}
		if next == 1<<63-1 {
			break
		}
		clk.Set(max(next, clk.Now()))
	}
	if got != n {
		t.Fatalf("%d of %d frames reached host B", got, n)
	}
	// The burst reaches b at a's line rate and leaves it at a tenth of
	// that: b's line is busy from the first arrival to the last departure,
	// serving all but what its token bucket (2500 bytes) lets through at
	// once, to within a frame's time.
	const bucket = 2500
	line := int64(size) * 8 * 1e9 / (rate / 10)
	first := int64(size) * 8 * 1e9 / rate // the first frame crosses a's line first
	if want := first + (n*size-bucket)*8*1e9/(rate/10); last < want-line || last > want+line {
		t.Errorf("last frame at host B at %d ns, want %d ± %d (b's line)", last, want, line)
	}
	// a delivers 10 frames for each b sends, so b's queue grows by 0.9
	// frame per frame of a's: it passes K after about k / (0.9·size)
	// arrivals, and every later arrival is marked.
	wantMarked := n - k*10/(9*size) - 1
	if marked < wantMarked-2 || marked > wantMarked+2 {
		t.Errorf("%d of %d frames marked, want about %d (K = %d bytes)", marked, n, wantMarked, k)
	}
	for name, sw := range map[string]*dataplane.Switch{"a": f.a, "b": f.b} {
		if a := sw.Account(); !a.Balanced() || a.Held != 0 {
			t.Errorf("switch %s: %+v, want balanced and nothing held", name, a)
		}
	}
}

// TestTwoSwitchesRun: two switches run at once in one process (each its
// own workers, on the monotonic clock) and carry frames end to end. Under
// -race this checks that they share no state.
func TestTwoSwitchesRun(t *testing.T) {
	const n, size = 1000, 200
	clk := timestamp.NewMonotonic()
	f := newFabric(t, clk, 10_000_000_000, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for _, sw := range []*dataplane.Switch{f.a, f.b} {
		go func() { done <- sw.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()
	ds := fabricFrames(t, n, size)
	for sent := 0; sent < n; {
		k, err := f.hostA.Transmit(ds[sent:])
		if err != nil {
			t.Fatal(err)
		}
		sent += k
	}
	rx := make([]*packet.Desc, 64)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < n && time.Now().Before(deadline); {
		k, _ := f.hostB.Receive(rx)
		got += k
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if got != n {
		t.Errorf("%d of %d frames crossed both switches", got, n)
	}
}
