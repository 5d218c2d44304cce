// Package transport holds the congestion controls of ecnswitch's traffic
// endpoints, each a window law over plain numbers (the ACK's sequence
// number, its CE echo, the queueing delay measured for it), with no clock
// and no socket of its own, like quic-go's congestion package:
//
//   - DX (paper 004 §IV-B): once per round trip, Q is the mean queueing
//     delay the round's ACKs carried; below the headroom the window grows
//     by one packet, otherwise it shrinks to cwnd·(1 − Q/V) with
//     V = R·W*/(W* − 1) (Eq. 8). Losses and timeouts are not congestion.
//   - DCTCP (Alizadeh et al., SIGCOMM 2010): α ← (1 − g)·α + g·F once per
//     window of ACKs, F the marked fraction, g = 1/16; on a marked ACK, at
//     most once per window, cwnd ← cwnd·(1 − α/2).
//   - ECN* (regular ECN TCP): halve on a marked ACK, at most once per
//     window.
//   - HPCC (Li et al., SIGCOMM 2019, §3.3, Algorithm 1): every ACK echoes
//     the in-band telemetry records of the packet it acknowledges (queue
//     length, bytes sent, time and rate of every hop); the utilisation
//     U = qlen/(B·T) + txRate/B of the most loaded hop, smoothed over T,
//     sets W = W^c/(U/η) + W_AI when U ≥ η or after maxStage additive
//     increases, else W = W^c + W_AI; W^c moves once per round trip.
//   - Prague (TCP Prague, RFC 9331 §4.3's scalable sender): DCTCP's α and
//     cut, growth by every unmarked packet also while a cut is
//     acknowledged, Reno's halving on loss, and optionally RTT
//     independence: a flow shorter than the virtual RTT Target grows and
//     cuts as if its RTT were Target.
//
// The queueing delay DX needs comes from timestamp.Delay, which turns the
// one-way delays of unsynchronised clocks into queueing (004 §III).
//
// transport/udp carries these laws over UDP sockets, and beside them NDP,
// a receiver-driven transport with no window law: the receiver's paced
// pulls are its congestion control.
package transport
