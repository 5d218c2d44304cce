//go:build linux

package afxdp

import (
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
)

// live transmits UMEM frames out of an interface as XDP live frames: it
// writes a descriptor per frame (index, length) into the transmit queue
// the Port's XDP program shares with it, then runs the program once per
// frame with BPF_PROG_RUN and BPF_F_TEST_XDP_LIVE_FRAMES. Each run copies
// its frame into a kernel page-pool page and returns XDP_TX, which the
// kernel turns into a redirect out of the interface through the driver's
// ndo_xdp_xmit, flushed every batch. No skb is built, and on veth the peer
// receives xdp_frames in bulk rather than one softirq per skb: on this
// project's 2-vCPU hosts that sends about three times the frames per
// second of copy-mode AF_XDP TX. Each call pays a fixed cost (the kernel
// sets up and tears down a page pool, ~20 µs here), so small batches go
// through the socket instead (Options.LiveMin).
//
// The program must be in the kernel's XDP dispatcher, which it is while
// attached: BPF_PROG_RUN of a program that is not would rewrite the
// dispatcher, and wait for RCU, on every call.
type live struct {
	prog   *program
	mem    []byte   // the mmapped transmit queue
	next   *uint32  // its first word: the next descriptor the program takes
	descs  []txDesc // its descriptors
	data   []byte   // the BPF_PROG_RUN input: magic, then a template frame
	ctx    xdpMD
	attr   testRunAttr
	usable int

	// Live frames name the device by its index in the calling thread's
	// network namespace, so send checks that the thread is in the Port's:
	// once per thread it runs on (workers are locked to theirs).
	ns      nsID          // the Port's namespace
	tid     int           // the thread last checked
	tidOK   bool          // whether that thread is in ns
	wrongNS atomic.Uint64 // batches sent through the socket because the thread was elsewhere

	// Live frames have no backpressure: a device that cannot keep up
	// drops what does not fit (veth: its peer's ring; and a consumer on
	// another CPU also leaves each call's page pool to be freed later, by
	// a kworker). send therefore reads the device's refusals every
	// refusalCheck calls, and after any new one the Port transmits
	// through the socket, which does push back, for backoff (1 s, then
	// eightfold up to a minute, back to 1 s after a minute without
	// refusals).
	ref       *refusals // nil if the device keeps no count of refusals
	refused   uint64    // the count at the last check
	sends     uint64
	offUntil  time.Time        // live frames resume then
	now       func() time.Time // the back-off's clock: time.Now
	backoff   time.Duration
	lastRefus time.Time
	fallbacks atomic.Uint64 // times live frames were given up for a while

	scratch [txqLen]uint64 // frames to copy frames from outside the UMEM into
	pos     [txqLen]uint16 // descriptor → index in the batch being sent

	lastErr *SyscallError

	calls  atomic.Uint64 // BPF_PROG_RUN calls
	frames atomic.Uint64 // frames handed to the kernel
	bytes  atomic.Uint64
	errors atomic.Uint64 // frames refused for their length
	copied atomic.Uint64 // frames copied into a scratch frame first
}

// txDesc is one descriptor of the transmit queue.
type txDesc struct {
	index uint32 // frame index in the UMEM array
	len   uint32
}

// newLive maps p's transmit queue and takes txqLen scratch frames of u.
func newLive(p *program, u *UMEM, ifname string, ifindex int) (*live, error) {
	first, err := u.take(txqLen)
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(p.txq.FD(), 0, txqValueSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap transmit queue: %w", err)
	}
	l := &live{prog: p, mem: mem, usable: UsableFrame(u.frameSize), data: make([]byte, txMetaLen+txFrameLen), now: time.Now}
	for i := range l.scratch {
		l.scratch[i] = first + uint64(i)<<u.shift
	}
	l.next, l.descs = txqAt(mem, txqDescs, txqLen)
	binary.LittleEndian.PutUint64(l.data, p.magic)
	l.ctx.ingressIfindex = uint32(ifindex)
	if l.ns, err = threadNetns(); err != nil {
		l.close()
		return nil, fmt.Errorf("afxdp: network namespace of the opening thread: %w", err)
	}
	if l.ref, err = newRefusals(ifname); err != nil {
		l.close()
		return nil, fmt.Errorf("afxdp: %s's driver statistics: %w", ifname, err)
	}
	if l.ref != nil {
		l.refused = l.ref.read()
	}
	l.attr.progFD = uint32(p.prog.FD())
	l.attr.flags = unix.BPF_F_TEST_XDP_LIVE_FRAMES
	l.attr.setInput(l.data, txMetaLen, &l.ctx)
	return l, nil
}

