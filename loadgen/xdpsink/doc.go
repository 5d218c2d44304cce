// Package xdpsink counts a load generator's frames in XDP: an XDP program
// of its own (built with cilium/ebpf's asm, no compiler at build time),
// attached to the receiving device, parses each frame, counts it in
// per-CPU maps and drops it, so the sink keeps up with whatever the device
// delivers and never drops to measure.
//
// # Frames
//
// A counted frame is Ethernet (untagged, one 802.1Q/802.1ad tag or a pair)
// carrying IPv4 (options allowed, not a fragment) or IPv6 (UDP as the next
// header), carrying UDP whose payload starts with the 18-byte header of
// package loadgen, big-endian:
//
//	offset  size  field
//	0       2     Config.Magic
//	2       2     run id
//	4       2     flow id
//	6       4     sequence number in the flow
//	10      8     TX time, CLOCK_MONOTONIC ns
//
// Every frame is counted in Global.Packets and Global.Bytes (its length
// plus the 4-byte FCS a NIC strips). A frame that is not such a frame is
// passed to the kernel (XDP_PASS) and counted as Foreign; one whose
// headers are cut short or invalid (a runt, an IPv4 header shorter than
// 20 bytes or not version 4, a UDP header or a magic-marked header past
// the frame's end) is passed too and counted as Malformed as well. A
// frame of another run than Program.SetRun's is counted as Stale, one of
// a flow ≥ Config.Flows as Unknown; both are dropped (XDP_DROP), as is
// every counted frame.
//
// # Sequence numbers: received, lost, reordered, duplicated, late
//
// Each flow keeps, per CPU, the highest sequence number seen (top; 32-bit
// sequence numbers are extended to 64 bits as the one within 2^31 of top)
// and which of the Window sequence numbers top−Window+1..top it has seen,
// as IPsec anti-replay does (RFC 4303 §3.4.3) but without shifting: the
// bitmap is a ring of 64-bit blocks, each tagged with the block of
// sequence numbers it holds, as in RFC 6479, and a block found with
// another tag is simply empty, so sliding the window costs nothing. The
// ring has 2·Window/64 blocks, enough for any Window numbers below top. A
// frame is then:
//
//   - above top: new; top moves up to it (sequence numbers skipped are
//     not yet lost: a later frame may fill them);
//   - within the window and seen: a duplicate (counted, not received
//     again as unique);
//   - within the window and not seen: reordered (it arrived after a
//     higher one) and new;
//   - Window or more below top: late; it cannot be told from a duplicate
//     any more, so it is counted as reordered and new. A duplicate that
//     late is thus counted once more as unique (and lost undercounts by
//     one); a larger Window pushes that horizon back.
//
// Lost is then top+1 − unique: every sequence number from 0 to the
// highest that never arrived (a flow numbers its frames from 0, so a sink
// attached late counts those it missed as lost).
//
// # CPUs
//
// A device runs its receive path (and this program) on several CPUs, and
// each CPU counts in its own map entries, so no two CPUs write one cache
// line and the program needs no atomics. User space merges them on read
// (Program.Flows): received, unique, duplicated, reordered, late, CE and
// bytes are summed, top is the highest of any CPU, and so lost = top+1 −
// Σunique stays exact. A flow whose frames arrive on two CPUs (an RSS
// hash that moved, a NAPI thread that migrated, or frames spread over
// queues) keeps a window per CPU: received, lost, CE and bytes stay exact,
// but a frame is judged reordered or duplicated only against the frames
// of its own CPU, so reordering and duplicates across CPUs are missed
// (those counts are then lower bounds, and a duplicate split across CPUs
// counts as unique). Flow.CPUs says on how many CPUs a flow arrived, so a
// report can flag it.
//
// # Latency
//
// A Config.Sample fraction of the counted frames (chosen at random, by a
// xorshift64 generator per CPU, so no flow or pattern of the generator is
// favoured)
// goes to user space as a 24-byte Sample (flow, sequence number, TX time
// and the receive time read in XDP, CLOCK_MONOTONIC) through a BPF ring
// buffer: the frame itself is dropped as any other. When the ring is full
// the sample, not the frame, is lost, and counted (Global.SamplesLost).
package xdpsink
