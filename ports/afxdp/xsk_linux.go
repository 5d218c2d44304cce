//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
	"golang.org/x/sys/unix"
)

// ring is the userspace half of one mmapped AF_XDP ring: the shared
// producer, consumer and flags words, and cached copies of both indices so
// that the shared cache lines are touched about once per batch.
//
// On a ring we produce (fill, TX), cachedCons is the kernel's consumer
// index plus the ring size, so cachedCons − cachedProd is the free room.
// On a ring we consume (RX, completion), cachedProd − cachedCons is the
// number of entries ready. The other side's index is read with an atomic
// load (acquire) and ours published with an atomic store (release) after
// the entries are written or read, as af_xdp.rst's barriers require.
type ring struct {
	mem        []byte // the mapping, kept for munmap
	producer   *uint32
	consumer   *uint32
	flags      *uint32
	size, mask uint32
	cachedProd uint32
	cachedCons uint32
}

// room returns how many entries, up to n, may be produced.
func (r *ring) room(n uint32) uint32 {
	free := r.cachedCons - r.cachedProd
	if free < n {
		r.cachedCons = atomic.LoadUint32(r.consumer) + r.size
		free = r.cachedCons - r.cachedProd
	}
	return min(free, n)
}

// publish releases every entry produced so far to the kernel.
func (r *ring) publish() { atomic.StoreUint32(r.producer, r.cachedProd) }

// ready returns how many entries, up to n, may be consumed.
func (r *ring) ready(n uint32) uint32 {
	avail := r.cachedProd - r.cachedCons
	if avail == 0 {
		r.cachedProd = atomic.LoadUint32(r.producer)
		avail = r.cachedProd - r.cachedCons
	}
	return min(avail, n)
}

// release hands every entry consumed so far back to the kernel.
func (r *ring) release() { atomic.StoreUint32(r.consumer, r.cachedCons) }

func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// produced is the number of entries we produced that the kernel has not
// consumed yet; consumable the number it produced that we have not.
func (r *ring) produced() uint32   { return r.cachedProd - atomic.LoadUint32(r.consumer) }
func (r *ring) consumable() uint32 { return atomic.LoadUint32(r.producer) - r.cachedCons }

type addrRing struct {
	ring
	addrs []uint64
}

type descRing struct {
	ring
	descs []unix.XDPDesc
}

// Frame states, one byte per UMEM frame (UMEM.state). A frame is held in
// user space (frameFree: on a socket's free stack or in a caller's
// descriptor), on a fill or RX ring (frameRx), or on a TX or completion
// ring (frameTx). Every hand-back from the kernel and every frame a caller
// offers in exchange is checked against this.
const (
	frameFree uint8 = iota
	frameRx
	frameTx
)

// xsk is one AF_XDP socket bound to one (interface, queue) on a UMEM it
// may share with other sockets. It owns a reserve of the UMEM's frames: on
// its free stack, its fill and RX rings, its TX and completion rings. It is
// owned by one goroutine; only the counters are read by others.
type xsk struct {
	fd       int
	queue    int
	umem     *UMEM
	usable   uint32 // frame size − Headroom
	zeroCopy bool
	shared   bool      // bound with XDP_SHARED_UMEM on another socket's UMEM
	rxMeta   bool      // the program puts a hardware stamp in front of every frame
	txst     *txStamps // completion stamps of transmitted frames; nil for none
	txBudget int
	frames   int // frames in this socket's reserve

	fill, comp addrRing
	rx, tx     descRing

	free    []uint64 // LIFO of free frame addresses (frame starts), free[:nfree]
	nfree   int
	rxQuota uint32 // frames kept on the fill and RX rings
	rxOwned uint32 // frames now on the fill and RX rings

	txRoom   uint32 // TX slots usable in the current Transmit
	txQueued uint32 // descriptors written in the current Transmit
	txBytesQ uint64 // their bytes

	stall kickGate // copy mode: holds sendto back after one that moved nothing

	lastErr *SyscallError // the last error returned, reused while it repeats

	violations atomic.Uint64
	rxPackets  atomic.Uint64
	rxBytes    atomic.Uint64
	rxOversize atomic.Uint64
	rxCopied   atomic.Uint64
	txPackets  atomic.Uint64
	txBytes    atomic.Uint64
	txCopied   atomic.Uint64
	txDone     atomic.Uint64
	txErrors   atomic.Uint64
}

