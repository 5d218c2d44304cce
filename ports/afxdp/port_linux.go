//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

var (
	_ ports.Port          = (*Port)(nil)
	_ ports.Waiter        = (*Port)(nil)
	_ ports.StatsReporter = (*Port)(nil)
	_ ports.FDPoller      = (*Port)(nil)
	_ ports.Pender        = (*Port)(nil)
	_ ports.MaxFramer     = (*Port)(nil)
	_ ports.RxStamper     = (*Port)(nil)
	_ ports.TxStamper     = (*Port)(nil)
)

// bindWait bounds the EBUSY retries of bind while a previous socket on the
// same queue finishes its asynchronous teardown.
const bindWait = 5 * time.Second

// Port drives one interface through one AF_XDP socket per RX queue and
// presents them as one ports.Port. It is used by one goroutine at a time;
// Stats, QueueStats and Info may be called from any goroutine.
type Port struct {
	name    string
	ifindex int
	info    Info
	log     *zap.Logger

	umem    *UMEM
	ownUMEM bool   // the Port made umem and closes it
	socks   []*xsk // one per queue, in Info.Queues order
	txSocks []*xsk // socks[:1], or socks with Options.TxHash
	next    int    // socket Receive starts at, rotating

	prog     *program
	xdp      link.Link // the BPF link attaching prog; closing it detaches prog
	stamps   *rxStamps // hardware receive stamps; nil without the device-bound program
	txStamps *txStamps // completion stamps; nil without Options.TxStamps

	live    *live       // XDP live-frames transmit; nil when the Port transmits through its sockets only
	txDrop0 uint64      // the device's tx_dropped at Open
	liveOK  atomic.Bool // the device takes redirected frames now (ndo_xdp_xmit, link up)
	liveMin int         // smallest batch sent as live frames
	peer    *peerNAPI   // TxAuto on veth: the peer whose NAPI threads veto live frames
	watch   chan struct{}
	watched sync.WaitGroup

	pollfds   []unix.PollFd
	ts        unix.Timespec
	txBlocked bool // the last Transmit was short: Wait also wakes on TX room
	// txDown is set when a kick finds the link administratively down
	// (ENETDOWN): Transmit then takes nothing until a probe finds it up.
	txDown atomic.Bool

	closed atomic.Bool
	mu     sync.Mutex  // serializes Close with Stats/QueueStats
	final  ports.Stats // Stats at Close
}

