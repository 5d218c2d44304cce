// Package afxdp is ecnswitch's own thin AF_XDP layer: a ports.Port that
// drives a Linux interface through one AF_XDP socket per RX queue, on
// golang.org/x/sys/unix, with its XDP redirect program built in assembly
// with github.com/cilium/ebpf (no clang).
//
// # Ring model
//
// Each socket has four single-producer/single-consumer rings shared with
// the kernel:
//
//	ring        producer   consumer   carries
//	fill        Port       kernel     empty frames for the kernel to receive into
//	RX          kernel     Port       received frames (address, length)
//	TX          Port       kernel     frames to send
//	completion  kernel     Port       frames sent, free again
//
// All four rings of a socket belong to the goroutine that owns the Port
// (ports.Port is used by one goroutine at a time), so no ring has two
// producers. On each ring the Port reads the kernel's index with an atomic
// load (acquire) and publishes its own with an atomic store (release),
// after writing or reading the entries — the barriers of af_xdp.rst — and
// keeps cached copies of both indices so the shared cache lines are touched
// about once per batch.
//
// # One UMEM for the whole switch
//
// Frames live in a UMEM (FrameSize-byte frames). By default a Port makes
// its own; with Options.UMEM every Port of a switch shares one
// (XDP_SHARED_UMEM: the first socket registers it, every later one binds
// on it with its own fill and completion ring), and the dataplane's frame
// arena comes from it too (UMEM.Frames). Each socket takes a reserve of
// Options.Frames frames; the rest belongs to whoever asked for it. From
// then on frames change hands only one for one:
//
//   - Receive gives the caller the received frame itself, and takes the
//     free frame the caller's descriptor held in exchange for the socket's
//     reserve (packet.Desc.Buf changes; no copy). A descriptor whose
//     buffer is not a frame of the UMEM gets a copy instead.
//   - Transmit through the socket puts the caller's frame itself on the TX
//     ring and gives the descriptor a frame of the reserve in exchange;
//     the frame rejoins the reserve from the completion ring.
//
// So a frame received on one port leaves on another without a copy in user
// space, and every holder keeps its count: at rest a socket's reserve is
// Free + Fill + Rx + Tx + Completion (Port.Frames). A one-byte state per
// frame (held in user space, on a fill/RX ring, on a TX/completion ring)
// checks every hand-back from the kernel and every frame a caller offers;
// FrameAccount.Violations counts frames returned twice or out of turn, as
// asavie/xdp#24 saw, and such a frame is never reused.
//
// # Transmitting live frames
//
// Copy-mode AF_XDP TX (veth, and NICs without zero-copy) builds an skb per
// frame, copies the frame into it and transmits it on its own: on veth each
// frame then runs the peer's receive in its own softirq, and the peer's XDP
// program, if any, copies the skb again. Transmit therefore sends a batch
// of at least Options.LiveMin frames as XDP live frames when the device
// takes redirected frames (its driver has ndo_xdp_xmit and the link is up;
// a veth, while its peer has an XDP program or GRO on): it writes one
// descriptor per frame (frame index, length) into a transmit queue it
// shares with the Port's XDP program (an mmapped BPF array), and runs the
// program once per frame with BPF_PROG_RUN and BPF_F_TEST_XDP_LIVE_FRAMES.
// The UMEM is itself an mmapable BPF array, so the program copies each
// frame straight from the UMEM into a kernel page-pool page and returns
// XDP_TX, which the kernel turns into a redirect out of the Port's
// interface, flushed in bulk every batch. The frames are copied when
// Transmit returns, so the caller keeps its descriptors' frames. Each call
// costs a fixed ~20 µs (the kernel builds and frees a page pool), so small
// batches take the socket. A watcher rechecks the device's capability
// (netdev netlink xdp-features, link state) every 100 ms and switches
// paths; Options.Transmit can force the socket (TxSocket) or require live
// frames (TxXDP).
//
// # XDP program
//
// The program (named ProgramName, "ecnsw_redirect") has two paths. A frame
// from the driver drops and counts frames longer than the usable frame
// (FrameSize − 256) — the kernel would drop them anyway, uncounted by
// cause — and otherwise calls bpf_redirect_map(xsks, rx_queue_index,
// XDP_PASS): frames of queues without a socket reach the kernel stack. A
// run of Transmit carries an 8-byte metadata word holding a random magic
// number of the program (no driver hands a program metadata, so no frame
// from the wire can take this path) and takes the transmit path above. One
// program serves both because BPF_PROG_RUN is cheap only for a program
// already in the kernel's XDP dispatcher, which an attached program is;
// running any other rewrites the dispatcher and waits for RCU on every
// call. It is attached through a BPF link (bpf_link_create), natively
// where the driver can (veth can), generically otherwise (Options.Attach;
// a fallback to generic mode is logged as a warning), and verified through
// netlink afterwards. The link's descriptor holds the attachment: Close
// closes it, and so does the kernel when the process dies however it dies
// (SIGKILL, a crash), so no program outlives its switch. The program keeps
// its owner (pid and process start time) in a map: Open removes an
// ecnswitch program whose owner is gone (left by a version that attached
// through netlink), refuses one whose owner lives (ErrInUse), and refuses
// anyone else's program unless Options.Force (ErrForeignProgram).
//
// # Pitfalls handled (notes/afxdp.md, measured on this project's hosts)
//
//   - Copy-mode TX moves at most the kick budget (32 by default) per
//     sendto and returns EAGAIN with the rest still queued; nothing else
//     moves it. Transmit therefore kicks until the TX ring is drained or the
//     kernel stops making progress, reaping completions between kicks, and
//     sets XDP_MAX_TX_SKB_BUDGET (Linux 6.17+; 256 by default, which took
//     veth from 0.6–0.7 to 0.97 Mpps) and ignores ENOPROTOOPT on older
//     kernels.
//   - need-wakeup (XDP_USE_NEED_WAKEUP) is always on: TX is kicked with a
//     non-blocking sendto, the fill ring with recvfrom when the driver sets
//     XDP_RING_NEED_WAKEUP, and Wait sleeps in ppoll.
//   - The kernel keeps 256 bytes (XDP_PACKET_HEADROOM) at the start of
//     every frame, so only FrameSize − 256 bytes are usable: Open refuses an
//     MTU with MTU + 14 + 4 above that, and, in generic mode, GRO or LRO
//     (which hand the hook aggregates far above the MTU).
//   - veth has native XDP but no zero-copy: with ZeroCopyAuto a zero-copy
//     bind is tried and copy mode used when the driver refuses; Info reports
//     the outcome (XDP_OPTIONS).
//   - Rebinding a queue right after Close returns EBUSY until the old
//     socket's asynchronous teardown ends; bind retries with bounded
//     back-off (up to 5 s).
//   - ENETDOWN, ENXIO and other errnos of the data path are returned as
//     *SyscallError, never a panic, and a repeated errno returns the same
//     error value so a retrying worker does not allocate.
//   - Close unmaps all four rings and closes every fd (and the UMEM, when
//     the Port made its own); a failed Open undoes whatever it had done.
//   - Sockets sharing a UMEM bind in the mode of its first socket (copy
//     or zero-copy, need-wakeup): give ports whose drivers differ their own
//     UMEMs.
//   - UMEM pages count against RLIMIT_MEMLOCK unless the process has
//     CAP_IPC_LOCK: Open raises the limit where it may and otherwise says
//     how to.
//
// # Why not asavie/xdp
//
// github.com/asavie/xdp v0.3.3 was measured on this project's hosts (DESIGN.md, "Why not
// asavie/xdp's data path"): its free-frame list is shared by RX and TX and
// marks received frames free while the caller still holds them (silent
// corruption; its issue #24 reports duplicate addresses on veth), its ring
// indices use plain loads and stores, Transmit panics on ENETDOWN/ENXIO,
// Poll and Stats panic on TX-only sockets, need-wakeup is ignored, ring
// mappings leak on Close, and Attach/Detach hang when a generic-mode
// program is attached. This package keeps asavie's vocabulary where it
// maps — fill (refill), Receive, Transmit, complete (reap), Poll (Wait) —
// so its users feel at home.
//
// # Use
//
// Open returns a *Port that implements ports.Port, ports.Waiter,
// ports.FDPoller and ports.StatsReporter. Receive and Transmit allocate
// nothing, and make only non-blocking system calls (sendto, recvfrom,
// bpf), issued raw so the calling worker keeps its Go scheduler P. AF_XDP
// exists only on Linux; elsewhere Open returns ErrNotSupported.
package afxdp
