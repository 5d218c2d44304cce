package afxdp

import (
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
)

// zeroCopyDouble is a port whose driver, like a zero-copy NIC's, took
// every fill frame into its hardware RX ring and keeps them there, and
// whose last transmitted frames complete after a few kicks.
type zeroCopyDouble struct {
	kicks, inFlight int // TX frames complete at the kicks-th kick
	calls           int
}

func (d *zeroCopyDouble) Transmit(ds []*packet.Desc) (int, error) {
	if d.kicks--; d.kicks <= 0 {
		d.inFlight = 0
	}
	return len(ds), nil
}

func (d *zeroCopyDouble) Frames() FrameAccount {
	d.calls++
	// 64 frames: 32 free, 32 taken by the driver, and those in flight
	// between the TX and completion rings.
	return FrameAccount{Total: 64 + d.inFlight, Free: 32, Driver: 32}
}

// TestSettleZeroCopy: the fill frames a zero-copy driver keeps are at
// rest, so settling such a port ends as soon as its transmitted frames
// have completed, not at the timeout.
func TestSettleZeroCopy(t *testing.T) {
	for _, kicks := range []int{1, 3} {
		d := &zeroCopyDouble{kicks: kicks, inFlight: 8}
		a := settle(d, time.Hour)
		if !a.AtRest() || d.calls != kicks {
			t.Errorf("TX completing at kick %d: settled at %+v after %d looks; want at rest after %d", kicks, a, d.calls, kicks)
		}
	}
}

// newTestXsk returns a socket of n frames over rings in plain memory,
// whose indices the test moves as the kernel would.
func newTestXsk(n int) (*xsk, *[8]uint32) {
	var idx [8]uint32 // producer, consumer of fill, rx, tx, comp
	s := &xsk{frames: n}
	for i, r := range []*ring{&s.fill.ring, &s.rx.ring, &s.tx.ring, &s.comp.ring} {
		r.producer, r.consumer = &idx[2*i], &idx[2*i+1]
		r.size, r.mask = 64, 63
	}
	return s, &idx
}

// TestAccountDriverFrames: a socket reports as Driver the frames the
// kernel took from its fill ring and has not put on its RX ring, as a
// zero-copy driver holds them, across the indices' wrap.
func TestAccountDriverFrames(t *testing.T) {
	const start = ^uint32(0) - 5 // the indices wrap during the test
	s, idx := newTestXsk(64)
	fillProd, fillCons, rxProd, rxCons := &idx[0], &idx[1], &idx[2], &idx[3]
	*fillProd, *fillCons, *rxProd, *rxCons = start, start, start, start
	s.fill.cachedProd, s.rx.cachedCons = start, start

	// The socket puts 32 frames on the fill ring.
	s.fill.cachedProd += 32
	*fillProd = s.fill.cachedProd
	s.nfree = 32
	if a := accountOf(s); a.Fill != 32 || a.Driver != 0 || !a.AtRest() {
		t.Fatalf("32 on the fill ring: %+v", a)
	}
	// The driver takes them all into its hardware ring: at rest still.
	*fillCons += 32
	if a := accountOf(s); a.Fill != 0 || a.Driver != 32 || a.InKernel() != 32 || !a.AtRest() {
		t.Fatalf("32 taken by the driver: %+v", a)
	}
	// 10 arrive on the RX ring, and the socket receives 4 of them: they
	// go to the caller for 4 of its frames, which go on the fill ring.
	*rxProd += 10
	s.rx.cachedCons += 4
	s.fill.cachedProd += 4
	*fillProd = s.fill.cachedProd
	if a := accountOf(s); a.Rx != 6 || a.Fill != 4 || a.Driver != 22 || !a.AtRest() {
		t.Fatalf("10 received, 4 taken: %+v", a)
	}
	// One frame the kernel holds that no ring explains: not at rest.
	s.nfree--
	if a := accountOf(s); a.AtRest() {
		t.Fatalf("a frame missing: %+v at rest", a)
	}
}

func accountOf(s *xsk) FrameAccount {
	var a FrameAccount
	s.account(&a)
	return a
}
