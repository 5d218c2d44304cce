package afxdp

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Sentinel errors. Errors returned by Open wrap one of these, or the
// system call's errno (so errors.Is(err, os.ErrPermission) works), together
// with a sentence that names the cure.
var (
	// ErrNotSupported reports a platform, kernel or driver without a feature
	// the options require (AF_XDP itself off Linux, native XDP, zero-copy).
	ErrNotSupported = errors.New("not supported")

	// ErrForeignProgram reports that another program's XDP program is
	// attached to the interface; Open replaces it only with Options.Force.
	ErrForeignProgram = errors.New("foreign XDP program attached")

	// ErrInUse reports that a live ecnswitch Port (in this or another
	// process) already drives the interface.
	ErrInUse = errors.New("interface already driven by ecnswitch")

	// ErrUMEMMode reports that a socket could not bind on a shared UMEM
	// because its driver cannot work in the UMEM's mode (zero-copy or
	// copy, fixed by the UMEM's first socket); the Port can open with a
	// UMEM of its own instead.
	ErrUMEMMode = errors.New("driver cannot share the UMEM's mode")
)

// AttachMode selects how the XDP redirect program is attached.
type AttachMode uint8

// Attach modes.
const (
	// AttachAuto tries native (driver) mode and falls back to generic.
	AttachAuto AttachMode = iota
	// AttachNative requires native (driver) mode; veth supports it.
	AttachNative
	// AttachGeneric uses generic (SKB) mode, which works on every device
	// but costs an skb per frame and lets GRO aggregates reach the hook.
	AttachGeneric
)

// String returns "auto", "native" or "generic".
func (m AttachMode) String() string {
	switch m {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	default:
		return fmt.Sprintf("AttachMode(%d)", uint8(m))
	}
}

// ZeroCopyMode selects whether sockets bind in zero-copy or copy mode.
type ZeroCopyMode uint8

// Zero-copy modes.
const (
	// ZeroCopyAuto requests zero-copy (XDP_ZEROCOPY) when the program is
	// attached natively and falls back to copy mode (XDP_COPY) when the
	// driver refuses, as veth does.
	ZeroCopyAuto ZeroCopyMode = iota
	// ZeroCopyOff always binds in copy mode.
	ZeroCopyOff
	// ZeroCopyOn requires zero-copy; Open fails with ErrNotSupported
	// where the driver lacks it.
	ZeroCopyOn
)

// String returns "auto", "off" or "on".
func (m ZeroCopyMode) String() string {
	switch m {
	case ZeroCopyAuto:
		return "auto"
	case ZeroCopyOff:
		return "off"
	case ZeroCopyOn:
		return "on"
	default:
		return fmt.Sprintf("ZeroCopyMode(%d)", uint8(m))
	}
}

// TxPath selects how a Port transmits.
type TxPath uint8

// Transmit paths.
const (
	// TxAuto, on a veth whose socket copies, sends batches of at least
	// LiveMin frames as XDP live frames while the device takes redirected
	// frames (a veth, while its peer has an XDP program or GRO on, and the
	// link is up), and everything else through the socket's TX ring. On
	// any other device, or a zero-copy socket, it is TxSocket.
	TxAuto TxPath = iota
	// TxSocket always transmits through the AF_XDP socket's TX ring.
	TxSocket
	// TxXDP is TxAuto on any device whose driver has ndo_xdp_xmit, and
	// Open refuses it where the device cannot take redirected frames.
	TxXDP
)

// String returns "auto", "socket" or "xdp".
func (t TxPath) String() string {
	switch t {
	case TxAuto:
		return "auto"
	case TxSocket:
		return "socket"
	case TxXDP:
		return "xdp"
	default:
		return fmt.Sprintf("TxPath(%d)", uint8(t))
	}
}

// RxStampMode selects hardware receive timestamps: a device-bound XDP
// program that asks the driver for each frame's stamp
// (bpf_xdp_metadata_rx_timestamp) and puts it in the metadata in front of
// the frame, where Receive reads it.
//
// BPF_PROG_RUN cannot run a device-bound program (EINVAL), so a Port that
// loads one transmits through its sockets (TxSocket), and says so in its
// log.
type RxStampMode uint8

