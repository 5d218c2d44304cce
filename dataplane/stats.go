package dataplane

import (
	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Stats is a snapshot of the switch's counters. Counters are read one by
// one while the workers run, so a snapshot of a busy switch is not taken at
// a single instant; a quiescent switch's snapshot is exact.
type Stats struct {
	// Clock names the switch's clock, which every time in these stats,
	// /queues and capture files is read on: "monotonic" (ns since the
	// switch started) or "virtual".
	Clock   string        `json:"clock"`
	Ports   []PortStats   `json:"ports"`
	Pools   []PoolStats   `json:"pools"`
	Workers []WorkerStats `json:"workers"`
	// MACTable is the learning table's state; nil when learning is off.
	MACTable *MACTableStats `json:"mac_table,omitempty"`
}

// MACTableStats describe the L2 learning table. Each port's share is in
// PortStats (MACs, MACLimited); frames dropped by storm control count as
// the drop reason storm.
type MACTableStats struct {
	Slots int `json:"slots"`
	// Entries are the slots holding a learned MAC, stale ones included
	// until they are reused or swept.
	Entries int64 `json:"entries"`
	// Full counts source MACs not learned because no slot of their probe
	// window was free.
	Full uint64 `json:"full"`
	// Limit is the most MACs one port may hold; 0 for no limit.
	Limit int64 `json:"limit"`
}

// PortStats are one port's counters.
type PortStats struct {
	Name      string            `json:"name"`
	RxPackets uint64            `json:"rx_packets"`
	RxBytes   uint64            `json:"rx_bytes"`
	TxPackets uint64            `json:"tx_packets"`
	TxBytes   uint64            `json:"tx_bytes"`
	Flooded   uint64            `json:"flooded"` // extra copies made by flooding frames received here
	Drops     map[string]uint64 `json:"drops"`   // by DropReason name, zero reasons omitted
	Bytes     int64             `json:"bytes"`   // buffered now
	Packets   int64             `json:"packets"` // buffered now
	Peak      int64             `json:"peak_bytes"`
	Held      int64             `json:"held"` // in the delay line and the TX backlog
	// Trimmed and TrimDropped are the sums of the queues' (QueueStats):
	// SAI_PORT_STAT_TRIM_PACKETS and _DROPPED_TRIM_PACKETS.
	Trimmed     uint64 `json:"trimmed"`
	TrimDropped uint64 `json:"trim_dropped"`
	// MACs is how many learning-table entries hold MACs learned on the port.
	MACs int64 `json:"macs"`
	// MACLimited counts new source MACs not learned because the port held
	// forwarding.mac_limit of them.
	MACLimited uint64                 `json:"mac_limited"`
	RxStamps   RxStampStats           `json:"rx_stamps"`
	Queues     []QueueStats           `json:"queues"`
	Markers    []marking.MemberCounts `json:"markers,omitempty"`
	// Device are the counters of the port's device (ports.StatsReporter):
	// among them the frames the kernel dropped before the switch received
	// them, so that what reached the port is RxPackets + Device.RxDropped
	// + Device.RxOversize. Nil when the device keeps none.
	Device *ports.Stats `json:"device,omitempty"`
	// TxStamps are the device's completion stamps of transmitted frames
	// (ports.TxStamper); nil when it gives none.
	TxStamps *TxStampStats `json:"tx_stamps,omitempty"`
	// DualQ is a DualQ port's coupled AQM; nil on other ports.
	DualQ *DualQStats `json:"dualq,omitempty"`
	// INT is a port's in-band telemetry; nil on ports without.
	INT *INTStats `json:"int,omitempty"`
}

// TxStampStats are a device's completion stamps: how many transmitted
// frames it stamped, and the mean and largest time from the device taking
// a frame to its stamp.
type TxStampStats struct {
	Stamped uint64 `json:"stamped"`
	MeanNS  int64  `json:"mean_ns"`
	MaxNS   int64  `json:"max_ns"`
}

// RxStampStats say where received packets' ingress stamps came from.
type RxStampStats struct {
	// Source is the device's: its hardware clock ("phc0"), "link" for a
	// port that models its wire on the switch's clock (memport), or
	// "worker" for a device that never stamps.
	Source string `json:"source"`
	// Device counts packets stamped by the device, Worker those the
	// worker stamped as it received them (the device gave no stamp).
	Device uint64 `json:"device"`
	Worker uint64 `json:"worker"`
}

// QueueStats are one egress queue's counters.
type QueueStats struct {
	Enqueued     uint64 `json:"enqueued"`
	EnqueueBytes uint64 `json:"enqueued_bytes"`
	Dequeued     uint64 `json:"dequeued"`
	DequeueBytes uint64 `json:"dequeued_bytes"`
	MarkedEnq    uint64 `json:"marked_enqueue"` // CE marks set by enqueue markers
	MarkedDeq    uint64 `json:"marked_dequeue"` // CE marks set by dequeue markers
	// Drops counts, by reason, what the buffer and the markers refused,
	// trimmed afterwards or not (SAI's DROPPED_PACKETS): a packet trimmed
	// counts in Trimmed too, and in the Enqueued of the queue that took it.
	Drops map[string]uint64 `json:"drops"`
	// Trimmed counts the packets this queue refused that the port trimmed
	// for its trim queue (PortConfig.Trim; SAI_QUEUE_STAT_TRIM_PACKETS),
	// and TrimDropped those of them the trim queue refused too, which
	// were dropped (SAI_QUEUE_STAT_DROPPED_TRIM_PACKETS). Trimmed −
	// TrimDropped are in the trim queue or have left it.
	Trimmed     uint64  `json:"trimmed"`
	TrimDropped uint64  `json:"trim_dropped"`
	Bytes       int64   `json:"bytes"`
	Packets     int64   `json:"packets"`
	Peak        int64   `json:"peak_bytes"`
	Threshold   int64   `json:"threshold"` // the buffer's current admission limit
	Sojourn     Summary `json:"sojourn"`   // queueing delay of dequeued packets
}

// WorkerStats say where a worker's thread spent its time while Run ran, in
// ns of wall-clock time: in passes that moved packets, in passes that
// found nothing (spinning before it sleeps, or forever with Spin < 0), and
// asleep, waiting for input or for its next departure.
type WorkerStats struct {
	CPU   int      `json:"cpu"` // the CPU it is pinned to; -1 if none
	Ports []string `json:"ports"`
	Busy  int64    `json:"busy_ns"`
	Spin  int64    `json:"spin_ns"`
	Sleep int64    `json:"sleep_ns"`
}

// PoolStats are one shared pool's occupancy.
type PoolStats struct {
	Size    int64 `json:"size"`
	Bytes   int64 `json:"bytes"`
	Packets int64 `json:"packets"`
}

// Stats returns a snapshot of every counter.
func (s *Switch) Stats() Stats {
	st := Stats{Clock: timestamp.Name(s.clock)}
	m := s.mmu
	for _, p := range s.ports {
		ps := PortStats{
			Name:      p.name,
			RxPackets: p.c.rxPackets.Load(), RxBytes: p.c.rxBytes.Load(),
			TxPackets: p.c.txPackets.Load(), TxBytes: p.c.txBytes.Load(),
			Flooded: p.c.flooded.Load(),
			Drops:   map[string]uint64{},
			Bytes:   m.PortBytes(p.idx), Packets: m.PortPackets(p.idx), Peak: m.PortPeak(p.idx),
			Held: p.held.Load(), INT: p.inband.stats(),
		}
		worker := p.c.rxStampedWorker.Load()
		ps.RxStamps = RxStampStats{Source: p.stamps.source, Device: ps.RxPackets - min(worker, ps.RxPackets), Worker: worker}
		for r := range p.c.drops {
			if v := p.c.drops[r].Load(); v > 0 {
				ps.Drops[DropReason(r).String()] = v
			}
		}
		if ts, ok := p.dev.(ports.TxStamper); ok {
			if n, mean, mx := ts.TxCompletions(); n > 0 {
				ps.TxStamps = &TxStampStats{Stamped: n, MeanNS: mean, MaxNS: mx}
			}
		}
		if r, ok := p.dev.(ports.StatsReporter); ok {
			ds := r.Stats()
			ps.Device = &ds
		}
		if t := s.fw.fdb; t != nil {
			ps.MACs, ps.MACLimited = t.ports[p.idx].learned.Load(), t.ports[p.idx].limited.Load()
		}
		for q := range p.qc {
			c := &p.qc[q]
			qs := QueueStats{
				Enqueued: c.enqueued.Load(), EnqueueBytes: c.enqBytes.Load(),
				Dequeued: c.dequeued.Load(), DequeueBytes: c.deqBytes.Load(),
				MarkedEnq: c.markedEnq.Load(), MarkedDeq: c.markedDeq.Load(),
				Drops: map[string]uint64{}, Trimmed: c.trimmed.Load(), TrimDropped: c.trimDropped.Load(),
				Bytes: m.QueueBytes(p.idx, q), Packets: m.QueuePackets(p.idx, q),
				Peak: m.QueuePeak(p.idx, q), Threshold: m.Threshold(p.idx, q),
				Sojourn: p.sojourn[q].summary(),
			}
			for r := buffer.Reason(1); r < buffer.NumReasons; r++ {
				if n, _ := m.Drops(p.idx, q, r); n > 0 {
					qs.Drops[r.String()] = uint64(n)
				}
			}
			ps.Trimmed += qs.Trimmed
			ps.TrimDropped += qs.TrimDropped
			ps.Queues = append(ps.Queues, qs)
		}
		chains := p.chains.Load()
		for _, c := range chains.chains() {
			ps.Markers = c.Counts(ps.Markers)
		}
		if p.aqm != nil && chains.deq != nil {
			ps.DualQ = dualqStats(p.aqm, chains.deq.Counts(nil))
		}
		st.Ports = append(st.Ports, ps)
	}
	for _, w := range s.workers {
		ws := WorkerStats{CPU: w.cpu, Busy: w.time.busy.Load(), Spin: w.time.spin.Load(), Sleep: w.time.sleep.Load()}
		for _, p := range w.ports {
			ws.Ports = append(ws.Ports, p.name)
		}
		st.Workers = append(st.Workers, ws)
	}
	for i := 0; i < m.Pools(); i++ {
		st.Pools = append(st.Pools, PoolStats{Size: m.PoolSize(i), Bytes: m.PoolBytes(i), Packets: m.PoolPackets(i)})
	}
	if t := s.fw.fdb; t != nil {
		st.MACTable = &MACTableStats{Slots: len(t.slots), Full: t.full.Load(), Limit: t.limit}
		for i := range t.ports {
			st.MACTable.Entries += t.ports[i].learned.Load()
		}
	}
	return st
}

// ResetSojourn restarts every queue's sojourn-time histogram, so that the
// next Stats describe only what is dequeued from now on (a measurement
// window after a warm-up, say). While the switch runs, the few packets
// dequeued during the reset may be lost from or half-counted in the
// histograms.
func (s *Switch) ResetSojourn() {
	for _, p := range s.ports {
		for q := range p.sojourn {
			p.sojourn[q].reset()
		}
	}
}

// Accounting is the switch-wide packet balance: every packet received, plus
// every flooded copy, is transmitted, dropped, or still held — in a queue,
// a delay line, staged for a device, received and waiting for the next
// pass, or in a ring between workers.
type Accounting struct {
	Received, Flooded, Transmitted, Dropped, Held uint64
}

// Balanced reports whether Received + Flooded = Transmitted + Dropped + Held.
func (a Accounting) Balanced() bool {
	return a.Received+a.Flooded == a.Transmitted+a.Dropped+a.Held
}

// Account returns the packet balance. It is exact when the switch is not
// running (between Polls); while Run runs it is approximate, and safe to
// call: every figure is read atomically.
func (s *Switch) Account() Accounting {
	var a Accounting
	for _, p := range s.ports {
		a.Received += p.c.rxPackets.Load()
		a.Flooded += p.c.flooded.Load()
		a.Transmitted += p.c.txPackets.Load()
		for r := range p.c.drops {
			a.Dropped += p.c.drops[r].Load()
		}
		a.Held += uint64(s.mmu.PortPackets(p.idx)) + uint64(p.held.Load())
	}
	for _, w := range s.workers {
		a.Held += uint64(w.carried.Load())
		for _, r := range w.out {
			if r != nil {
				a.Held += uint64(r.Len())
			}
		}
	}
	return a
}