// refusalCheck is how many live-frames calls pass between two reads of
// the device's refusals.
const refusalCheck = 4

// Backoff: how long the Port transmits through the socket after the
// device refused live frames, growing eightfold from minBackoff up to
// maxBackoff while refusals recur. Refusals mean the frames' consumer runs
// on another CPU and falls behind, and there live frames cost more than
// the socket even between refusals: each BPF_PROG_RUN call's page pool is
// destroyed with its frames still in flight, and the kernel's deferred
// release of those pools walks a table of all of them (a kworker on the
// sender's CPU, mem_allocator_disconnect, took a fifth of the CPU in the
// peer kit's layout B). So after the first refusal the Port retries
// rarely.
const (
	minBackoff    = time.Second
	maxBackoff    = time.Minute
	backoffGrowth = 8
)

// allow reports whether this Transmit may send live frames: not while
// backing off after the device refused some.
func (l *live) allow() bool {
	return l.offUntil.IsZero() || l.now().After(l.offUntil)
}

// checkRefusals reads the device's refusals every refusalCheck sends and
// backs off from live frames when there are new ones; it returns the new
// refusals, 0 if none.
func (l *live) checkRefusals() uint64 {
	if l.ref == nil {
		return 0
	}
	if l.sends++; l.sends%refusalCheck != 0 {
		return 0
	}
	r := l.ref.read()
	if r == l.refused {
		return 0
	}
	n := r - l.refused
	l.refused = r
	now := l.now()
	if now.Sub(l.lastRefus) > maxBackoff {
		l.backoff = 0
	}
	l.backoff = min(max(backoffGrowth*l.backoff, minBackoff), maxBackoff)
	l.lastRefus, l.offUntil = now, now.Add(l.backoff)
	l.fallbacks.Add(1)
	return n
}

// inNamespace reports whether the calling thread is in the Port's network
// namespace.
func (l *live) inNamespace() bool {
	if tid := unix.Gettid(); tid != l.tid {
		id, err := threadNetns()
		l.tid, l.tidOK = tid, err == nil && id == l.ns
	}
	if !l.tidOK {
		l.wrongNS.Add(1)
	}
	return l.tidOK
}

// send transmits up to txqLen frames of ds and returns how many it took.
// A free frame of u is sent from where it lies; any other frame is first
// copied into one of the scratch frames. A frame of a bad length is taken
// and counted as an error. BPF_PROG_RUN failing before it sent anything is
// returned as an error with nothing taken.
func (l *live) send(ds []*packet.Desc, u *UMEM) (int, error) {
	k := min(len(ds), txqLen)
	n := 0
	var bytes uint64
	for i, d := range ds[:k] {
		if d.Len < minFrameLen || d.Len > l.usable || d.Len > len(d.Buf) {
			l.errors.Add(1)
			continue
		}
		a, ok := u.chunk(d.Buf)
		if !ok || u.state[a>>u.shift] != frameFree {
			a = l.scratch[n]
			copy(u.mem[a+Headroom:], d.Buf[:d.Len])
			l.copied.Add(1)
		}
		l.descs[n] = txDesc{index: uint32(a >> u.shift), len: uint32(d.Len)}
		l.pos[n] = uint16(i)
		n++
		bytes += uint64(d.Len)
	}
	if n == 0 {
		return k, nil
	}
	*l.next = 0 // the system call orders this before the program's reads
	done := 0
	for done < n {
		l.attr.repeat = uint32(n - done)
		l.attr.batch = uint32(min(n-done, liveBatch))
		e := testRun(&l.attr)
		l.calls.Add(1)
		done = min(int(atomic.LoadUint32(l.next)), n)
		if e == 0 || e == unix.EINTR {
			continue // a signal ends a run early; the queue says where
		}
		if done == 0 {
			if l.lastErr == nil || l.lastErr.Err != e {
				l.lastErr = &SyscallError{Op: "bpf(BPF_PROG_RUN)", Err: e}
			}
			return 0, l.lastErr
		}
		k, n = int(l.pos[done-1])+1, done // what was sent counts; the rest stay with the caller
		bytes = 0
		for _, d := range l.descs[:n] {
			bytes += uint64(d.len)
		}
	}
	l.frames.Add(uint64(n))
	l.bytes.Add(bytes)
	return k, nil
}