// Receive-stamp modes.
const (
	// RxStampAuto loads the device-bound program where the stamps can be
	// used: the driver reports the RX-metadata timestamp (netdev
	// xdp-rx-metadata-features), the device has a PTP hardware clock to
	// read them against (ethtool -T), and Transmit is not TxXDP. Elsewhere
	// (veth has no PHC) the dataplane stamps frames as it receives them.
	RxStampAuto RxStampMode = iota
	// RxStampOff never loads the device-bound program.
	RxStampOff
	// RxStampOn loads it wherever the driver has the RX-metadata
	// timestamp, PHC or not (to see what the driver gives: veth gives 0,
	// which means none); Open fails where the driver lacks it. Frames
	// without a usable stamp still get the dataplane's.
	RxStampOn
)

// String returns "auto", "off" or "on".
func (m RxStampMode) String() string {
	switch m {
	case RxStampAuto:
		return "auto"
	case RxStampOff:
		return "off"
	case RxStampOn:
		return "on"
	default:
		return fmt.Sprintf("RxStampMode(%d)", uint8(m))
	}
}

// Defaults and limits of Options.
const (
	DefaultFrames    = 4096 // UMEM frames per socket
	DefaultFrameSize = 2048 // bytes per UMEM frame
	DefaultRingSize  = 2048 // descriptors in each of the four rings
	DefaultTxBudget  = 256  // XDP_MAX_TX_SKB_BUDGET; 0.97 Mpps vs 0.6–0.7 at the kernel's 32 (notes/afxdp.md §2.3)
	DefaultLiveMin   = 16   // the batch at which live frames beat the socket (see doc.go)
	MaxLiveMin       = 256  // the most frames one live-frames call sends

	// Headroom is XDP_PACKET_HEADROOM, the bytes the kernel reserves at
	// the start of every UMEM frame on receive. The usable frame is
	// FrameSize − Headroom: 1792 bytes at 2048, 3840 at 4096.
	Headroom = 256

	MaxFrameSize = 4096 // bytes per UMEM frame: a page; FrameSize is DefaultFrameSize or this
	MinRingSize  = 64
	MaxRingSize  = 1 << 16
	MinFrames    = 128
	MaxFrames    = 1 << 18
	MinTxBudget  = 32 // the kernel's TX_BATCH_SIZE, the lowest budget it accepts

	maxUMEMFrames = 1 << 22
)