// Open opens AF_XDP sockets on ifname's RX queues (all of them unless
// opts.Queues says otherwise), attaches ecnswitch's XDP redirect program
// and returns the Port. It removes an ecnswitch program left behind by a
// process that is gone, and refuses another program's unless opts.Force.
// Without CAP_IPC_LOCK it may raise the process's RLIMIT_MEMLOCK to fit
// the UMEMs. Every error names its cure; partial setup is undone.
func Open(ifname string, opts Options) (*Port, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	log := o.Logger.Named("port." + ifname)

	link, err := netlink.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("afxdp: interface %q not found: %w: create it or check the name (ip link show)", ifname, err)
		}
		return nil, fmt.Errorf("afxdp: look up interface %q: %w", ifname, err)
	}
	attrs := link.Attrs()
	usable := UsableFrame(o.FrameSize)
	if need := attrs.MTU + 14 + 4; need > usable {
		return nil, fmt.Errorf("afxdp: %s: MTU %d allows %d-byte frames (MTU + 14 Ethernet + 4 VLAN), more than the %d usable "+
			"bytes of a FrameSize %d frame (FrameSize − %d headroom): lower the MTU to at most %d "+
			"(ip link set dev %s mtu %d)%s",
			ifname, attrs.MTU, need, usable, o.FrameSize, Headroom, usable-18, ifname, usable-18, biggerFrameHint(o.FrameSize, attrs.MTU))
	}

	nq, err := rxQueueCount(ifname)
	if err != nil {
		return nil, err
	}
	queues := append([]int(nil), o.Queues...)
	if len(queues) == 0 {
		for q := range nq {
			queues = append(queues, q)
		}
	}
	maxq := 0
	for i, q := range queues {
		if q >= nq {
			return nil, fmt.Errorf("afxdp: Queues[%d] = %d: %s has %d RX queues, so it must be in [0, %d]", i, q, ifname, nq, nq-1)
		}
		maxq = max(maxq, q)
	}

	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return nil, fmt.Errorf("afxdp: read own start time: %w", err)
	}
	p := &Port{name: ifname, ifindex: attrs.Index, log: log}
	ok := false
	defer func() {
		if !ok {
			if err := p.teardown(); err != nil {
				log.Warn("undoing a failed Open", zap.Error(err))
			}
		}
	}()

	if err := clearInterface(ifname, attrs.Index, o.Force, log); err != nil {
		return nil, err
	}
	p.umem = o.UMEM
	if p.umem == nil {
		raiseMemlock(uint64(len(queues)*o.Frames+txqLen)*uint64(o.FrameSize), log)
		if p.umem, err = NewUMEM(len(queues)*o.Frames+txqLen, o.FrameSize); err != nil {
			return nil, err
		}
		p.ownUMEM = true
	} else {
		raiseMemlock(uint64(len(p.umem.mem)), log)
	}
	plan, err := planStamps(&o, ifname, attrs.Index, log)
	if err != nil {
		return nil, err
	}
	mode, err := p.load(&o, plan, usable, maxq+1, pid, start)
	if err != nil {
		return nil, err
	}
	if mode == AttachGeneric {
		if err := checkAggregation(ifname, usable); err != nil {
			return nil, err
		}
	}
	warnPeerOffloads(link, usable, log)

	if o.TxStamps {
		p.umem.txMetaWanted = true // the first socket registers it so, if it is first
	}
	zc := o.ZeroCopy
	if mode == AttachGeneric {
		zc = ZeroCopyOff // a generic-mode hook copies; zero-copy needs the driver
	}
	for _, q := range queues {
		s, err := newXSK(&o, p.umem, xskConfig{ifindex: attrs.Index, ifname: ifname, queue: q, zeroCopy: zc, bindWait: bindWait})
		if err != nil {
			return nil, err
		}
		s.rxMeta = p.stamps != nil
		p.socks = append(p.socks, s)
		if err := p.prog.xsks.Put(uint32(q), uint32(s.fd)); err != nil {
			return nil, fmt.Errorf("afxdp: insert queue %d socket into XSKMAP: %w", q, err)
		}
		p.pollfds = append(p.pollfds, unix.PollFd{Fd: int32(s.fd)})
	}
	p.txSocks = p.socks[:1]
	if o.TxHash {
		p.txSocks = p.socks
	}
	p.setupTxStamps(&o)
	if err := p.setupLive(&o); err != nil {
		return nil, err
	}
	p.txDrop0 = deviceTxDropped(p.ifindex)
	p.info = Info{
		Interface:   ifname,
		Ifindex:     attrs.Index,
		Queues:      queues,
		Attach:      mode,
		ZeroCopy:    p.socks[0].zeroCopy,
		NeedWakeup:  true,
		TxBudget:    p.socks[0].txBudget,
		ProgramID:   p.prog.id,
		Frames:      o.Frames,
		FrameSize:   o.FrameSize,
		UsableFrame: usable,
		MTU:         attrs.MTU,
		SharedUMEM:  p.socks[0].shared || !p.ownUMEM,
		Transmit:    p.txPath(),
		LiveMin:     p.liveMin,
		RxMetadata:  p.stamps != nil,
		TxMetadata:  p.txStamps != nil,
		PHC:         plan.phc,
	}
	if f, err := deviceFeatures(attrs.Index); err == nil {
		p.info.RxMetadataFeatures = featureNames(f.rxMetadata, rxMetadataNames)
		p.info.XSKFeatures = featureNames(f.xsk, xskFeatureNames)
	}
	log.Info("AF_XDP port open",
		zap.Ints("queues", queues), zap.Stringer("attach", mode), zap.Bool("zerocopy", p.info.ZeroCopy),
		zap.Int("txBudget", p.info.TxBudget), zap.Uint32("program", p.prog.id),
		zap.Int("frames", o.Frames), zap.Int("frameSize", o.FrameSize), zap.Bool("sharedUMEM", p.info.SharedUMEM),
		zap.Stringer("transmit", p.info.Transmit), zap.Int("liveMin", p.liveMin),
		zap.String("rxStamps", p.RxClock()+p.rxStampNote()), zap.Bool("txStamps", p.txStamps != nil),
		zap.Strings("rxMetadataFeatures", p.info.RxMetadataFeatures), zap.Strings("xskFeatures", p.info.XSKFeatures))
	ok = true
	return p, nil
}