func (s *xsk) push(addr uint64) { s.free[s.nfree] = addr; s.nfree++ }
func (s *xsk) pop() uint64      { s.nfree--; return s.free[s.nfree] }

// frameIndex returns the index of the frame holding addr, or −1 if addr
// lies outside the UMEM.
func (s *xsk) frameIndex(addr uint64) int {
	i := addr >> s.umem.shift
	if i >= uint64(len(s.umem.state)) {
		return -1
	}
	return int(i)
}

// offered returns the frame address of a caller's buffer when it is a
// frame of this socket's UMEM held in user space, so that the socket may
// take it in exchange for one of its own.
func (s *xsk) offered(b []byte) (uint64, bool) {
	a, ok := s.umem.chunk(b)
	if !ok {
		return 0, false
	}
	if s.umem.state[a>>s.umem.shift] != frameFree {
		s.violations.Add(1) // a caller offered a frame that is on a ring
		return 0, false
	}
	return a, true
}

// errno wraps a data-path errno as *SyscallError, reusing the previous
// value while the same errno repeats so a worker retrying against a downed
// link does not allocate on every call.
func (s *xsk) errno(op string, e unix.Errno) error {
	if s.lastErr == nil || s.lastErr.Err != e || s.lastErr.Op != op {
		s.lastErr = &SyscallError{Op: op, Queue: s.queue, Err: e}
	}
	return s.lastErr
}

// SyscallError is a failed data-path system call on one queue's socket,
// e.g. sendto returning ENETDOWN when the link is down or ENXIO when the
// device is gone. errors.Is matches the errno.
type SyscallError struct {
	Op    string // "sendto", "recvfrom", "ppoll", "bpf"
	Queue int
	Err   error
}

// Error returns "afxdp: queue Q: OP: ERRNO".
func (e *SyscallError) Error() string {
	return fmt.Sprintf("afxdp: queue %d: %s: %v", e.Queue, e.Op, e.Err)
}

// Unwrap returns the errno.
func (e *SyscallError) Unwrap() error { return e.Err }

// receive hands up to len(ds) frames off the RX ring to the caller, then
// refills the fill ring. A received frame is exchanged for the frame the
// caller's descriptor holds when that is a free frame of the same UMEM
// (ds[i].Buf then points into the received frame: no copy); otherwise the
// frame is copied into ds[i].Buf.
func (s *xsk) receive(ds []*packet.Desc) (int, error) {
	n := 0
	avail := s.rx.ready(uint32(len(ds)))
	if avail > 0 {
		var bytes, oversize, copied uint64
		cons := s.rx.cachedCons
		state, shift := s.umem.state, s.umem.shift
		for i := range avail {
			d := s.rx.descs[(cons+i)&s.rx.mask]
			fi := s.frameIndex(d.Addr)
			if fi < 0 || state[fi] != frameRx {
				s.violations.Add(1)
				continue
			}
			s.rxOwned--
			chunk := uint64(fi) << shift
			end := d.Addr + uint64(d.Len)
			state[fi] = frameFree
			if end > chunk+uint64(s.umem.frameSize) {
				s.violations.Add(1) // data beyond its frame: never trust it
				s.push(chunk)
				continue
			}
			dst := ds[n]
			if a, ok := s.offered(dst.Buf); ok && d.Addr == chunk+Headroom {
				s.push(a)
				dst.Buf = s.umem.buf(chunk)
				dst.Len = int(d.Len)
			} else if int(d.Len) <= len(dst.Buf) {
				dst.Len = copy(dst.Buf, s.umem.mem[d.Addr:end])
				s.push(chunk)
				copied++
			} else {
				oversize++
				s.push(chunk)
				continue
			}
			dst.RxTime = 0
			if s.rxMeta && d.Addr >= chunk+rxMetaLen {
				dst.RxTime = readStamp(s.umem.mem, d.Addr)
			}
			bytes += uint64(d.Len)
			n++
		}
		s.rx.cachedCons += avail
		s.rx.release()
		if n > 0 {
			s.rxPackets.Add(uint64(n))
			s.rxBytes.Add(bytes)
		}
		if oversize > 0 {
			s.rxOversize.Add(oversize)
		}
		if copied > 0 {
			s.rxCopied.Add(copied)
		}
	}
	return n, s.refill()
}