// Options configure a Port. The zero value of every field selects its
// default, so Options{} is a valid configuration.
type Options struct {
	// Queues lists the RX queues to open a socket on. Nil or empty means
	// every RX queue the interface has (ETHTOOL_GCHANNELS rx + combined,
	// else the count of /sys/class/net/<if>/queues/rx-*).
	Queues []int

	// Frames is the number of UMEM frames per socket (UMEM size =
	// Frames × FrameSize). A power of two in [128, 262144], at least
	// FillRingSize + TxRingSize so that a full fill ring never starves TX.
	// Default 4096.
	Frames int

	// FrameSize is the UMEM frame (chunk) size: 2048 or 4096 bytes.
	// Default 2048. Received frames must fit FrameSize − Headroom.
	FrameSize int

	// FillRingSize, CompletionRingSize, RxRingSize and TxRingSize are the
	// ring sizes in descriptors: powers of two in [64, 65536].
	// CompletionRingSize must be at least TxRingSize. Default 2048 each.
	FillRingSize       int
	CompletionRingSize int
	RxRingSize         int
	TxRingSize         int

	// TxBudget is the most descriptors one copy-mode TX kick sends
	// (XDP_MAX_TX_SKB_BUDGET, Linux 6.17+; older kernels keep 32). In
	// [32, TxRingSize]; default min(256, TxRingSize).
	TxBudget int

	// Attach selects native or generic XDP; default AttachAuto.
	Attach AttachMode

	// ZeroCopy selects zero-copy or copy sockets; default ZeroCopyAuto.
	ZeroCopy ZeroCopyMode

	// TxHash spreads transmitted frames over the queues' sockets by
	// packet.Desc.FlowHash. By default every frame leaves on the socket of
	// the first queue, which keeps one flow's frames in order trivially.
	TxHash bool

	// UMEM is the frame memory to share with other Ports (and the
	// dataplane's arena); nil gives the Port a UMEM of its own. The Port
	// takes Frames frames per queue, plus 256 for transmit scratch, from
	// it. FrameSize must be 0 or the UMEM's.
	UMEM *UMEM

	// Transmit selects the transmit path; default TxAuto.
	Transmit TxPath

	// LiveMin is the smallest batch Transmit sends as XDP live frames, in
	// [1, 256]; smaller batches go through the socket, which costs less
	// for a few frames. Default DefaultLiveMin.
	LiveMin int

	// RxStamp selects hardware receive timestamps; default RxStampAuto.
	RxStamp RxStampMode

	// RxStampRaw leaves hardware receive stamps on the device's PHC
	// instead of putting them onto CLOCK_MONOTONIC: for a load tester's
	// sink comparing them with TX stamps read from another PHC that
	// phc2sys or PTP keeps in step with this one (RxClock names the
	// PHC). The dataplane never sets it: it runs on CLOCK_MONOTONIC.
	// Needs RxStamp auto or on.
	RxStampRaw bool

	// TxStamps asks the kernel for every transmitted frame's completion
	// stamp (XSK TX metadata, Linux 6.8+): the NIC's where its driver
	// has xsk_tx_metadata_ops, in copy mode the kernel's CLOCK_TAI when
	// the device lets go of the frame. TxStamps counts them and the
	// device's transmit latency. Live frames have no completion, so the
	// Port then transmits through its sockets. Default off.
	TxStamps bool

	// Force lets Open replace an XDP program that is not ecnswitch's.
	Force bool

	// Logger receives lifecycle events (attach mode, leftover removal,
	// fallbacks). Default zap.NewNop().
	Logger *zap.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Frames == 0 {
		o.Frames = DefaultFrames
	}
	if o.FrameSize == 0 {
		o.FrameSize = DefaultFrameSize
		if o.UMEM != nil {
			o.FrameSize = o.UMEM.FrameSize()
		}
	}
	if o.LiveMin == 0 {
		o.LiveMin = DefaultLiveMin
	}
	if o.FillRingSize == 0 {
		o.FillRingSize = DefaultRingSize
	}
	if o.CompletionRingSize == 0 {
		o.CompletionRingSize = DefaultRingSize
	}
	if o.RxRingSize == 0 {
		o.RxRingSize = DefaultRingSize
	}
	if o.TxRingSize == 0 {
		o.TxRingSize = DefaultRingSize
	}
	if o.TxBudget == 0 {
		o.TxBudget = min(DefaultTxBudget, o.TxRingSize)
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// Validate reports the first invalid field of o after defaults are
// applied, naming the field, its value and the allowed range.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.FrameSize != DefaultFrameSize && o.FrameSize != MaxFrameSize {
		return fmt.Errorf("afxdp: FrameSize = %d: must be %d or %d", o.FrameSize, DefaultFrameSize, MaxFrameSize)
	}
	rings := [...]struct {
		name string
		v    int
	}{
		{"FillRingSize", o.FillRingSize},
		{"CompletionRingSize", o.CompletionRingSize},
		{"RxRingSize", o.RxRingSize},
		{"TxRingSize", o.TxRingSize},
	}
	for _, r := range rings {
		if !isPow2(r.v) || r.v < MinRingSize || r.v > MaxRingSize {
			return fmt.Errorf("afxdp: %s = %d: must be a power of two in [%d, %d]", r.name, r.v, MinRingSize, MaxRingSize)
		}
	}
	if o.CompletionRingSize < o.TxRingSize {
		return fmt.Errorf("afxdp: CompletionRingSize = %d: must be at least TxRingSize (%d), or TX stalls on a full completion ring",
			o.CompletionRingSize, o.TxRingSize)
	}
	if !isPow2(o.Frames) || o.Frames < MinFrames || o.Frames > MaxFrames {
		return fmt.Errorf("afxdp: Frames = %d: must be a power of two in [%d, %d]", o.Frames, MinFrames, MaxFrames)
	}
	if o.Frames < o.FillRingSize+o.TxRingSize {
		return fmt.Errorf("afxdp: Frames = %d: must be at least FillRingSize + TxRingSize = %d",
			o.Frames, o.FillRingSize+o.TxRingSize)
	}
	if o.TxBudget < MinTxBudget || o.TxBudget > o.TxRingSize {
		return fmt.Errorf("afxdp: TxBudget = %d: must be in [%d, TxRingSize = %d]", o.TxBudget, MinTxBudget, o.TxRingSize)
	}
	if o.UMEM != nil && o.UMEM.FrameSize() != o.FrameSize {
		return fmt.Errorf("afxdp: FrameSize = %d: the UMEM's frames are %d bytes", o.FrameSize, o.UMEM.FrameSize())
	}
	if o.Transmit > TxXDP {
		return fmt.Errorf("afxdp: Transmit = %d: must be TxAuto, TxSocket or TxXDP", uint8(o.Transmit))
	}
	if o.LiveMin < 1 || o.LiveMin > MaxLiveMin {
		return fmt.Errorf("afxdp: LiveMin = %d: must be in [1, %d]", o.LiveMin, MaxLiveMin)
	}
	if o.Attach > AttachGeneric {
		return fmt.Errorf("afxdp: Attach = %d: must be AttachAuto, AttachNative or AttachGeneric", uint8(o.Attach))
	}
	if o.ZeroCopy > ZeroCopyOn {
		return fmt.Errorf("afxdp: ZeroCopy = %d: must be ZeroCopyAuto, ZeroCopyOff or ZeroCopyOn", uint8(o.ZeroCopy))
	}
	if o.ZeroCopy == ZeroCopyOn && o.Attach == AttachGeneric {
		return errors.New("afxdp: ZeroCopy = on with Attach = generic: zero-copy needs the program attached natively")
	}
	if o.RxStamp > RxStampOn {
		return fmt.Errorf("afxdp: RxStamp = %d: must be RxStampAuto, RxStampOff or RxStampOn", uint8(o.RxStamp))
	}
	if o.RxStamp == RxStampOn && o.Attach == AttachGeneric {
		return errors.New("afxdp: RxStamp = on with Attach = generic: the device-bound program that reads hardware stamps attaches natively only")
	}
	if o.RxStampRaw && o.RxStamp == RxStampOff {
		return errors.New("afxdp: RxStampRaw with RxStamp = off: there are no hardware stamps to leave on the PHC")
	}
	if o.TxStamps && o.Transmit == TxXDP {
		return errors.New("afxdp: TxStamps with Transmit = xdp: live frames have no completion to stamp; use Transmit auto or socket")
	}
	if o.RxStamp == RxStampOn && o.Transmit == TxXDP {
		return errors.New("afxdp: RxStamp = on with Transmit = xdp: BPF_PROG_RUN cannot run the device-bound program hardware stamps need; " +
			"use Transmit auto or socket")
	}
	seen := make(map[int]bool, len(o.Queues))
	for i, q := range o.Queues {
		if q < 0 {
			return fmt.Errorf("afxdp: Queues[%d] = %d: must be ≥ 0 and below the interface's RX queue count", i, q)
		}
		if seen[q] {
			return fmt.Errorf("afxdp: Queues[%d] = %d: listed twice", i, q)
		}
		seen[q] = true
	}
	return nil
}