// RxQueues returns the number of RX queues of ifname (ETHTOOL_GCHANNELS
// rx + combined where the driver answers, else sysfs): the sockets Open
// makes when Options.Queues is empty.
func RxQueues(ifname string) (int, error) { return rxQueueCount(ifname) }

func biggerFrameHint(frameSize, mtu int) string {
	if frameSize == 2048 && mtu+18 <= UsableFrame(4096) {
		return ", or set FrameSize 4096"
	}
	return ""
}

// Name returns the interface name.
func (p *Port) Name() string { return p.name }

// MaxFrame returns the usable frame: the largest frame Transmit sends.
func (p *Port) MaxFrame() int { return p.info.UsableFrame }

// Info returns what Open found and chose.
func (p *Port) Info() Info {
	i := p.info
	i.Queues = append([]int(nil), p.info.Queues...)
	return i
}

// Receive copies up to len(ds) received frames into ds[i].Buf, taking
// from the queues' sockets in turn (the first socket visited rotates from
// call to call), and refills their fill rings. Frames larger than ds[i].Buf
// are dropped and counted in Stats().RxOversize. RxTime is the frame's
// hardware stamp in CLOCK_MONOTONIC ns where the Port has one (see
// RxClock), else zero.
func (p *Port) Receive(ds []*packet.Desc) (int, error) {
	if p.closed.Load() {
		return 0, ports.ErrClosed
	}
	ns := len(p.socks)
	first := p.next
	if p.next++; p.next == ns {
		p.next = 0
	}
	n := 0
	for i := 0; i < ns && n < len(ds); i++ {
		j := first + i
		if j >= ns {
			j -= ns
		}
		k, err := p.socks[j].receive(ds[n:])
		n += k
		if err != nil {
			if p.stamps != nil {
				p.stamps.convert(ds[:n])
			}
			return n, err
		}
	}
	if p.stamps != nil && n > 0 {
		p.stamps.convert(ds[:n])
	}
	return n, nil
}

