// Package udp is a window-based reliable transport over UDP sockets for
// testbed hosts: the endpoints that carry DX's and DCTCP's congestion
// controls (package transport) through a real switch.
//
// A Sender sends numbered, fixed-size datagrams of one flow; a Receiver
// serves any number of flows on one socket and acknowledges the data
// packets it reads, coalescing the in-order packets of a flow that one
// read returns into one ACK (at most ackEvery of them), as a receiver with
// LRO does (004 §V-A):
//
//   - Sequence numbers count packets. An ACK is cumulative (the next
//     sequence the receiver expects) and names the packet that caused it.
//     The receiver keeps only in-order data (go-back-N): the sender
//     resends from the oldest unacknowledged packet after three duplicate
//     ACKs, which it reports to the congestion control as a loss, or on a
//     retransmission timeout, which it does not (a timeout is not
//     congestion, 004 §IV-B).
//   - Data leave with ECT(0), or a Prague sender's with ECT(1) (IP_TOS,
//     Codepoint). The receiver reads each packet's
//     ECN field (IP_RECVTOS) and echoes CE in the ACK that covers it; a
//     change of the CE state starts a new ACK, DCTCP's receiver rule with
//     delayed ACKs (Alizadeh et al. §3.1), so the sender learns exactly
//     which packets were marked.
//   - DX's stamps (004 §III, §V) ride in the UDP payload in
//     timestamp.Option's 14 bytes. A data packet carries t1, its send
//     time: the sender's clock just before the sendmmsg that sends it
//     (there is no TX stamp earlier than that in software). t2 is the
//     kernel's receive stamp (SO_TIMESTAMPNS, taken when the receiving
//     host's stack first sees the packet), or the time of the read when
//     the kernel gives none. The ACK carries the mean t2 − t1 of the
//     packets it covers, their count, and t3 − t2 of the newest, t3 its
//     send time; the sender takes t4 from the kernel's receive stamp of
//     the ACK the same way, so RTT = (t4 − t1) − (t3 − t2) and the
//     queueing delay is OWD − OWD_base through timestamp.Delay. The hosts
//     of a testbed share one clock (CLOCK_REALTIME, the clock of
//     SO_TIMESTAMPNS), so the OWD carries no offset; the estimator runs as
//     the paper's does anyway.
//   - A sender paces at most at its link rate with a token bucket of at
//     most 10 packets (004 §III, "Burst"), when Config.Rate is set.
//   - With Config.INTHops, data datagrams start with INT-MD headers
//     (package intmd) that ask each switch for HPCC's fields; a receiver
//     with ReceiverConfig.INT echoes the records in its ACKs, and the
//     sender hands them to its congestion control (transport.Ack.Hops):
//     HPCC's window law, which also paces at W/T (int.go).
//
// Sockets are read and written in batches (recvmmsg and sendmmsg through
// x/net/ipv4), so that one sender can keep a 1 Gbit/s port busy.
//
// # NDP
//
// NDPSender and NDPReceiver are a receiver-driven transport of messages
// in NDP's way (Handley et al., SIGCOMM 2017), for switches that trim
// (dataplane.Trim): the sender sends a first window at line rate
// unasked; the receiver ACKs what arrives whole, NACKs a trimmed header
// (a data datagram shorter than its size) at once, and for every arrival
// queues a PULL, which it sends paced at its link rate; each PULL lets
// the sender send one packet, NACKed ones first. A header lost outright
// is recovered by a retransmission timeout. ndp.go holds the state
// machines, without clock or socket; its package comment says what the
// model keeps of NDP and what it leaves out.
package udp