// refill tops the fill ring up to rxQuota frames and wakes the driver if
// it asked for it (need-wakeup on the fill ring, zero-copy drivers).
func (s *xsk) refill() error {
	want := min(s.rxQuota-s.rxOwned, uint32(s.nfree))
	if want > 0 {
		n := s.fill.room(want)
		prod := s.fill.cachedProd
		for i := range n {
			a := s.pop()
			s.umem.state[a>>s.umem.shift] = frameRx
			s.fill.addrs[(prod+i)&s.fill.mask] = a
		}
		if n > 0 {
			s.fill.cachedProd += n
			s.fill.publish()
			s.rxOwned += n
		}
	}
	if s.fill.needWakeup() {
		_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENOBUFS:
		default:
			return s.errno("recvfrom", e)
		}
	}
	return nil
}

// reap moves completed TX frames from the completion ring to the free stack.
func (s *xsk) reap() {
	n := s.comp.ready(s.comp.size)
	if n == 0 {
		return
	}
	cons := s.comp.cachedCons
	for i := range n {
		fi := s.frameIndex(s.comp.addrs[(cons+i)&s.comp.mask])
		if fi < 0 || s.umem.state[fi] != frameTx {
			s.violations.Add(1)
			continue
		}
		s.umem.state[fi] = frameFree
		if s.txst != nil {
			s.txst.complete(s.umem.mem, s.comp.addrs[(cons+i)&s.comp.mask], fi)
		}
		s.push(uint64(fi) << s.umem.shift)
	}
	s.comp.cachedCons += n
	s.comp.release()
	s.txDone.Add(uint64(n))
}

// txBegin reaps completions and computes how many frames this Transmit
// may queue: TX ring room and free frames, whichever is less.
func (s *xsk) txBegin() {
	s.reap()
	s.txRoom = s.tx.room(min(s.tx.size, uint32(s.nfree)))
	s.txQueued, s.txBytesQ = 0, 0
}

// txPut writes one TX descriptor. When d.Buf is a free frame of the
// socket's UMEM, that frame goes on the TX ring and d gets a frame of the
// socket's reserve in exchange (no copy); otherwise the frame is copied
// into one of the reserve's. It reports false when the ring or the
// reserve is exhausted. A frame larger than the usable frame is dropped
// and counted in TxErrors.
func (s *xsk) txPut(d *packet.Desc) bool {
	if s.txQueued == s.txRoom {
		return false
	}
	if d.Len < 0 || d.Len > int(s.usable) || d.Len > len(d.Buf) {
		s.txErrors.Add(1)
		return true
	}
	a := s.pop()
	if o, ok := s.offered(d.Buf); ok {
		d.Buf, a = s.umem.buf(a), o
	} else {
		copy(s.umem.mem[a+Headroom:a+Headroom+uint64(d.Len)], d.Buf[:d.Len])
		s.txCopied.Add(1)
	}
	s.umem.state[a>>s.umem.shift] = frameTx
	desc := unix.XDPDesc{Addr: a + Headroom, Len: uint32(d.Len)}
	if s.txst != nil {
		s.txst.request(s.umem.mem, desc.Addr, int(a>>s.umem.shift))
		desc.Options = unix.XDP_TX_METADATA
	}
	s.tx.descs[(s.tx.cachedProd+s.txQueued)&s.tx.mask] = desc
	s.txQueued++
	s.txBytesQ += uint64(d.Len)
	return true
}

// txFlush publishes the descriptors txPut wrote and kicks the kernel.
func (s *xsk) txFlush() error {
	if s.txQueued > 0 {
		s.tx.cachedProd += s.txQueued
		s.tx.publish()
		s.txPackets.Add(uint64(s.txQueued))
		s.txBytes.Add(s.txBytesQ)
		s.txQueued, s.txBytesQ = 0, 0
	}
	return s.kick()
}