// Transmit queues ds[i].Frame() for transmission, in order, and returns
// how many frames it took; fewer than len(ds) means the TX ring or the
// sockets' frame reserve is full and the caller should keep the rest and
// retry later. A frame larger than the usable frame is taken, dropped and
// counted in TxErrors.
//
// A batch of at least LiveMin frames goes out as XDP live frames when the
// device can take redirected frames (see Options.Transmit): the kernel has
// copied every frame by the time Transmit returns, and the caller keeps its
// descriptors' frames. Otherwise the frames go on a socket's TX ring: a
// frame that is a free frame of the Port's UMEM goes there itself, and the
// caller's descriptor gets a frame of the socket's reserve in exchange
// (ds[i].Buf changes; no copy); any other frame is copied. Transmit then
// kicks the kernel until copy-mode TX has drained or stops making progress,
// and reaps completions. Transmit(nil) just reaps and kicks.
//
// A kick that finds the link administratively down (ENETDOWN) returns
// the error with the frames of that call taken: they stay on the TX ring
// and leave once the link is back, so the caller must not send them
// again. From then on Transmit takes nothing and returns the error, so
// that the caller drops and counts what it would send, and Pending is
// false; each call first probes the link with one sendto, and the first
// that finds it up sends the frames left on the ring and goes on as
// usual. So a downed link holds at most one call's frames.
//
// Live frames name the device by its index in the calling thread's network
// namespace: from a thread in another namespace than the Port's, Transmit
// takes the socket (checked once per thread).
func (p *Port) Transmit(ds []*packet.Desc) (int, error) {
	if p.closed.Load() {
		return 0, ports.ErrClosed
	}
	if p.live != nil && len(ds) >= p.liveMin && p.liveOK.Load() && p.live.allow() && p.live.inNamespace() && p.txDrained() {
		k, err := p.live.send(ds, p.umem)
		if n := p.live.checkRefusals(); n > 0 {
			p.log.Info("the device refused live frames; transmitting through the socket for a while",
				zap.Uint64("refused", n), zap.Duration("for", p.live.backoff))
		}
		return k, err
	}
	if p.txDown.Load() {
		for _, s := range p.txSocks {
			if err := s.probe(); err != nil {
				return 0, err
			}
		}
		p.txDown.Store(false)
	}
	if p.txStamps != nil {
		p.txStamps.begin()
	}
	for _, s := range p.txSocks {
		s.txBegin()
	}
	n := 0
	if len(p.txSocks) == 1 {
		s := p.txSocks[0]
		for n < len(ds) && s.txPut(ds[n]) {
			n++
		}
	} else {
		for n < len(ds) && p.txSocks[ds[n].FlowHash()%uint32(len(p.txSocks))].txPut(ds[n]) {
			n++
		}
	}
	var err error
	for _, s := range p.txSocks {
		if e := s.txFlush(); e != nil && err == nil {
			err = e
		}
	}
	p.txBlocked = n < len(ds)
	if errors.Is(err, unix.ENETDOWN) {
		p.txDown.Store(true)
	}
	return n, err
}

// Pending reports whether the sockets' TX rings hold frames the kernel has
// not taken yet (a kick that made no progress leaves them there): the
// caller should call Transmit(nil), or Wait, which also drives TX. While
// the link is down (see Transmit) nothing can move, and Pending is false.
func (p *Port) Pending() bool {
	if p.txDown.Load() {
		return false
	}
	for _, s := range p.txSocks {
		if s.tx.produced() != 0 {
			return true
		}
	}
	return false
}

// txDrained reports whether the kernel has taken every descriptor of the
// sockets' TX rings, so that live frames cannot overtake them. It reaps
// completions on the way.
func (p *Port) txDrained() bool {
	for _, s := range p.txSocks {
		s.reap()
		if s.tx.produced() != 0 {
			return false
		}
	}
	return true
}

// PollFDs returns the port's socket descriptors, one per queue, which poll
// readable when frames are waiting.
func (p *Port) PollFDs() []int {
	fds := make([]int, len(p.pollfds))
	for i := range p.pollfds {
		fds[i] = int(p.pollfds[i].Fd)
	}
	return fds
}

// Wait blocks in ppoll on the sockets for at most timeoutNs nanoseconds
// (timeoutNs ≤ 0 only checks) until a frame is ready to receive, or, after
// a short Transmit, until TX room frees up. ppoll also drives copy-mode TX.
// It reports whether there is work; a signal does not cut the wait short.
func (p *Port) Wait(timeoutNs int64) (bool, error) {
	if p.closed.Load() {
		return false, ports.ErrClosed
	}
	for _, s := range p.socks {
		if s.rx.consumable() > 0 {
			return true, nil
		}
	}
	ev := int16(unix.POLLIN)
	if p.txBlocked {
		ev |= unix.POLLOUT
	}
	for i := range p.pollfds {
		p.pollfds[i].Events, p.pollfds[i].Revents = ev, 0
	}
	timeoutNs = max(timeoutNs, 0)
	start := time.Now()
	p.ts = unix.NsecToTimespec(timeoutNs)
	n, err := unix.Ppoll(p.pollfds, &p.ts, nil)
	for err == unix.EINTR { // a signal (the Go runtime's preemption, say): sleep out the rest
		left := timeoutNs - int64(time.Since(start))
		if left <= 0 {
			return false, nil
		}
		p.ts = unix.NsecToTimespec(left)
		n, err = unix.Ppoll(p.pollfds, &p.ts, nil)
	}
	if err != nil {
		var e unix.Errno
		if errors.As(err, &e) {
			return false, p.socks[0].errno("ppoll", e)
		}
		return false, err
	}
	for i := range p.pollfds {
		if p.pollfds[i].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			return false, p.socks[i].errno("ppoll", unix.EIO)
		}
	}
	return n > 0, nil
}

