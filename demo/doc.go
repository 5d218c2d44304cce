// Package demo replays the MQ-ECN paper's static-flow experiment (001
// §2.2.3 and §5.1.1, Fig. 3 and Fig. 6) on real kernel TCP through
// ecnswitch: `ecnswitch demo` and `make demo` run it.
//
// Run brings up a five-host testbed (package testbed) and, once per marking
// scheme, an ecnswitch on AF_XDP ports over its switch ends. Every egress
// port is the MQ-ECN testbed's (001 §5.1): shaped to 99.5% of 1 Gbit/s
// (the prototype's rate limiter, 001 §4.2), two DWRR queues of equal
// quantum, a 96 KB buffer both queues share first come first served, and
// the standard threshold K = 32 KB at 1 Gbit/s. The hosts run the MQ-ECN
// testbed's transport: DCTCP with a 10 ms RTO_min (001 §5.1), the kernel's
// DCTCP or, where it has none, testbed/dctcp's BPF struct_ops one; where
// neither loads, cubic stands in and the header says why. Host h1 sends
// one long-lived ECN-capable TCP flow in queue 1, hosts h2–h4 four flows in
// queue 2, all to h5, whose port is the bottleneck; the flows' DSCP selects
// the queue. The schemes, in the order they run:
//
//   - per-port ECN with the standard threshold: mark at enqueue when the
//     port holds at least K (001 §2.2.3);
//   - per-queue ECN with the standard threshold: mark when the packet's
//     queue holds at least K (001 §2.2.1);
//   - MQ-ECN: per-queue thresholds K·min(quantum_i/(C·T_round), 1), with
//     λ·C·RTT = K and the round-time EWMA β = 0.75 (001 §3.3, §5).
//
// Options.Schemes may add the other papers' markers on the same port
// (AllSchemes: per-queue minimum, PMSB, TCN, ECN♯), and Options.Sample
// records each queue's goodput and its flows' RTTs over time; package
// experiment's mqecn-static runs them all.
//
// For each it reports per-queue goodput and share, CE marks, drops and
// queueing delay (the switch's per-queue sojourn time), and where the
// window's time went (Load): each CPU's busy split from /proc/stat, the
// worker's own busy fraction, the senders' TCP_INFO limits, and the
// switch's drops by reason and packet kind (DropTap). A port busy less
// than MinBusy of the time is not comparable when the machine limited it
// (a saturated CPU, senders not cwnd-limited); otherwise its idle time is
// the scheme's and the transport's. The paper's point:
// per-port marking lets the queue with more flows take more than its half
// of the link, because the single flow of queue 1 is marked for queue 2's
// backlog (001 Observation 3); per-queue marking, and MQ-ECN, restore 1:1.
//
// Everything Run creates — namespaces, veth pairs, XDP programs, sockets —
// it removes before it returns, also when its context is cancelled (Ctrl-C
// in the command) or a step fails.
package demo