// kick drives the TX ring. In copy mode a sendto moves at most the TX
// budget of descriptors and returns EAGAIN while more remain, and nothing
// else moves copy-mode TX, so kick keeps calling it until the ring is
// drained or the kernel stops making progress (completion ring full,
// device busy); the next Transmit or Wait resumes from there. In
// zero-copy mode one sendto wakes the driver, and only when it set
// XDP_RING_NEED_WAKEUP (copy mode keeps that flag set; kick does not rely
// on it there). The sendto is non-blocking (MSG_DONTWAIT), so it is a raw
// system call: the worker keeps its P.
//
// A copy-mode sendto that stops short of the kernel's batch with frames
// left leaves the socket stalled (see kickGate), and kick makes no system
// call until the stall is over.
func (s *xsk) kick() error {
	if s.tx.produced() == 0 {
		return nil
	}
	if !s.zeroCopy && s.stall.on && !s.stall.over(atomic.LoadUint32(s.comp.producer), time.Now()) {
		return nil
	}
	s.stall.on = false
	for s.tx.produced() != 0 {
		if s.zeroCopy && !s.tx.needWakeup() {
			return nil // the driver is running and will drain the ring itself
		}
		before := atomic.LoadUint32(s.tx.consumer)
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENOBUFS:
		default:
			return s.errno("sendto", e)
		}
		s.reap() // free completion slots, or the kernel stops on a full completion ring
		if s.zeroCopy {
			return nil
		}
		if after := atomic.LoadUint32(s.tx.consumer); after-before < kickBatch && s.tx.produced() != 0 {
			s.stall.begin(after, atomic.LoadUint32(s.comp.producer), time.Now())
			return nil
		}
	}
	return nil
}

// probe makes one sendto whatever the rings hold and the stall gate says,
// to learn whether the link takes frames again (sendto fails with
// ENETDOWN while it is administratively down); a sendto that succeeds
// also moves what the TX ring holds. It returns the errno as kick does.
func (s *xsk) probe() error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENOBUFS:
		s.stall.on = false
		s.reap()
		return nil
	}
	return s.errno("sendto", e)
}

// kickGate decides when a stalled copy-mode socket is worth another
// sendto. A sendto stops short of its batch when the socket's send buffer
// is full of skbs the device has not freed yet (each posts its completion
// as it is freed, so room comes back a frame at a time) or when the
// device pushes back (veth: its peer's ring is full, and the queue wakes
// when the peer's NAPI drains it, which the socket cannot see). Calling
// again at once then costs a system call for a frame or none: with the
// peer kit's sink on another core, ecnswitch made 3.7 frames per sendto
// where OVS, which kicks once per batch, made 20. So a stalled socket
// waits until kickBatch frames have completed (or all it had in flight,
// if fewer), or until stallRetry has passed.
type kickGate struct {
	on    bool
	comp  uint32 // the completion ring's producer index at the stall
	want  uint32 // completions to wait for; 0: only the retry time
	since time.Time
}

const (
	kickBatch  = 32 // the kernel's copy-mode TX batch per sendto (net/xdp/xsk.c)
	stallRetry = 20 * time.Microsecond
)

// begin records a stall at now: txCons is the TX ring's consumer index and
// comp the completion ring's producer index, so that txCons − comp frames
// are in flight.
func (g *kickGate) begin(txCons, comp uint32, now time.Time) {
	g.on, g.comp, g.want, g.since = true, comp, min(txCons-comp, kickBatch), now
}

// over reports whether the stall is over at now, given the completion
// ring's producer index then.
func (g *kickGate) over(comp uint32, now time.Time) bool {
	return g.want > 0 && comp-g.comp >= g.want || now.Sub(g.since) >= stallRetry
}

