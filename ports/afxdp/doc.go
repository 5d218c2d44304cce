// Package afxdp is ecnswitch's own thin AF_XDP layer: a ports.Port that
// drives a Linux interface through one AF_XDP socket per RX queue, on
// golang.org/x/sys/unix, with its XDP redirect program built in assembly
// with github.com/cilium/ebpf (no clang).
//
// # Ring model
//
// Each socket has its own UMEM (Options.Frames frames of FrameSize bytes)
// and four single-producer/single-consumer rings shared with the kernel:
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
// A frame's life: free (on the socket's LIFO stack, O(1) push and pop) →
// fill ring → (kernel copies a packet in at frame + 256) → RX ring →
// Receive copies it into the caller's packet.Desc.Buf → free → …; or free →
// Transmit copies the caller's frame in → TX ring → (kernel sends) →
// completion ring → reaped → free. Because ports.Port copies in both
// directions, the dataplane never holds a UMEM frame: every frame is on the
// free stack or on exactly one ring, and a one-byte state per frame checks
// each hand-back from the kernel (FrameAccount.Violations counts frames
// returned twice or out of turn, as asavie/xdp#24 saw, and such a frame is
// never reused). Port.Frames reports the account; at rest
// Free + Fill + Rx + Tx + Completion = Total. Options.FillRingSize frames
// are kept on the fill and RX rings; the rest (at least TxRingSize, which
// Validate enforces) serve TX, so a full fill ring never starves TX.
//
// # XDP program
//
// The program (named ProgramName, "ecnsw_redirect") drops and counts frames
// longer than the usable frame (FrameSize − 256) — the kernel would drop
// them anyway, uncounted by cause — and otherwise calls
// bpf_redirect_map(xsks, rx_queue_index, XDP_PASS): frames of queues
// without a socket reach the kernel stack. It is attached with the legacy
// netlink attach, natively where the driver can (veth can), generically
// otherwise (Options.Attach), with XDP_FLAGS_UPDATE_IF_NOEXIST, and
// verified through netlink afterwards. Close detaches it if it is still
// ours. A netlink attach outlives a crashed process, so the program keeps
// its owner (pid and process start time) in a map: Open removes an
// ecnswitch program whose owner is gone, refuses one whose owner lives
// (ErrInUse), and refuses anyone else's program unless Options.Force
// (ErrForeignProgram). Detaching passes the mode flags of the mode the
// program is attached in.
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
//   - Close unmaps the UMEM and all four rings and closes every fd; a
//     failed Open undoes whatever it had done.
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
// ports.FDPoller and ports.StatsReporter. Receive and Transmit allocate nothing. AF_XDP
// exists only on Linux; elsewhere Open returns ErrNotSupported.
package afxdp
