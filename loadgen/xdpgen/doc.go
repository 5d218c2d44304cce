// Package xdpgen sends generated frames as XDP live frames: an XDP program
// of its own (built with cilium/ebpf's asm, no compiler at build time)
// run with BPF_PROG_RUN and BPF_F_TEST_XDP_LIVE_FRAMES, many times per
// call, stamps each frame and returns XDP_TX (or redirects it), so the
// kernel sends it out of a device through the driver's ndo_xdp_xmit,
// without a socket or an skb.
//
// The caller describes the frames as a cycle per thread (Config.Cycles):
// each Entry is a frame's first HeadLen bytes, its length and its flow.
// Run by thread t, the program takes the next entry of t's cycle, writes
// its head over the frame (resized to its length), the flow's next
// sequence number (big-endian u32 at Config.SeqOff) and the time
// (CLOCK_MONOTONIC ns, big-endian u64 at Config.TimeOff), counts the frame
// in t's counters and returns XDP_TX. Counters and sequence numbers are
// the thread's own (each thread on its own CPU, its flows its own), so
// the program needs no atomics.
//
// Each BPF_PROG_RUN call makes a page pool for its frames, and the kernel
// releases pools whose frames are still in flight late (a kworker, and a
// 16-bit pool of memory-model IDs that short calls exhaust: ENOSPC). So
// every thread runs the program in one long call (repeat in the
// billions) that Runner.Interrupt ends. Paced (Entry.Cost, Program.Schedule),
// the program itself keeps the schedule: it reads the clock on every run
// and drops, rather than sends, the runs before the next frame is due, so
// a paced thread spins on its CPU as a DPDK generator's core does.
package xdpgen