// account adds this socket's frames to a.
func (s *xsk) account(a *FrameAccount) {
	a.Total += s.frames
	a.Free += s.nfree
	a.Fill += int(s.fill.produced())
	a.Rx += int(s.rx.consumable())
	a.Tx += int(s.tx.produced())
	a.Completion += int(s.comp.consumable())
	// The fill ring's consumer index counts the frames the kernel took,
	// the RX ring's producer index those it handed back; both start at 0
	// and wrap together.
	a.Driver += int(atomic.LoadUint32(s.fill.consumer) - atomic.LoadUint32(s.rx.producer))
	a.Violations += s.violations.Load()
}

// queueStats reads this socket's counters and the kernel's.
func (s *xsk) queueStats() (QueueStats, error) {
	q := QueueStats{
		Queue:       s.queue,
		RxPackets:   s.rxPackets.Load(),
		RxBytes:     s.rxBytes.Load(),
		RxOversize:  s.rxOversize.Load(),
		RxCopied:    s.rxCopied.Load(),
		TxPackets:   s.txPackets.Load(),
		TxBytes:     s.txBytes.Load(),
		TxCopied:    s.txCopied.Load(),
		TxCompleted: s.txDone.Load(),
		TxErrors:    s.txErrors.Load(),
	}
	st, err := statistics(s.fd)
	if err != nil {
		return q, fmt.Errorf("afxdp: queue %d: getsockopt XDP_STATISTICS: %w", s.queue, err)
	}
	q.Kernel = XDPStatistics{
		RxDropped:        st.Rx_dropped,
		RxInvalidDescs:   st.Rx_invalid_descs,
		RxRingFull:       st.Rx_ring_full,
		RxFillRingEmpty:  st.Rx_fill_ring_empty_descs,
		TxInvalidDescs:   st.Tx_invalid_descs,
		TxRingEmptyDescs: st.Tx_ring_empty_descs,
	}
	return q, nil
}

// xskConfig is what newXSK needs beyond the validated Options.
type xskConfig struct {
	ifindex  int
	ifname   string
	queue    int
	zeroCopy ZeroCopyMode // ZeroCopyAuto is only passed when attached natively
	bindWait time.Duration
}

