// Package ports defines how the switch moves frames in and out: the Port
// interface, shaped like wireguard-go's tun.Device — batched, caller-owned
// descriptors, few methods. Implementations live in sub-packages: memport (a
// link of a given rate in virtual time) and afxdp (AF_XDP sockets).
//
// Extra capabilities are small optional interfaces checked once at setup.
package ports

import (
	"errors"

	"github.com/ecnswitch/ecnswitch/packet"
)

// BatchSize is the number of frames the dataplane moves per Receive or
// Transmit call. Ports accept any batch length; this is the size they are
// tuned for.
const BatchSize = 64

// ErrClosed is returned by a port used after Close.
var ErrClosed = errors.New("port closed")

// Port moves batches of frames between the switch and a link.
//
// A descriptor names a buffer (Desc.Buf) and the frame in it. A port may
// copy a frame into or out of the caller's buffer, or exchange buffers
// with the caller: an AF_XDP port that shares its UMEM with the switch
// hands a received frame over in the buffer the NIC wrote it to and takes
// the caller's buffer for a later one, and sends a frame from the caller's
// own buffer, giving the caller a free one in exchange (memport's
// Link.Swap does the same in memory). Either way, when a call returns the
// caller owns every ds[i].Buf as it is then, which has the length the one
// it replaced had, and nothing else: it must not keep a reference to a
// buffer it handed in, and the port keeps none to what it handed out.
// A Port is used by one goroutine at a time (its owning worker).
type Port interface {
	// Name returns the port's name, e.g. the interface it drives.
	Name() string

	// Receive fills up to len(ds) descriptors with received frames, each
	// copied into ds[i].Buf or handed over in a buffer of the port's in
	// exchange for it, and sets ds[i].Len and, when the port timestamps
	// in hardware, ds[i].RxTime (else it leaves RxTime zero). It returns
	// the number of descriptors filled, the first n; 0 with a nil error
	// means nothing was waiting. Frames larger than a descriptor's Buf
	// are dropped and counted by the port.
	Receive(ds []*packet.Desc) (int, error)

	// Transmit queues ds[i].Frame() for transmission, in order, copying
	// it or taking ds[i].Buf and setting a free buffer in its place, and
	// returns how many it took, the first n. It may take fewer than
	// offered while it still has room (one call of XDP live frames sends
	// at most 256): the caller offers the rest again. A call that takes
	// none means the device pushes back (its TX ring is full): the caller
	// keeps the rest and retries later. Transmit also reaps completions
	// of earlier transmissions.
	Transmit(ds []*packet.Desc) (int, error)

	// Close releases the port's resources. Further calls return ErrClosed.
	Close() error
}

// Waiter is implemented by ports that can block until frames may be
// received or TX room frees up. Poll-mode workers use it to sleep when idle
// instead of spinning.
type Waiter interface {
	// Wait blocks for at most timeoutNs nanoseconds or until the port has
	// work, and reports whether it has.
	Wait(timeoutNs int64) (bool, error)
}

// FDPoller is implemented by ports whose readiness shows on file
// descriptors, so that a worker owning several ports can sleep on all of
// them in one poll rather than on each in turn.
type FDPoller interface {
	// PollFDs returns the descriptors that become readable when frames
	// arrive. They stay valid until Close.
	PollFDs() []int
}

// Pender is implemented by ports that can hold frames Transmit took
// before the device has them: an AF_XDP socket in copy mode sends only
// when kicked, and stops when the device pushes back. While Pending is
// true the caller must call Transmit again, Transmit(nil) if it has
// nothing new, or the frames wait for the next batch.
type Pender interface {
	Pending() bool
}

// MaxFramer is implemented by ports that cannot transmit every frame the
// switch may hold: an AF_XDP socket sends at most its usable frame, a link
// its MTU. The dataplane drops larger frames, with a reason, rather than
// handing them over to be lost uncounted.
type MaxFramer interface {
	// MaxFrame returns the largest frame, in bytes, Transmit can send.
	MaxFrame() int
}

// RxStamper is implemented by ports that can stamp received frames in
// hardware. Receive then sets RxTime to the frame's hardware stamp taken
// onto CLOCK_MONOTONIC, in ns (or left on the PHC RxClock names, where a
// load tester asked for that: afxdp.Options.RxStampRaw), and leaves it
// zero on frames without one;
// the dataplane puts the stamps on its own clock and stamps the rest
// itself. A port that is not an RxStamper and sets RxTime (memport) sets
// it on the dataplane's clock.
type RxStamper interface {
	// RxClock names the clock the stamps were read from, e.g. "phc0";
	// "" when the port has no hardware stamps after all.
	RxClock() string
}

// TxStamper is implemented by ports that stamp transmitted frames when
// the device completes them (XSK TX metadata).
type TxStamper interface {
	// TxCompletions returns how many transmitted frames completed with a
	// stamp, and the mean and largest time, in ns, from Transmit taking
	// a frame to its completion stamp.
	TxCompletions() (stamped uint64, meanNS, maxNS int64)
}

// Stats are a port's own counters: what happened below the dataplane.
// Frames that reached the port but never the switch are RxOversize +
// RxDropped, so the frames sent to the port are the switch's rx_packets
// plus those.
type Stats struct {
	RxPackets  uint64 `json:"rx_packets"` // frames handed to Receive's caller
	RxBytes    uint64 `json:"rx_bytes"`
	RxOversize uint64 `json:"rx_oversize"` // frames dropped because they did not fit a frame or descriptor
	RxDropped  uint64 `json:"rx_dropped"`  // frames the kernel or link dropped before Receive (ring full, no fill frame)
	// RxRingFull is the part of RxDropped lost because the RX ring was
	// full. An AF_XDP port keeps at most its fill ring's size of frames on
	// its fill and RX rings together, so with an RX ring at least that
	// large a switch that receives too slowly shows as RxFillEmpty.
	RxRingFull uint64 `json:"rx_ring_full"`
	// RxFillEmpty counts the times the kernel found no free frame on the
	// fill ring: the switch had not yet taken enough of the frames it was
	// sent to hand their places back, or had no free frames. The frames
	// lost then are in RxDropped.
	RxFillEmpty uint64 `json:"rx_fill_ring_empty"`
	TxPackets   uint64 `json:"tx_packets"` // frames taken by Transmit
	TxBytes     uint64 `json:"tx_bytes"`
	TxCompleted uint64 `json:"tx_completed"` // frames the link reported sent
	TxErrors    uint64 `json:"tx_errors"`    // frames Transmit could not send for an error, or the device dropped
	// Violations counts frames the kernel handed back in a state they
	// cannot be in (the same frame twice, say); it must stay 0.
	Violations uint64 `json:"violations"`
	// LiveFrames is the part of TxPackets sent as XDP live frames, and
	// LiveFallbacks the times the device refused some and Transmit went
	// back to the socket for a while.
	LiveFrames    uint64 `json:"live_frames"`
	LiveFallbacks uint64 `json:"live_fallbacks"`
}

// StatsReporter is implemented by ports that keep their own counters.
type StatsReporter interface {
	Stats() Stats
}
