//go:build !linux

package afxdp

import (
	"fmt"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
)

var (
	_ ports.Port          = (*Port)(nil)
	_ ports.Waiter        = (*Port)(nil)
	_ ports.StatsReporter = (*Port)(nil)
)

// ProgramName is the name of ecnswitch's XDP program.
const ProgramName = "ecnsw_redirect"

// UMEM is AF_XDP frame memory; AF_XDP exists only on Linux.
type UMEM struct{}

// NewUMEM reports ErrNotSupported: AF_XDP is Linux-only.
func NewUMEM(frames, frameSize int) (*UMEM, error) {
	return nil, fmt.Errorf("afxdp: UMEM: AF_XDP needs Linux: %w", ErrNotSupported)
}

// NewSwitchUMEM returns nil: AF_XDP is Linux-only.
func NewSwitchUMEM(ifaces []string, opts []Options, arena int) (*UMEM, error) { return nil, nil }

// FrameSize returns 0.
func (u *UMEM) FrameSize() int { return 0 }

// Frames reports ErrNotSupported.
func (u *UMEM) Frames(n int) ([][]byte, error) { return nil, ErrNotSupported }

// Close reports ErrNotSupported.
func (u *UMEM) Close() error { return ErrNotSupported }

// Port is an AF_XDP port; AF_XDP exists only on Linux, so here every
// method reports ErrNotSupported.
type Port struct{}

// Open reports ErrNotSupported: AF_XDP is Linux-only.
func Open(ifname string, opts Options) (*Port, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("afxdp: open %s: AF_XDP needs Linux: %w", ifname, ErrNotSupported)
}

// RxQueues reports ErrNotSupported: AF_XDP is Linux-only.
func RxQueues(ifname string) (int, error) { return 0, ErrNotSupported }

// Name returns "".
func (p *Port) Name() string { return "" }

// Info returns the zero Info.
func (p *Port) Info() Info { return Info{} }

// MaxFrame returns 0: AF_XDP is Linux-only.
func (p *Port) MaxFrame() int { return 0 }

// Receive reports ErrNotSupported.
func (p *Port) Receive([]*packet.Desc) (int, error) { return 0, ErrNotSupported }

// Transmit reports ErrNotSupported.
func (p *Port) Transmit([]*packet.Desc) (int, error) { return 0, ErrNotSupported }

// LiveFrames returns 0.
func (p *Port) LiveFrames() uint64 { return 0 }

// Pending returns false.
func (p *Port) Pending() bool { return false }

// Wait reports ErrNotSupported.
func (p *Port) Wait(int64) (bool, error) { return false, ErrNotSupported }

// RxClock returns "": no hardware stamps outside Linux.
func (p *Port) RxClock() string { return "" }

// TxCompletions returns zeros.
func (p *Port) TxCompletions() (uint64, int64, int64) { return 0, 0, 0 }

// TxStamps returns zero counters.
func (p *Port) TxStamps() TxStampStats { return TxStampStats{} }

// RxStamps returns zero counters.
func (p *Port) RxStamps() RxStampStats { return RxStampStats{} }

// Stats returns zero counters.
func (p *Port) Stats() ports.Stats { return ports.Stats{} }

// QueueStats reports ErrNotSupported.
func (p *Port) QueueStats() ([]QueueStats, error) { return nil, ErrNotSupported }

// Frames returns the zero FrameAccount.
func (p *Port) Frames() FrameAccount { return FrameAccount{} }

// Settle returns an empty FrameAccount.
func (p *Port) Settle(time.Duration) FrameAccount { return FrameAccount{} }

// Close reports ErrNotSupported.
func (p *Port) Close() error { return ErrNotSupported }