// newXSK creates, maps and binds one socket on u, takes its reserve of
// o.Frames frames, fills its fill ring and returns it; on failure
// everything it made is undone (the frames it took stay taken). The first
// socket on a UMEM registers it; later ones share it (XDP_SHARED_UMEM),
// each with its own fill and completion ring, and bind in the first one's
// mode (copy or zero-copy, need-wakeup).
func newXSK(o *Options, u *UMEM, c xskConfig) (_ *xsk, err error) {
	s := &xsk{fd: -1, queue: c.queue, umem: u}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	s.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		return nil, fmt.Errorf("afxdp: socket(AF_XDP): %w (%w): the kernel lacks CONFIG_XDP_SOCKETS", err, ErrNotSupported)
	case err != nil:
		return nil, fmt.Errorf("afxdp: socket(AF_XDP): %w%s", err, permissionCure(err))
	}

	u.mu.Lock()
	owner := u.owner
	u.mu.Unlock()
	s.shared = owner >= 0
	if !s.shared {
		if u.txMetaWanted {
			var ok bool
			ok, err = registerWithTxMeta(s.fd, u.mem, u.frameSize)
			u.mu.Lock()
			u.txMeta = ok
			u.mu.Unlock()
		} else {
			err = registerUMEM(s.fd, u.mem, u.frameSize)
		}
		if err != nil {
			size := len(u.mem)
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) {
				return nil, fmt.Errorf("afxdp: queue %d: register %d-byte UMEM: %w: it exceeds RLIMIT_MEMLOCK (%s); "+
					"raise it (ulimit -l unlimited, or LimitMEMLOCK=infinity in the systemd unit), grant CAP_IPC_LOCK, "+
					"or use fewer frames", c.queue, size, err, memlockString())
			}
			return nil, fmt.Errorf("afxdp: queue %d: setsockopt XDP_UMEM_REG: %w", c.queue, err)
		}
	}
	for _, r := range [...]struct {
		opt, n int
		name   string
	}{
		{unix.XDP_UMEM_FILL_RING, o.FillRingSize, "XDP_UMEM_FILL_RING"},
		{unix.XDP_UMEM_COMPLETION_RING, o.CompletionRingSize, "XDP_UMEM_COMPLETION_RING"},
		{unix.XDP_RX_RING, o.RxRingSize, "XDP_RX_RING"},
		{unix.XDP_TX_RING, o.TxRingSize, "XDP_TX_RING"},
	} {
		if err = unix.SetsockoptInt(s.fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return nil, fmt.Errorf("afxdp: queue %d: setsockopt %s = %d: %w", c.queue, r.name, r.n, err)
		}
	}
	off, err := mmapOffsets(s.fd)
	if err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: getsockopt XDP_MMAP_OFFSETS: %w", c.queue, err)
	}
	if err = s.fill.ring.mapRing(s.fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, o.FillRingSize, 8); err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: mmap fill ring: %w", c.queue, err)
	}
	s.fill.addrs = addrsAt(s.fill.mem, off.Fr.Desc, s.fill.size)
	if err = s.comp.ring.mapRing(s.fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, o.CompletionRingSize, 8); err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: mmap completion ring: %w", c.queue, err)
	}
	s.comp.addrs = addrsAt(s.comp.mem, off.Cr.Desc, s.comp.size)
	if err = s.rx.ring.mapRing(s.fd, off.Rx, unix.XDP_PGOFF_RX_RING, o.RxRingSize, sizeofXDPDesc); err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: mmap RX ring: %w", c.queue, err)
	}
	s.rx.descs = descsAt(s.rx.mem, off.Rx.Desc, s.rx.size)
	if err = s.tx.ring.mapRing(s.fd, off.Tx, unix.XDP_PGOFF_TX_RING, o.TxRingSize, sizeofXDPDesc); err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: mmap TX ring: %w", c.queue, err)
	}
	s.tx.descs = descsAt(s.tx.mem, off.Tx.Desc, s.tx.size)
	// We produce on fill and TX: the whole ring is free to start with.
	s.fill.cachedCons = atomic.LoadUint32(s.fill.consumer) + s.fill.size
	s.tx.cachedCons = atomic.LoadUint32(s.tx.consumer) + s.tx.size

	if err = s.bind(c, owner); err != nil {
		return nil, err
	}
	u.mu.Lock()
	u.bound = append(u.bound, s.fd)
	if u.owner < 0 {
		u.owner = s.fd
	}
	u.mu.Unlock()
	flags, err := xdpOptions(s.fd)
	if err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: getsockopt XDP_OPTIONS: %w", c.queue, err)
	}
	s.zeroCopy = flags&unix.XDP_OPTIONS_ZEROCOPY != 0

	// Copy-mode TX moves at most this many descriptors per kick (6.17+).
	switch err = unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, o.TxBudget); {
	case err == nil:
		s.txBudget = o.TxBudget
	case errors.Is(err, unix.ENOPROTOOPT):
		// Kernels before 6.17 keep their fixed budget of 32.
	default:
		return nil, fmt.Errorf("afxdp: queue %d: setsockopt XDP_MAX_TX_SKB_BUDGET = %d: %w", c.queue, o.TxBudget, err)
	}

	first, err := u.take(o.Frames)
	if err != nil {
		return nil, fmt.Errorf("afxdp: queue %d: %w", c.queue, err)
	}
	s.frames = o.Frames
	s.usable = uint32(UsableFrame(u.frameSize))
	s.free = make([]uint64, o.Frames)
	for i := o.Frames - 1; i >= 0; i-- {
		s.push(first + uint64(i)<<u.shift)
	}
	s.rxQuota = uint32(o.FillRingSize)
	if err = s.refill(); err != nil {
		return nil, err
	}
	return s, nil
}