// UMEMFrames returns the frames a Port with these options takes from a
// shared UMEM (Options.UMEM) when it opens sockets on queues RX queues:
// each socket's reserve, plus the scratch frames of live-frames transmit.
func (o Options) UMEMFrames(queues int) int {
	o = o.withDefaults()
	if len(o.Queues) > 0 {
		queues = len(o.Queues)
	}
	return queues*o.Frames + MaxLiveMin // the live-frames scratch: one call's worth
}

// UsableFrame is the largest frame, in bytes, a socket with this frame
// size can receive or transmit: frameSize − Headroom.
func UsableFrame(frameSize int) int { return frameSize - Headroom }

// Info describes an open Port: what Open found and chose.
type Info struct {
	Interface   string     // interface name
	Ifindex     int        // interface index
	Queues      []int      // RX queues with a socket, in receive order
	Attach      AttachMode // AttachNative or AttachGeneric: the mode verified after attach
	ZeroCopy    bool       // sockets bound in zero-copy mode (XDP_OPTIONS_ZEROCOPY)
	NeedWakeup  bool       // sockets bound with XDP_USE_NEED_WAKEUP
	TxBudget    int        // XDP_MAX_TX_SKB_BUDGET set; 0 when the kernel lacks it (budget 32)
	ProgramID   uint32     // kernel ID of the attached ecnsw_redirect program
	Frames      int        // UMEM frames per socket
	FrameSize   int        // UMEM frame size
	UsableFrame int        // FrameSize − Headroom
	MTU         int        // interface MTU at Open
	SharedUMEM  bool       // the sockets use a UMEM shared with other Ports
	Transmit    TxPath     // TxXDP or TxSocket: the path a batch of LiveMin frames took at Open
	LiveMin     int        // Options.LiveMin
	// RxMetadata is true when the Port's program is device-bound and
	// hands Receive the driver's hardware stamp of every frame.
	RxMetadata bool
	// RxMetadataFeatures and XSKFeatures are what the driver reports it
	// can hand XDP programs and AF_XDP sockets (netdev netlink
	// xdp-rx-metadata-features: timestamp, hash, vlan-tag; xsk-features:
	// tx-timestamp, tx-checksum, tx-launch-time-fifo); nil where the
	// kernel lacks the netdev family.
	RxMetadataFeatures, XSKFeatures []string
	// TxMetadata is true when the Port asks for completion stamps
	// (Options.TxStamps and a UMEM registered with TX metadata).
	TxMetadata bool
	// PHC is the device's PTP hardware clock (/dev/ptpN), -1 for none.
	// Hardware stamps are used only when there is one to read them against.
	PHC int
}

