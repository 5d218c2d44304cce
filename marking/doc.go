// Package marking holds ecnswitch's ECN markers: the Marker interface, the
// read-only View of queue state a marker decides on, chains of markers, and
// the schemes of the papers in ../shared/papers.
//
// # Model
//
// A marker sees one packet at one Stage — on Enqueue, before the packet
// joins its queue, or on Dequeue, when the scheduler has picked it and its
// sojourn time is known — and returns a Verdict: Pass, Mark (set CE) or
// Drop. Markers never reach into the scheduler or the buffer: everything
// they may use is a scalar in View (occupancies of the queue, the port and
// the shared pool; the queue's quantum and weight; the scheduler's round
// time; the line rate; now and the enqueue time), in the way quic-go's
// congestion controllers take numbers, not a connection. A marker serves one
// egress port and keeps per-queue state where its scheme needs it; it is
// used only by that port's worker, and takes the time as View.Now, never
// from a clock.
//
// A port runs one Chain per stage. A chain asks every member, marks when any
// member marks and drops when any drops (002 §IV-B), counts each member's
// votes, and applies the NonECT policy: a packet that would be marked but is
// not ECN-capable is dropped, as RED does, or passed.
//
// # Schemes
//
//   - RED / DCTCP (NewRED, CutOff, Minimum): K_min, K_max, P_max on the
//     queue, the port or the pool, instantaneous or EWMA; K_min = K_max is
//     DCTCP's cut-off, and Minimum splits a per-queue K as K_i = w_i/Σw·K
//     over the port's queues (001 §2.2.2 Eq. 2).
//   - MQ-ECN (NewMQECN): enqueue, K_i = min(quantum_i/T_round, C)·RTT·λ
//     under WRR and DWRR (001 §3.2–3.3, Eq. 4–6), w_i/w_sum·C·RTT·λ over
//     the backlogged queues under WFQ (001 §3.4).
//   - PMSB (NewPMSB, IgnoreMark): port threshold AND per-queue filter
//     threshold, at either stage (003 Algorithm 1); the end-host rule of
//     PMSB(e) (003 Algorithm 2).
//   - BCC (NewBCC): shared-pool RED with parameters derived from the buffer
//     plus per-port standard marking (002 §IV-B/C).
//   - TCN (NewTCN): dequeue, sojourn > T = λ·RTT (000 §2).
//   - CoDel (NewCoDel): dequeue, RFC 8289's control law, marking instead of
//     dropping (the baseline of 000 §2).
//   - ECN♯ (NewECNSharp): dequeue, instantaneous sojourn marking above
//     ins_target or persistent-queue marking (000 Algorithm 1, §3.2–3.4),
//     and the queue-length variant (000 §3.5).
//   - PIE (NewPIE): enqueue, RFC 8033's PI controller on the queue delay
//     with its auto-tuned gains, burst allowance and derandomization,
//     dropping or marking ECN-capable packets.
//   - PI2 (NewPI2): dequeue, RFC 9332 Appendix A.1's PI controller: Classic
//     packets see (p′)², L4S packets k·p′, drops on overload (§4.2.3,
//     Appendix A.2).
//   - DualPI2 (NewDualPI2): the coupled AQM of a DualQ port (RFC 9332 §2.4,
//     Appendix A): PI2 on the larger of the two queues' delays (the Classic
//     queue's in normal operation), coupled into the L4S queue's step; the
//     dataplane builds it for a port of scheduler.DualQ.
//
// Constructors validate their configuration, with errors that name the key
// and the allowed range, and refuse a stage their paper cannot use
// (ErrDequeueOnly, ErrEnqueueOnly). docs/marking.md documents every
// parameter with its unit, default and paper section.
//
// # Registry
//
// Each scheme also declares itself once, in its own file named after it
// (red.go, mqecn.go, …), as a Scheme: its name (the SchemeRED, SchemeMQECN,
// … constants) and aliases, its parameters with their units, defaults,
// ranges and paper sections, the stages it may sit at, and a constructor
// from a generic parameter set (Params) at a Placement. Schemes lists
// them and Lookup finds one by name. Everything that names schemes reads
// the registry: config decodes a marker's keys by it, the demo's presets
// and the closed-loop model take their names and titles from it, and
// docs/marking.md's parameter tables are generated from it. Scheme.New
// runs when a port is configured; the per-packet path only ever sees the
// Marker it returns.
//
// Adding a scheme takes its file — the marker, its typed constructor
// (NewX, XConfig) and xScheme() returning its Scheme — its entry in
// Schemes, its tests, and a section in docs/marking.md whose tables `go
// generate ./config` writes.
package marking