// mapRing mmaps one ring of n entries of entSize bytes.
func (r *ring) mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n int, entSize uint64) error {
	length := off.Desc + uint64(n)*entSize
	mem, err := unix.Mmap(fd, pgoff, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	r.mem = mem
	for _, o := range [...]uint64{off.Producer, off.Consumer, off.Flags} {
		if o+4 > uint64(len(mem)) || o%4 != 0 {
			return fmt.Errorf("ring offset %d outside the %d-byte mapping: kernel ABI mismatch", o, len(mem))
		}
	}
	r.producer = u32At(mem, off.Producer)
	r.consumer = u32At(mem, off.Consumer)
	r.flags = u32At(mem, off.Flags)
	r.size = uint32(n)
	r.mask = uint32(n - 1)
	r.cachedProd = atomic.LoadUint32(r.producer)
	r.cachedCons = atomic.LoadUint32(r.consumer)
	return nil
}

// bind binds the socket with need-wakeup, trying zero-copy first when
// asked to, and retrying EBUSY: the previous socket on this queue may still
// be tearing down (its release is asynchronous).
func (s *xsk) bind(c xskConfig, owner int) error {
	if owner >= 0 {
		return s.bindShared(c, owner)
	}
	modes := []uint16{unix.XDP_COPY}
	switch c.zeroCopy {
	case ZeroCopyAuto:
		modes = []uint16{unix.XDP_ZEROCOPY, unix.XDP_COPY}
	case ZeroCopyOn:
		modes = []uint16{unix.XDP_ZEROCOPY}
	}
	var err error
	for _, mode := range modes {
		sa := &unix.SockaddrXDP{Flags: mode | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(c.ifindex), QueueID: uint32(c.queue)}
		if err = bindRetry(s.fd, sa, c.bindWait); err == nil {
			return nil
		}
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			break // zero-copy refusals are EOPNOTSUPP/EINVAL; anything else fails copy mode too
		}
	}
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("afxdp: bind %s queue %d: %w after retrying for %v: another AF_XDP socket holds this queue",
			c.ifname, c.queue, err, c.bindWait)
	case c.zeroCopy == ZeroCopyOn && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)):
		return fmt.Errorf("afxdp: bind %s queue %d with XDP_ZEROCOPY: %w (%w): the driver has no zero-copy AF_XDP; "+
			"use ZeroCopyAuto or ZeroCopyOff", c.ifname, c.queue, err, ErrNotSupported)
	default:
		return fmt.Errorf("afxdp: bind %s queue %d: %w", c.ifname, c.queue, err)
	}
}

// bindShared binds the socket on the UMEM registered by the socket owner.
// The kernel takes no mode flags for it: the socket inherits copy or
// zero-copy and need-wakeup from the UMEM.
func (s *xsk) bindShared(c xskConfig, owner int) error {
	sa := &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(c.ifindex), QueueID: uint32(c.queue),
		SharedUmemFD: uint32(owner)}
	switch err := bindRetry(s.fd, sa, c.bindWait); {
	case err == nil:
		return nil
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("afxdp: bind %s queue %d: %w after retrying for %v: another AF_XDP socket holds this queue",
			c.ifname, c.queue, err, c.bindWait)
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("afxdp: bind %s queue %d on a shared UMEM: %w (%w): sockets sharing a UMEM bind in the mode of "+
			"the first (zero-copy or copy); give ports whose drivers differ their own UMEMs, or set ZeroCopyOff", c.ifname, c.queue, err, ErrUMEMMode)
	default:
		return fmt.Errorf("afxdp: bind %s queue %d on a shared UMEM: %w", c.ifname, c.queue, err)
	}
}

// bindRetry binds fd to sa, retrying with backoff for up to wait while the
// kernel answers EBUSY: a socket just closed on the queue (ours, by a
// previous run) releases it asynchronously.
func bindRetry(fd int, sa *unix.SockaddrXDP, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := unix.Bind(fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
	}
}

// close unmaps every mapping and closes the socket; it is safe on a
// partly built socket and idempotent.
func (s *xsk) close() error {
	var errs []error
	for _, m := range [...]*[]byte{&s.fill.mem, &s.comp.mem, &s.rx.mem, &s.tx.mem} {
		if *m != nil {
			if err := unix.Munmap(*m); err != nil {
				errs = append(errs, fmt.Errorf("afxdp: queue %d: munmap: %w", s.queue, err))
			}
			*m = nil
		}
	}
	if s.fd >= 0 {
		s.umem.unbind(s.fd)
		if err := unix.Close(s.fd); err != nil {
			errs = append(errs, fmt.Errorf("afxdp: queue %d: close: %w", s.queue, err))
		}
		s.fd = -1
	}
	return errors.Join(errs...)
}