// Stats returns the Port's counters summed over its queues, with the
// kernel's XDP_STATISTICS folded in: RxDropped = rx_dropped + rx_ring_full
// + rx_invalid_descs; TxErrors adds tx_invalid_descs; RxOversize adds the
// frames the XDP program dropped for exceeding the usable frame. Live
// frames count as sent; TxErrors adds those the transmit program refused
// and every frame the device dropped after taking it (its tx_dropped since
// Open: on veth, frames its peer's full ring refused, live or not), which
// TxCompleted leaves out. After Close it returns the counters as they were
// at Close.
func (p *Port) Stats() ports.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return p.final
	}
	return p.statsLocked()
}

func (p *Port) statsLocked() ports.Stats {
	var st ports.Stats
	qs, _ := p.queueStatsLocked() // a failed getsockopt leaves that queue's kernel counters zero
	for _, q := range qs {
		st.RxPackets += q.RxPackets
		st.RxBytes += q.RxBytes
		st.RxOversize += q.RxOversize
		st.RxDropped += q.Kernel.RxDropped + q.Kernel.RxRingFull + q.Kernel.RxInvalidDescs
		st.RxRingFull += q.Kernel.RxRingFull
		st.RxFillEmpty += q.Kernel.RxFillRingEmpty
		st.TxPackets += q.TxPackets
		st.TxBytes += q.TxBytes
		st.TxCompleted += q.TxCompleted
		st.TxErrors += q.TxErrors + q.Kernel.TxInvalidDescs
	}
	st.RxOversize += p.prog.oversize()
	st.RxDropped += p.prog.noRoom()
	if l := p.live; l != nil {
		n := l.frames.Load()
		st.TxPackets += n
		st.TxBytes += l.bytes.Load()
		st.TxCompleted += n
		st.TxErrors += l.errors.Load() + p.prog.counter(metaTxDrop)
		st.LiveFrames, st.LiveFallbacks = n, l.fallbacks.Load()
	}
	for _, s := range p.socks {
		st.Violations += s.violations.Load()
	}
	// Frames the device dropped after taking them, on either path (veth:
	// live frames its peer's full ring refused, and skbs it dropped for
	// the same reason): the sockets' completions count them as sent.
	var dropped uint64
	if d := deviceTxDropped(p.ifindex); d >= p.txDrop0 { // 0 once the device is gone
		dropped = d - p.txDrop0
	}
	st.TxErrors += dropped
	st.TxCompleted -= min(st.TxCompleted, dropped)
	return st
}

// QueueStats returns each queue's own and kernel counters. The XDP
// program's oversize drops are per interface and appear only in Stats.
func (p *Port) QueueStats() ([]QueueStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return nil, ports.ErrClosed
	}
	return p.queueStatsLocked()
}

func (p *Port) queueStatsLocked() ([]QueueStats, error) {
	qs := make([]QueueStats, 0, len(p.socks))
	var errs []error
	for _, s := range p.socks {
		q, err := s.queueStats()
		errs = append(errs, err)
		qs = append(qs, q)
	}
	return qs, errors.Join(errs...)
}

// Settle drives the Port, reaping completions and kicking what is left,
// until its frames are at rest (FrameAccount.AtRest) or timeout has
// passed, and returns where they are. Whoever used the Port (a worker)
// must have stopped.
func (p *Port) Settle(timeout time.Duration) FrameAccount { return settle(p, timeout) }

