// Package loadgen is ecnswitch's load generator: a traffic generator and
// sink over any ports.Port (AF_XDP in a testbed namespace or on a NIC,
// memory ports in tests), and their XDP forms, the live-frames generator
// (package xdpgen) and the counting sink (package xdpsink). Package bench
// drives them to compare devices; `ecnswitch bench gen` and `bench sink`
// run them on their own.
//
// # Frames
//
// A Generator sends Ethernet/IPv4/UDP frames. Frame sizes count the FCS,
// as RFC 2544 §9 does: a 64-byte frame is 60 bytes in a buffer
// (packet.Desc.Len) plus the 4 bytes a NIC appends, and bit rates count
// frames the same way (GeneratorConfig.Overhead adds L1Overhead, preamble
// and gap, for wire rates). The UDP payload starts with an 18-byte Header:
//
//	offset  size  field
//	0       2     Magic 0xEC5B
//	2       2     run id: a sink ignores other runs' frames (stale)
//	4       2     flow id, 0..Flows−1 (the UDP source port is SrcPort+flow)
//	6       4     sequence number in the flow, from 0 (extended to 64 bits by the sink)
//	10      8     TX time, ns of the shared clock
//
// which fills a 64-byte frame exactly. Sizes come from a weighted mix
// (ParseSizes; IMIX), and so do the DSCP and ECN codepoints: each
// (DSCP, ECN) pair is a class, and each flow belongs to one class, so a
// flow's frames always land in the same switch queue and a sink can count
// reordering per flow.
//
// # Clock
//
// One-way latency is the sink's receive time minus the TX time in the
// frame, so both must read one clock. timestamp.Monotonic counts from the
// process's own start and cannot be shared between processes; SystemClock
// reads CLOCK_MONOTONIC (calibrated once against clock_gettime, then as
// cheap as time.Since), which every process and network namespace of a
// machine shares. A PHCClock reads a NIC's PTP hardware clock instead, for
// stamps on a timescale phc2sys or PTP can keep in step with another
// PHC's. Stamps name their clock (StampClock), and CheckClocks tells
// whether a latency between two clocks means anything: one clock always;
// two PHCs only while their offset, measured through CLOCK_MONOTONIC, is
// within a limit (Latency.Checked withholds the figures otherwise).
//
// # Pacing
//
// The generator keeps a schedule: frame k is due at the start plus the
// time the rate allows for frames 0..k−1 (their bits at a bit rate, or
// k/pps), in integer nanoseconds with the division's remainder carried, so
// the schedule never drifts. Run sleeps (clock_nanosleep with a 1 ns timer
// slack) until Spin before the next frame is due, spins the rest, and
// sends every frame due within Gap of now in one batch: at rates above
// 1/Gap frames leave in batches, below it one by one. A late wake-up is
// made up at once, so the rate holds over any window much longer than Gap
// plus the wake-up error; after a stall longer than Burst (the process
// descheduled, the port full) the schedule beyond Burst is given up and
// counted (GeneratorStats.Late), so a generator that cannot keep its rate
// says so instead of bursting without bound. The zero Rate sends as fast
// as the port takes frames.
//
// # Live frames
//
// LiveGenerator sends the same frames on the same schedule as XDP live
// frames: package xdpgen's XDP program, run by BPF_PROG_RUN many times per
// system call, writes each frame's head from a per-thread cycle of
// precomputed frames (sizes, classes and flows in the Generator's
// order), its flow's sequence number and the TX time, and returns XDP_TX.
// One thread per CPU, pinned, each sending its own flows at its share of
// the rate. It needs a device that takes redirected frames (a veth whose
// peer has an XDP program or GRO on); `bench gen --mode auto` falls back
// to a Generator over AF_XDP elsewhere.
//
// # Sink
//
// A Sink counts, per flow: received frames; lost = sequence numbers from 0
// to the highest seen that never arrived (a reordered frame that fills a
// gap is not lost; a sink started after its generator counts what it
// missed as lost); reordered = first arrivals below the highest seen;
// duplicated = a sequence number seen again, detected with a bitmap of the
// last Window sequence numbers (an arrival older than that is counted as
// late and reordered, and cannot be checked); CE-marked. Latencies go into
// an HDR histogram (1 ns to 60 s, 3 significant digits). Run prints a
// progress line every second through SinkConfig.Progress; Report gives
// the totals and per-flow counters, as text or JSON.
//
// A Sink receives every frame in user space over a ports.Port; an
// XDPSink counts the same way in an XDP program attached to the device
// (package xdpsink: per CPU, frames dropped after counting, a random
// SinkConfig.Sample fraction's latency sent to user space), so it keeps
// up with whatever the device delivers. `bench sink --mode auto` uses it
// where the program attaches. Report.Mode says which counted.
package loadgen
