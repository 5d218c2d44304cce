// Package scheduler holds an egress port's queues, the discipline that
// picks which of them sends next, the token-bucket shaper that makes the
// port drain at an emulated line rate, and the round time T_round and
// per-queue quanta that MQ-ECN's marker needs.
//
// # The model
//
// A port has 1 to 64 queues (8 by default), each a FIFO ring of
// *packet.Desc whose capacity is fixed at construction and rounded up to a
// power of two. [Scheduler.Enqueue] appends to queue d.Queue and fails only
// when that ring is full; admission (buffer) and marking happen before it.
// [Scheduler.Dequeue] returns the next packet or nil if the port is empty;
// it is work-conserving, and pacing is left to the [Shaper]. Both are O(1)
// for SP, WRR and DWRR (a bitmap of busy strict queues, a ring of active
// round-robin queues) and O(log n) for WFQ (a heap of busy queues keyed by
// their head's finish tag), allocate nothing, take no lock and never read a
// clock: the caller passes now, in monotonic nanoseconds. A scheduler is
// owned by the port's worker goroutine.
//
// Backlog and Len count Desc.Len bytes, as the buffer accounts them.
// Quanta and WFQ finish tags are charged in Config.Overhead units: Desc.Len
// (OverheadNone) or the Ethernet wire size max(len+4, 64)+20 that the MQ-ECN
// prototype charges (OverheadEthernet: FCS, minimum frame, preamble and
// inter-frame gap).
//
// # Disciplines and conventions
//
// Config.Kind is SP, WRR, DWRR, WFQ or DualQ. Any queue may be marked
// Strict (but DualQ's); with WRR, DWRR or WFQ this gives the hierarchical SP-over-WRR, SP-over-DWRR
// and SP-over-WFQ schedulers that 001 §3.4 ("Strict Priority Queueing") and
// 003 §VI-A.3 ("SP+WFQ") use: strict queues are served first, and only when all
// are empty does the lowest level share the port. With SP every queue is
// strict.
//
//   - Strict priority: the higher queue index has the higher priority, as on
//     commodity switches where CS7 maps to queue 7 (and as the dataplane's
//     default DSCP>>3 classifier does). PMSB's experiments (003 §VI-A.3) number
//     their highest-priority queue 1; here it is the highest index.
//   - WRR: each queue has a byte quantum Q_i per round (001 §3.3.2, "in each
//     round queue i can at most transmit Q_i"). A turn ends before the packet
//     that would take its bytes above Q_i, as the MQ-ECN prototype's WRR
//     does, so a round sends Q_i − MTU < sent ≤ Q_i, and nothing carries over
//     to the next round: with packets whose size does not divide Q_i a
//     queue gets less than Q_i per round, and MQ-ECN's quantum_i/T_round
//     errs above its share, never below. WRR accepts any Q_i ≥ 1; a turn
//     always sends its first packet, so a quantum below the packet size
//     serves one packet per round rather than none.
//   - DWRR: Shreedhar–Varghese deficit round robin. A queue's deficit counter
//     gains Q_i at the start of each turn, pays for each packet sent, is
//     carried to the next turn when the head packet does not fit, and is
//     reset to 0 when the queue empties. Over M rounds a backlogged queue
//     sends M·Q_i − MTU < sent_i ≤ M·Q_i (001 §3.3.2 Eq. 7). Q_i must be at
//     least the MTU, so that every turn sends a packet.
//   - WFQ: self-clocked fair queueing (Golestani's SCFQ). A packet of c bytes
//     arriving at queue i gets the finish tag F = max(V, F_prev,i) + c/w_i,
//     where the system virtual time V is the tag of the packet most recently
//     sent; the smallest tag goes next. Over any interval in which queues i
//     and j are backlogged, |W_i/w_i − W_j/w_j| ≤ L_max/w_i + L_max/w_j.
//   - DualQ: RFC 9332's two queues (§2.4), DualQClassic and DualQL4S,
//     the L4S queue served first and the Classic queue protected from
//     starvation (§4.2.2) by Linux dualpi2's WRR of byte credit, the
//     Classic queue weighing ClassicProtection percent (10 by default),
//     or by the time-shifted FIFO with TShift. The coupled AQM that
//     makes it a DualQ Coupled AQM is marking.DualPI2, which the
//     dataplane puts on such a port.
//
// [Scheduler.Queue] reports what marking.View needs: the queue's quantum
// (quantum_i = Q_i for WRR and DWRR, 001 §3.3.2), its weight and the weight
// sum of its level, and its weight and the weight sum over the whole port.
// For WRR and DWRR the weight is the quantum (001 §3.2, "quantum_i = w_i");
// a strict queue is alone at its level. Port-wide, the weights of all
// levels add up — PMSB's weight_sum is "the sum of all queues' weights in
// port p" (003 Table II) and the "minimum" threshold divides by Σ_j W_j over
// the port's N queues (001 Eq. 2) — so a strict queue above WRR or DWRR
// counts its configured weight as that many charged MTUs, the quantum its
// weight would give it in the round-robin level.
//
// [Scheduler.BusyWeightSum] is the weight of the non-empty queues of the
// weighted level, w_sum of 001 §3.4 (MQ-ECN under WFQ), and
// [Scheduler.EmptySince] when a queue and the port last became empty (RED's
// idle time); both are kept up to date on the packets that fill and empty
// queues, at no cost to the others.
//
// # Round time (001 §3.3.1, §4.2)
//
// WRR and DWRR estimate the round time T_round, "the total time to serve
// all queues once" (001 §3.2), so that MQ-ECN can set queue i's threshold
// from quantum_i/T_round (001 Eq. 4–5). As in 001 §3.3.1 a sample is taken
// whenever a queue finishes its service in a round, T_sample = T_now − T_pre,
// after which T_pre = T_now, and smoothed as
//
//	T_round = β·T_round + (1 − β)·T_sample
//
// with β = 0.75 by default (001 §5). As in the prototype (001 §4.2) only
// active queues are sampled: a queue that becomes non-empty joins the tail
// of the active list with T_pre = its arrival time, and a queue that empties
// leaves the list after its last sample. T_now is when the queue's last
// packet of the turn has left the wire, its dequeue time plus its charged
// bytes at Config.LineRate (the prototype's last_pkt_time); with no line
// rate it is the dequeue time. The first sample is smoothed from
// T_round = 0, as in the prototype, and the average is kept in 16-bit fixed
// point so that constant samples converge exactly: with n backlogged
// queues of quantum Q drained at C, T_round becomes n·Q/C.
//
// When the port has been idle, T_round decays "as if we get a Tsample of 0"
// (001 §3.3.1): by β once per full T_idle of idleness, and to 0 after more
// than 10 idle slots, as the prototype does (prior-art.md §3: idle slot
// 12 µs, reset after more than 10 idle slots). The idle period starts when
// the last packet has left the wire. [Scheduler.RoundTime] shows the decay
// for the now it is given, so that a marker running before Enqueue sees it,
// and the next arrival commits it. T_idle defaults to one MTU's wire time at
// LineRate (001 §5: 12 µs at 1 Gbit/s). SP and WFQ have no round
// (001 §3.4); their RoundTime is 0.
//
// # Shaper (001 §4.2)
//
// A server port is much faster than the link it emulates, so without a rate
// limiter the queue would build in the NIC instead of here. [Shaper] is a
// token bucket at the emulated rate C; the MQ-ECN prototype used 99.5% of
// line rate and a 2.5 KB bucket. Its credit is kept in 10⁻⁹ bit, so R bit/s
// earns exactly R units per nanosecond and long runs never drift. A packet
// may leave whenever the credit is not negative and then pays its full
// cost, so the caller needs no peek at the next packet:
//
//	for sh.Ready(now) {
//		d := s.Dequeue(now)
//		if d == nil {
//			break
//		}
//		sh.Take(now, d.Len)
//		// ... transmit d
//	}
//	wake := sh.Next(now) // sleep or serve other ports until then
//
// # Papers
//
//   - 001: W. Bai et al., "Enabling ECN in Multi-Service Multi-Queue Data
//     Centers" (MQ-ECN), NSDI 2016: §3.2–3.3 (T_round, quantum_i), §3.4
//     (WFQ and strict priority), §4.2 (prototype: DWRR, active list, token
//     bucket at 99.5%), §5 (β = 0.75, T_idle = one MTU time).
//   - 003: Pan et al., PMSB, §VI-A.3: the SP, SP+WFQ and WFQ static-flow experiments that the
//     tests reproduce as rate shares.
//   - M. Shreedhar and G. Varghese, "Efficient Fair Queuing Using Deficit
//     Round Robin", SIGCOMM 1995.
//   - S. J. Golestani, "A Self-Clocked Fair Queueing Scheme for Broadband
//     Applications", INFOCOM 1994.
package scheduler