func (l *live) close() error {
	if l.ref != nil {
		l.ref.close()
		l.ref = nil
	}
	if l.mem == nil {
		return nil
	}
	err := unix.Munmap(l.mem)
	l.mem = nil
	return err
}

// liveBatch is how many live frames the kernel runs between flushes: it
// redirects a batch, flushes it into the device and lets pending softirqs
// run. On veth the flush fills the peer's 256-entry ring, which the peer's
// NAPI (64 frames a poll, run at that point on this CPU) drains; a larger
// batch overflows it, and veth drops what does not fit
// (tx_queue_N_xdp_xmit_errors), with no backpressure.
const liveBatch = 64

// watchInterval is how often a Port rechecks whether its device takes
// redirected frames.
const watchInterval = 100 * time.Millisecond

// setupLive prepares live-frames transmit as o.Transmit asks. With
// TxAuto on a veth whose socket copies, the Port transmits live frames
// while the device can take redirected frames and through its sockets
// otherwise, rechecking every watchInterval: on veth that ability comes
// and goes with the peer's XDP program or GRO. TxAuto keeps to the socket
// on a zero-copy socket, the fastest path there, and on any other device,
// whose frames are freed after the call that sent them returns (a NIC's
// TX completion): each call's page pool then waits for them, and the
// kernel's deferred release of waiting pools costs the square of their
// number (see backoffGrowth; 34% of the worker's CPU in bench tcp on veth,
// where TCP holds the frames, and live frames are still 1.25× the socket
// there).
func (p *Port) setupLive(o *Options) error {
	p.liveMin = o.LiveMin
	if o.Transmit == TxSocket {
		return nil
	}
	if o.Transmit == TxAuto {
		if p.socks[0].zeroCopy {
			return nil
		}
		l, err := netlink.LinkByIndex(p.ifindex)
		if err == nil && l.Type() != "veth" {
			p.log.Info("transmitting through the socket: live frames are chosen only on veth; afxdp transmit: xdp asks for them here",
				zap.String("device", l.Type()))
			return nil
		}
		if err == nil {
			if ns, _, index, err := vethPeer(l); err == nil {
				p.peer = &peerNAPI{ns: ns, index: index}
			}
		}
	}
	ok, why := p.wantsLive()
	if !ok && o.Transmit == TxXDP {
		return fmt.Errorf("afxdp: %s: Transmit = xdp: %s: %w", p.name, why, ErrNotSupported)
	}
	l, err := newLive(p.prog, p.umem, p.name, p.ifindex)
	if err != nil {
		return err
	}
	p.live = l
	p.liveOK.Store(ok)
	if !ok {
		p.log.Info("transmitting through the socket for now", zap.String("why", why))
	}
	ns, err := netns.Get()
	if err != nil {
		return fmt.Errorf("afxdp: %s: network namespace: %w", p.name, err)
	}
	p.watch = make(chan struct{})
	p.watched.Add(1)
	go p.watchDevice(ns)
	return nil
}

// peerNAPI is a veth peer, for its NAPI threads. Asking costs a thread
// switched into the peer's namespace and a netlink dump, so the answer is
// kept for peerCheckInterval: the switch to threaded NAPI is an
// administrator's rare act, and a second is soon enough to follow it.
type peerNAPI struct {
	ns    netns.NsHandle
	index int

	pids []int     // the last answer
	err  error     // and its error
	at   time.Time // when it was asked; zero: never
}

// peerCheckInterval is how long a peer's NAPI threads are taken as known.
const peerCheckInterval = time.Second