// settler is what settle drives: a Port, or a test's double of one.
type settler interface {
	Transmit([]*packet.Desc) (int, error)
	Frames() FrameAccount
}

func settle(p settler, timeout time.Duration) FrameAccount {
	deadline := time.Now().Add(timeout)
	for {
		p.Transmit(nil)
		if a := p.Frames(); a.AtRest() || time.Now().After(deadline) {
			return a
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Frames reports where the UMEM frames are. Call it from the goroutine
// that owns the Port (it reads the Port's cached ring indices).
func (p *Port) Frames() FrameAccount {
	var a FrameAccount
	if p.closed.Load() {
		return a
	}
	for _, s := range p.socks {
		s.account(&a)
	}
	a.LinkDown = p.txDown.Load()
	return a
}

// Close detaches the XDP program (if it is still ours), closes every
// socket, unmaps every ring and UMEM, and closes the program and maps.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ports.ErrClosed
	}
	p.final = p.statsLocked()
	p.closed.Store(true)
	err := p.teardown()
	p.log.Info("AF_XDP port closed", zap.Error(err))
	return err
}

// teardown undoes Open in reverse: no more redirects, then no sockets,
// then no program. It copes with a partly opened Port.
func (p *Port) teardown() error {
	var errs []error
	if p.watch != nil {
		close(p.watch)
		p.watched.Wait()
		p.watch = nil
	}
	if p.peer != nil {
		p.peer.ns.Close()
		p.peer = nil
	}
	if p.live != nil {
		errs = append(errs, p.live.close())
		p.live = nil
	}
	if p.xdp != nil {
		if err := p.xdp.Close(); err != nil {
			errs = append(errs, fmt.Errorf("afxdp: detach XDP program from %s: %w", p.name, err))
		}
		p.xdp = nil
	}
	for _, s := range p.socks {
		errs = append(errs, s.close())
	}
	p.socks, p.txSocks, p.pollfds = nil, nil, nil
	if p.prog != nil {
		errs = append(errs, p.prog.close())
		p.prog = nil
	}
	if p.stamps != nil && p.stamps.phc != nil {
		errs = append(errs, p.stamps.phc.Close())
		p.stamps.phc = nil
	}
	if p.ownUMEM && p.umem != nil {
		errs = append(errs, p.umem.Close())
		p.umem = nil
	}
	return errors.Join(errs...)
}

// permissionCure returns the sentence to append to a permission error.
func permissionCure(err error) string {
	if errors.Is(err, os.ErrPermission) {
		return ": run as root, or grant the binary CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK " +
			"(setcap cap_net_admin,cap_net_raw,cap_bpf,cap_ipc_lock+ep <binary>)"
	}
	return ""
}

const capIPCLock = 14

// hasCapability reports whether the process has capability bit c in its
// effective set (/proc/self/status CapEff).
func hasCapability(c uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<c) != 0
		}
	}
	return false
}

// raiseMemlock makes room for need bytes of UMEM under RLIMIT_MEMLOCK,
// which the kernel charges UMEM pages to unless the process has
// CAP_IPC_LOCK. If it cannot, UMEM registration fails with ENOBUFS and
// newXSK explains the cure.
func raiseMemlock(need uint64, log *zap.Logger) {
	if hasCapability(capIPCLock) {
		return
	}
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) != nil || r.Cur == unix.RLIM_INFINITY || r.Cur >= 2*need {
		return
	}
	want := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if unix.Setrlimit(unix.RLIMIT_MEMLOCK, &want) != nil {
		want = unix.Rlimit{Cur: r.Max, Max: r.Max}
		if unix.Setrlimit(unix.RLIMIT_MEMLOCK, &want) != nil {
			return
		}
	}
	log.Info("raised RLIMIT_MEMLOCK for the UMEM", zap.Uint64("from", r.Cur), zap.Uint64("to", want.Cur))
}

func memlockString() string {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) != nil {
		return "unknown"
	}
	if r.Cur == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(r.Cur, 10) + " bytes"
}
