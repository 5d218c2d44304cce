// Package closedloop runs the switch's markers in closed loop: window-based
// senders in virtual time drive the real pipeline (parse, forward, classify,
// buffer, markers, DWRR, shaper) on memory ports, and react to the CE marks
// it sets. It reproduces the static-flow experiments of the MQ-ECN paper:
// two equal-quantum DWRR queues with 1 and 4 long-lived flows (001 §2.2.3,
// Fig. 3; §5.1.1, Fig. 6) and N active queues sharing one port (001 §2.2.1,
// Fig. 1); and the RTT variation that ECN♯ is built for (000 §2.3, §5.2):
// flows whose base RTTs differ, thresholds set from the high-percentile RTT.
//
// # The sender model
//
// Each flow is a window of MSS-sized packets (1514-byte frames: IPv4, UDP,
// ECT(0), the DSCP of its queue, a flow id, sequence number and send time in
// the payload). A flow keeps cwnd packets in flight; the receiver's host
// echoes every data packet's CE bit back to the sender after the flow's
// return delay: half the base RTT, or with RTT variation (Scenario.RTTMax)
// whatever the flow's base RTT leaves after the forward links. The return
// path is modelled in the sender, not sent through the switch, so a flow's
// RTT is its base RTT (propagation on the links plus the return delay)
// plus the serialization and queueing on the forward path. Three congestion controls are modelled:
//
//   - ECN* (regular ECN-enabled TCP, λ = 1, 001 §2.2 footnote 2): on an ACK
//     echoing CE, halve cwnd, at most once per window of data (the sequence
//     number sent when the last reduction happened must be acknowledged
//     first, like TCP's CWR state); otherwise grow by one packet per RTT
//     (1/cwnd per ACK) after slow start.
//   - DCTCP (Alizadeh et al.): per window of ACKs F is the marked fraction
//     and α ← (1−g)·α + g·F with g = 1/16; on a marked ACK, at most once per
//     window, cwnd ← cwnd·(1 − α/2); otherwise the same additive increase.
//   - DX (004 §IV-B, transport.DX): once per round trip Q is the mean
//     queueing delay of the round's ACKs; Q = 0 (or below Scenario.Headroom)
//     grows cwnd by one, otherwise cwnd ← cwnd·(1 − Q/V), V = R·W*/(W*−1).
//     Each ACK's queueing delay comes from the one-way delay t2 − t1 and the
//     RTT, through timestamp.Delay, against a receiver clock 3 s behind the
//     senders' and drifting 40 ns/ms (004 §III): DX's estimator has to see
//     through both. DX ignores marks and losses; it runs on the Unmarked
//     scheme.
//
// cwnd never falls below two packets. A sequence gap seen by the receiver
// (a packet the switch dropped) is treated as a loss: cwnd halves, at most
// once per window, and the loss is counted; nothing is retransmitted, so
// goodput counts distinct delivered packets.
//
// # The switch
//
// One egress port (the bottleneck) is shaped at C by a token bucket of
// 2500 bytes (001 §4.2) charging Desc.Len, the frame without FCS, preamble
// and gap: C and every threshold are in frame bytes. Its queues are DWRR
// with equal quanta of one 1514-byte MTU (001 §5.1), classified by DSCP
// (queue q carries DSCP 8q, the default class-selector classifier). Each
// queue has its own sender host; hosts attach over 10 Gbit/s memory links,
// so the shaper is the only bottleneck. The buffer is one shared pool large
// enough (4 MB by default) that marking, not drops, controls the queue.
// The markers are built with the constructors of package marking from the
// scenario's λ, C and base RTT (see Scheme).
//
// Time advances event by event (flow starts, frame arrivals, ACK returns,
// queue samples) and, while the switch holds packets, in steps of 1 µs, so
// a shaped departure is at most one step late; the shaper's credit keeps
// the link rate exact.
package closedloop