// RxStampStats count what became of hardware receive stamps.
type RxStampStats struct {
	Hardware uint64 // frames Receive gave a hardware stamp
	None     uint64 // frames the device gave no stamp (0), or that had no PHC to read it against
	NoRoom   uint64 // frames the program dropped for want of metadata room (also in Stats().RxDropped)
	SyncErrs uint64 // failed PHC offset measurements
}

// TxStampStats count the completion stamps of transmitted frames.
type TxStampStats struct {
	Stamped uint64 // frames completed with a stamp
	Missing uint64 // frames completed without one (the driver gave none)
	// MeanLatency and MaxLatency are from Transmit putting a frame on
	// the TX ring to its completion stamp: the device's transmit delay.
	MeanLatency, MaxLatency time.Duration
}

// QueueStats are the counters of one queue's socket.
type QueueStats struct {
	Queue       int           // RX queue index
	RxPackets   uint64        // frames handed to Receive's callers
	RxBytes     uint64        // their bytes
	RxOversize  uint64        // frames dropped for not fitting a descriptor's Buf
	RxCopied    uint64        // frames copied into the caller's buffer (not exchanged: it was not a UMEM frame)
	TxPackets   uint64        // frames queued by Transmit on this socket
	TxBytes     uint64        // their bytes
	TxCopied    uint64        // of those, frames copied in (not exchanged: not a free UMEM frame)
	TxCompleted uint64        // frames the kernel reported sent
	TxErrors    uint64        // frames Transmit dropped as larger than the usable frame
	Kernel      XDPStatistics // the socket's XDP_STATISTICS
}

// XDPStatistics are the kernel's per-socket counters (getsockopt
// XDP_STATISTICS).
type XDPStatistics struct {
	RxDropped        uint64 // dropped by the kernel: no fill frame, or larger than the usable frame
	RxInvalidDescs   uint64 // fill descriptors the kernel rejected
	RxRingFull       uint64 // dropped because the RX ring was full
	RxFillRingEmpty  uint64 // times the kernel found the fill ring empty
	TxInvalidDescs   uint64 // TX descriptors the kernel rejected
	TxRingEmptyDescs uint64 // times the kernel found the TX ring empty
}

// FrameAccount says where a Port's UMEM frames are, summed over its
// sockets' reserves. Receive and Transmit exchange frames one for one, so
// a reserve keeps its size whatever the caller holds:
// Free + Fill + Rx + Tx + Completion + InKernel() == Total, where InKernel
// counts the frames the kernel is moving from one ring to the next.
type FrameAccount struct {
	Total      int // frames in the sockets' reserves
	Free       int // on the free-frame stacks
	Fill       int // on fill rings, waiting for the kernel
	Rx         int // on RX rings, waiting for Receive
	Tx         int // on TX rings, waiting for the kernel
	Completion int // on completion rings, waiting to be reaped
	// Driver is the part of InKernel the kernel took from the fill rings
	// and has not put on an RX ring: in copy mode only in passing, but a
	// zero-copy driver keeps them in its hardware RX ring (up to its size)
	// also when no traffic moves.
	Driver int
	// LinkDown says that the last kick found the link administratively
	// down: the frames on its TX rings wait for it (see Port.Transmit).
	LinkDown bool
	// Violations counts frames the kernel handed back that were not in
	// the state the Port expected (e.g. the same frame twice); it must
	// stay 0. Such frames are not reused.
	Violations uint64
}

// InKernel is the number of frames the kernel holds between rings.
func (a FrameAccount) InKernel() int {
	return a.Total - a.Free - a.Fill - a.Rx - a.Tx - a.Completion
}

// AtRest reports whether the kernel holds no frame but those a driver
// keeps for receiving (Driver) and, while the link is down, those on the
// TX rings: what a stopped switch leaves when every transmitted frame has
// completed.
func (a FrameAccount) AtRest() bool {
	return a.InKernel() == a.Driver && (a.LinkDown || a.Tx == 0 && a.Completion == 0)
}