// threads returns the PIDs of the threads polling the peer's NAPI. It is
// called from one goroutine at a time (Open, then the device watch).
func (n *peerNAPI) threads() ([]int, error) {
	if !n.at.IsZero() && time.Since(n.at) < peerCheckInterval {
		return n.pids, n.err
	}
	var pids []int
	err := inNamespace(n.ns, func() error {
		var err error
		pids, err = napiThreads(n.index)
		return err
	})
	n.pids, n.err, n.at = pids, err, time.Now()
	return pids, err
}

// wantsLive reports whether the Port should transmit live frames now: the
// device takes redirected frames (canRedirect) and, under TxAuto, the veth
// peer polls its NAPI in softirq, not in threads of its own. A live frame
// is returned to the transmitting call's page pool by whoever frees it,
// the peer's NAPI here; from a NAPI thread, which the scheduler keeps off
// the worker's CPU, every return crosses CPUs and takes the pool's ring
// lock, on that other CPU. In the peer kit's layout B (the sink's NAPI a
// thread on the generator's CPU) that made live frames 0.72× the socket at
// 64 B and 0.58× at 1518 B (medians of 9 runs, 2026-11-23). Otherwise it
// says why not.
func (p *Port) wantsLive() (bool, string) {
	ok, why := p.canRedirect()
	if !ok || p.peer == nil {
		return ok, why
	}
	pids, err := p.peer.threads()
	if err != nil || len(pids) == 0 {
		return true, "" // softirq, or unknown (no napi-get before Linux 6.9): keep live frames
	}
	return false, fmt.Sprintf("the veth peer polls its NAPI in a thread of its own (PID %d), "+
		"so live frames would be returned across CPUs: the socket is cheaper for it", pids[0])
}

// inNamespace runs f on a thread in network namespace ns. The thread goes
// back to the pool only if it returns to its own namespace afterwards.
func inNamespace(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return // locked: the thread dies with the goroutine
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return <-errc
}

// canRedirect reports whether the device takes redirected frames now:
// it is up with carrier and its driver has ndo_xdp_xmit (netdev
// xdp-features ndo-xmit); else it says why.
func (p *Port) canRedirect() (bool, string) {
	l, err := netlink.LinkByIndex(p.ifindex)
	if err != nil {
		return false, err.Error()
	}
	if a := l.Attrs(); a.Flags&net.FlagUp == 0 || a.RawFlags&unix.IFF_LOWER_UP == 0 {
		return false, "the link is down"
	}
	f, err := deviceFeatures(p.ifindex)
	if err != nil {
		return false, err.Error()
	}
	if f.xdp&xdpActNdoXmit == 0 {
		why := "its driver cannot take redirected frames (no ndo-xmit in its xdp-features)"
		if l.Type() == "veth" {
			why += "; a veth takes them while its peer has an XDP program or GRO on (ethtool -K PEER gro on)"
		}
		return false, why
	}
	return true, ""
}

// watchDevice rechecks canRedirect every watchInterval until the Port
// closes, in the Port's network namespace (its thread is given up on exit).
func (p *Port) watchDevice(ns netns.NsHandle) {
	defer p.watched.Done()
	defer ns.Close()
	runtime.LockOSThread() // never unlocked: the thread dies with the goroutine, namespace and all
	if err := netns.Set(ns); err != nil {
		p.log.Warn("cannot watch the device from its namespace; keeping the transmit path", zap.Error(err))
		return
	}
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-p.watch:
			return
		case <-t.C:
		}
		ok, why := p.wantsLive()
		if p.liveOK.Swap(ok) != ok {
			if ok {
				p.log.Info("transmitting XDP live frames")
			} else {
				p.log.Info("transmitting through the socket", zap.String("why", why))
			}
		}
	}
}

// LiveFrames returns the frames sent as XDP live frames so far.
func (p *Port) LiveFrames() uint64 {
	if p.live == nil {
		return 0
	}
	return p.live.frames.Load()
}

// txPath returns the path a batch of LiveMin frames takes now.
func (p *Port) txPath() TxPath {
	if p.live != nil && p.liveOK.Load() {
		return TxXDP
	}
	return TxSocket
}
