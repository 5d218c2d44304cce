package memport

import (
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

func descs(n, size int) []*packet.Desc {
	ds := make([]*packet.Desc, n)
	for i := range ds {
		ds[i] = &packet.Desc{Buf: make([]byte, 2048), Len: size}
		ds[i].Buf[0] = byte(i)
	}
	return ds
}

func TestRateAndDelay(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, err := Pair("a", "b", clk, Link{Rate: 1_000_000_000, Delay: 5_000, Overhead: 24})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := a.Transmit(descs(3, 1476)); n != 3 || err != nil {
		t.Fatalf("Transmit = %d, %v", n, err)
	}
	// (1476+24)·8 bit at 1 Gbit/s = 12 µs per frame, then 5 µs of propagation.
	want := []int64{17_000, 29_000, 41_000}
	rx := descs(4, 0)
	for i, at := range want {
		clk.Set(at - 1)
		if n, _ := b.Receive(rx); n != 0 {
			t.Fatalf("frame %d received at %d ns, before its arrival %d ns", i, at-1, at)
		}
		clk.Set(at)
		n, _ := b.Receive(rx)
		if n != 1 || rx[0].RxTime != at || rx[0].Buf[0] != byte(i) || rx[0].Len != 1476 {
			t.Fatalf("at %d ns: n=%d RxTime=%d first byte=%d len=%d", at, n, rx[0].RxTime, rx[0].Buf[0], rx[0].Len)
		}
	}
	if got := a.Stats().TxPackets; got != 3 {
		t.Errorf("TxPackets = %d, want 3", got)
	}
}

func TestIdleLinkRestartsSerialization(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, _ := Pair("a", "b", clk, Link{Rate: 8_000_000_000}) // 1 byte/ns
	a.Transmit(descs(1, 1000))
	clk.Set(1_000_000)
	a.Transmit(descs(1, 1000))
	if at, ok := b.NextArrival(); !ok || at != 1000 {
		t.Fatalf("first arrival %d, want 1000", at)
	}
	rx := descs(2, 0)
	b.Receive(rx[:1])
	if at, _ := b.NextArrival(); at != 1_001_000 {
		t.Fatalf("second frame arrives at %d; a link idle since 1 µs must start serializing at send time (1 ms) → 1001000", at)
	}
}

func TestCapacityBackpressure(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, _ := Pair("a", "b", clk, Link{Capacity: 4})
	if n, _ := a.Transmit(descs(6, 64)); n != 4 {
		t.Fatalf("Transmit took %d of 6 with capacity 4", n)
	}
	rx := descs(8, 0)
	if n, _ := b.Receive(rx); n != 4 {
		t.Fatalf("received %d, want 4", n)
	}
	if n, _ := a.Transmit(descs(2, 64)); n != 2 {
		t.Fatalf("after draining, Transmit took %d of 2", n)
	}
}

func TestOversizeCountedNotDelivered(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, _ := Pair("a", "b", clk, Link{})
	small := &packet.Desc{Buf: make([]byte, 100)}
	a.Transmit(descs(1, 1500))
	if n, _ := b.Receive([]*packet.Desc{small}); n != 0 {
		t.Fatal("a 1500-byte frame was copied into a 100-byte buffer")
	}
	if got := b.Stats().RxOversize; got != 1 {
		t.Fatalf("RxOversize = %d, want 1", got)
	}
}

func TestClosed(t *testing.T) {
	a, _, _ := Pair("a", "b", timestamp.NewVirtual(0), Link{})
	a.Close()
	if _, err := a.Transmit(descs(1, 64)); err == nil {
		t.Fatal("Transmit on a closed port succeeded")
	}
}

func TestNoAllocs(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, _ := Pair("a", "b", clk, Link{Rate: 10_000_000_000})
	tx, rx := descs(32, 1500), descs(32, 0)
	allocs := testing.AllocsPerRun(100, func() {
		a.Transmit(tx)
		clk.Advance(time.Millisecond)
		b.Receive(rx)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch, want 0", allocs)
	}
}

func TestBadLink(t *testing.T) {
	for _, l := range []Link{{Rate: -1}, {Delay: -1}, {Capacity: 3}, {FrameSize: 10}} {
		if _, _, err := Pair("a", "b", timestamp.NewVirtual(0), l); err == nil {
			t.Errorf("Pair(%+v) accepted", l)
		}
	}
}

// With Swap a frame crosses the link in the buffer it was sent from: the
// sender gets a free buffer in exchange, and the receiver gets the
// sender's buffer for its own. A buffer of another size is copied.
func TestSwap(t *testing.T) {
	clk := timestamp.NewVirtual(0)
	a, b, err := Pair("a", "b", clk, Link{Swap: true})
	if err != nil {
		t.Fatal(err)
	}
	tx := descs(2, 100)
	sent := tx[0].Buf
	odd := &packet.Desc{Buf: make([]byte, 4096), Len: 100}
	odd.Buf[0] = 2
	tx = append(tx, odd)
	if n, err := a.Transmit(tx); n != 3 || err != nil {
		t.Fatalf("Transmit = %d, %v", n, err)
	}
	if &tx[0].Buf[0] == &sent[0] || len(tx[0].Buf) != 2048 {
		t.Error("the sender kept its buffer: want a free one of the link's frame size in exchange")
	}
	if len(odd.Buf) != 4096 {
		t.Error("a buffer of another size was exchanged")
	}
	rx := descs(3, 0)
	mine := rx[0].Buf
	if n, _ := b.Receive(rx); n != 3 {
		t.Fatalf("received %d", n)
	}
	if &rx[0].Buf[0] != &sent[0] || rx[0].Len != 100 || rx[0].Buf[0] != 0 || rx[1].Buf[0] != 1 || rx[2].Buf[0] != 2 {
		t.Error("the receiver did not get the frames, the first in the sender's buffer")
	}
	if &rx[0].Buf[0] == &mine[0] {
		t.Error("the receiver kept its buffer")
	}
	if a.Swapped() != 2 || b.Swapped() != 3 {
		t.Errorf("swapped %d and %d, want 2 and 3", a.Swapped(), b.Swapped())
	}
	// The receiver's buffer is the link's now, and goes out with a later
	// frame: nothing is lost or shared.
	tx2 := descs(1, 50)
	b.Transmit(tx2)
	if n, _ := a.Receive(descs(1, 0)); n != 1 {
		t.Fatal("the link lost its way back")
	}
}
