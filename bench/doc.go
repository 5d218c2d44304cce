// Package bench compares devices that forward frames, ecnswitch among
// them, on testbeds of its own: RunSwitch, the RFC 2544 forwarding
// benchmark of ecnswitch against DPDK testpmd, OVS and a Linux bridge,
// with package loadgen's generator and sink at the ends; RunTCP, real
// kernel TCP through ecnswitch, testpmd and a bridge; and LineMove, which
// times a cache line's move between two CPUs, to tell whether two runs on
// a VM can be compared.
//
// # The switch benchmark
//
// RunSwitch builds a two-host testbed: the generator on host 1's
// interface (XDP live frames, a loadgen.LiveGenerator on the first CPU,
// where the kernel runs them; else a loadgen.Generator on AF_XDP), the
// sink on host 2's (a loadgen.XDPSink, reset per trial, where its program
// attaches; else a loadgen.Sink on an AF_XDP port), and
// between their switch ends, in turn, each Device: ecnswitch with the
// full pipeline (PipelineConfig: classifier, 8 DWRR queues, RED),
// ecnswitch as a bare patch (PatchConfig), DPDK testpmd over two
// net_af_xdp ports (skipped when not installed), and a Linux bridge over
// the same two veth ends with ecnswitch stopped. With live frames the
// generator's veth peer runs its NAPI in a thread of its own, so that the
// device, not the generator, limits each row (Result.BoundBy). For each
// device and frame size it runs:
//
//   - the unpaced trial: the maximum forwarding rate, i.e. what reaches
//     the sink when the generator sends as fast as it can (a);
//   - a sweep at fractions of that offered rate (SwitchOptions.Sweep), for
//     the offered-vs-forwarded and latency curves;
//   - a binary search between the highest zero-loss and the lowest lossy
//     rate for the RFC 2544 throughput (§26.1), the highest offered rate
//     with no loss (b), bounded by Iterations and Resolution.
//
// Every trial sends for SwitchOptions.Trial (default 1 s; RFC 2544 asks
// for 60 s, too long for a run of minutes) and then waits up to Drain for
// frames in flight; loss is frames sent minus distinct frames received.
// When even the unpaced trial loses nothing, the device outruns the
// generator and its throughput is reported as "≥" the generator's rate.
// On a two-core machine the generator, the sink, the switch worker and
// the kernel's softirq work share the cores, so absolute numbers are low
// and noisy; the devices are measured side by side on the same path so
// that their ratios mean something. SwitchReport.Write renders report.md,
// results.json and PNG plots (gonum.org/v1/plot).
//
// # A device that is not ours
//
// With SwitchOptions.External, RunSwitch measures instead a device wired
// between two interfaces of this machine (a hardware switch, a bridge or
// OVS on another server): no testbed, no ecnswitch, the same trials, one
// report row. CheckInterfaces refuses interfaces that are missing, the
// same, down, or look like the host's management interface (a default
// route, the gateway's subnet, an SSH session) unless forced; nothing on
// them changes but the programs and sockets the run attaches and
// removes. A learning frame from the sink's interface before every trial
// (SendLearn) teaches an L2 switch where the sink is. TX and RX stamps
// are on CLOCK_MONOTONIC, or on the two interfaces' PHCs; latency across
// two PHCs is reported only while loadgen.CheckClocks finds them within
// External.ClockLimit of each other.
package bench
