//go:build linux

package afxdp

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// umemName is the name of the BPF array that holds a UMEM's frames.
const umemName = "ecnsw_umem"

// UMEM is the frame memory AF_XDP sockets receive into and transmit from.
// One UMEM can serve every port of a switch and the switch's own frame
// arena: its sockets share it (XDP_SHARED_UMEM, each socket with its own
// fill and completion ring), so a frame received on one port leaves on
// another without a copy in user space, and the dataplane's descriptors
// point straight into it (Frames).
//
// The memory is an mmapable BPF array with one element per frame, so that
// the ports' XDP program can read a frame to transmit it as an XDP live
// frame (see Port.Transmit). Frames are handed out once, at setup: to each
// socket (its fill ring and TX reserve) and to the dataplane. Afterwards
// frames only change hands one for one (a received frame for a free one),
// so every holder keeps its count.
//
// Close the UMEM after every Port on it and everything holding its frames.
type UMEM struct {
	mem       []byte
	frameSize int
	shift     uint
	frames    *ebpf.Map
	state     []uint8 // per frame: frameFree, frameRx or frameTx; written by the frame's holder

	// txMetaWanted asks the first socket to register the UMEM with XSK TX
	// metadata (a Port with Options.TxStamps); txMeta says it took.
	txMetaWanted bool

	mu     sync.Mutex
	txMeta bool
	next   int   // frames handed out so far
	owner  int   // fd of a bound socket on it that new sockets share it through; -1 when none
	bound  []int // fds of the sockets bound on it
}

// NewUMEM returns a UMEM of frames frames of frameSize bytes (2048 or
// 4096). It needs CAP_BPF (or root) for the array.
func NewUMEM(frames, frameSize int) (*UMEM, error) {
	if frameSize != 2048 && frameSize != 4096 {
		return nil, fmt.Errorf("afxdp: UMEM frame size %d: must be 2048 or 4096", frameSize)
	}
	if frames < MinFrames || frames > maxUMEMFrames {
		return nil, fmt.Errorf("afxdp: UMEM frames %d: must be in [%d, %d]", frames, MinFrames, maxUMEMFrames)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: umemName, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(frameSize),
		MaxEntries: uint32(frames), Flags: unix.BPF_F_MMAPABLE,
	})
	if err != nil {
		return nil, fmt.Errorf("afxdp: create %d-frame UMEM array: %w%s", frames, err, permissionCure(err))
	}
	mem, err := unix.Mmap(m.FD(), 0, frames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("afxdp: mmap %d-byte UMEM: %w", frames*frameSize, err)
	}
	return &UMEM{
		mem: mem, frameSize: frameSize, shift: uint(bits.TrailingZeros(uint(frameSize))),
		frames: m, state: make([]uint8, frames), owner: -1,
	}, nil
}

// NewSwitchUMEM makes the one UMEM of a switch whose ports open on ifaces
// with opts (ifaces[i] with opts[i]) and whose dataplane holds arena
// frames of its own, and points every opts[i] at it. It returns nil, and
// changes nothing, when the options' frame sizes differ or one already
// names a UMEM: nothing is shared then.
func NewSwitchUMEM(ifaces []string, opts []Options, arena int) (*UMEM, error) {
	if len(ifaces) == 0 || len(ifaces) != len(opts) {
		return nil, nil
	}
	size := cmp.Or(opts[0].FrameSize, DefaultFrameSize)
	frames := arena
	for i, o := range opts {
		if cmp.Or(o.FrameSize, DefaultFrameSize) != size || o.UMEM != nil {
			return nil, nil
		}
		nq, err := rxQueueCount(ifaces[i])
		if err != nil {
			return nil, fmt.Errorf("afxdp: %s: %w", ifaces[i], err)
		}
		frames += o.UMEMFrames(nq)
	}
	u, err := NewUMEM(frames, size)
	if err != nil {
		return nil, err
	}
	for i := range opts {
		opts[i].UMEM = u
		u.txMetaWanted = u.txMetaWanted || opts[i].TxStamps
	}
	return u, nil
}

// FrameSize returns the size of a frame in bytes.
func (u *UMEM) FrameSize() int { return u.frameSize }

// Len returns the number of frames.
func (u *UMEM) Len() int { return len(u.state) }

// Free returns the number of frames not yet handed out.
func (u *UMEM) Free() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.state) - u.next
}

// Frames hands out n frames for a caller's own descriptors (the
// dataplane's arena): each is the usable part of one frame, from the
// headroom to the frame's end, where received frames start too. The
// frames stay in the UMEM: Port.Transmit sends them without a copy, and
// Port.Receive exchanges them for received ones.
func (u *UMEM) Frames(n int) ([][]byte, error) {
	first, err := u.take(n)
	if err != nil {
		return nil, err
	}
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = u.buf(first + uint64(i)<<u.shift)
	}
	return bufs, nil
}

// take hands out n consecutive frames and returns the address of the first.
func (u *UMEM) take(n int) (uint64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if n < 0 || u.next+n > len(u.state) {
		return 0, fmt.Errorf("afxdp: UMEM has %d of its %d frames left, %d asked for: make it larger",
			len(u.state)-u.next, len(u.state), n)
	}
	first := uint64(u.next) << u.shift
	u.next += n
	return first, nil
}

// buf returns the usable part of the frame at chunk address a.
func (u *UMEM) buf(a uint64) []byte {
	end := a + uint64(u.frameSize)
	return u.mem[a+Headroom : end : end]
}

// chunk returns the frame address of b when b is the usable part of one of
// this UMEM's frames (it starts at a frame's headroom), and false otherwise.
func (u *UMEM) chunk(b []byte) (uint64, bool) {
	off, ok := offsetIn(u.mem, b)
	if !ok || off&uint64(u.frameSize-1) != Headroom {
		return 0, false
	}
	return off - Headroom, true
}

// unbind forgets a socket that is closing, so that no later socket shares
// the UMEM through its (soon reused) descriptor.
func (u *UMEM) unbind(fd int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, f := range u.bound {
		if f == fd {
			u.bound = append(u.bound[:i], u.bound[i+1:]...)
			break
		}
	}
	u.owner = -1
	if len(u.bound) > 0 {
		u.owner = u.bound[0]
	}
}

// Close unmaps the memory and closes the array. Sockets still bound on the
// UMEM keep the kernel's reference to its pages, but nothing may touch a
// frame after Close.
func (u *UMEM) Close() error {
	var errs []error
	if u.mem != nil {
		errs = append(errs, unix.Munmap(u.mem))
		u.mem = nil
	}
	if u.frames != nil {
		errs = append(errs, u.frames.Close())
		u.frames = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("afxdp: close UMEM: %w", err)
	}
	return nil
}
