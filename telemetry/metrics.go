package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/ports"
)

// collector is a prometheus.Collector that reads Switch.Stats on every
// scrape, so the switch keeps no Prometheus state of its own and its hot
// path stays a set of atomic counters.
type collector struct {
	sw    Switch
	pools []string

	rxPackets, rxBytes, txPackets, txBytes, flooded *prometheus.Desc
	portDrops                                       *prometheus.Desc
	portTrimmed, portTrimDropped                    *prometheus.Desc
	portBytes, portPackets, portPeak, portHeld      *prometheus.Desc

	enqPackets, enqBytes, deqPackets, deqBytes *prometheus.Desc
	marked, queueDrops                         *prometheus.Desc
	trimmed, trimDropped                       *prometheus.Desc
	queueBytes, queuePackets, queuePeak, thres *prometheus.Desc

	markerMarks, markerDrops *prometheus.Desc

	dualqProb, dualqDelay, dualqOverloaded, dualqOverloads, dualqUpdates *prometheus.Desc

	intPackets, intTxBytes *prometheus.Desc

	poolBytes, poolPackets, poolSize *prometheus.Desc

	portMACs, portMACLimited              *prometheus.Desc
	macSlots, macEntries, macFull, macCap *prometheus.Desc

	workerSeconds *prometheus.Desc

	device []deviceMetric
}

// deviceMetric is one counter of a port's device (dataplane.PortStats.Device).
type deviceMetric struct {
	desc  *prometheus.Desc
	value func(*ports.Stats) uint64
}

// deviceMetrics are the device counters /metrics exports, per port.
var deviceMetrics = [...]struct {
	name, help string
	value      func(*ports.Stats) uint64
}{
	{"rx_packets_total", "Frames the port's device handed to the switch.", func(s *ports.Stats) uint64 { return s.RxPackets }},
	{"rx_dropped_total", "Frames the kernel dropped before the switch received them: RX ring full, no fill frame (rx_ring_full included).", func(s *ports.Stats) uint64 { return s.RxDropped }},
	{"rx_ring_full_total", "Frames the kernel dropped because the socket's RX ring was full: the switch did not receive fast enough.", func(s *ports.Stats) uint64 { return s.RxRingFull }},
	{"rx_fill_ring_empty_total", "Times the kernel found the socket's fill ring empty (the frames lost then are in rx_dropped).", func(s *ports.Stats) uint64 { return s.RxFillEmpty }},
	{"rx_oversize_total", "Frames dropped below the switch for not fitting a frame: by the XDP program (larger than the usable frame) or on receive.", func(s *ports.Stats) uint64 { return s.RxOversize }},
	{"tx_packets_total", "Frames the port's device took for transmission.", func(s *ports.Stats) uint64 { return s.TxPackets }},
	{"tx_completed_total", "Frames the device reported sent.", func(s *ports.Stats) uint64 { return s.TxCompleted }},
	{"tx_errors_total", "Frames the device took and did not send: refused descriptors or live frames, or dropped by the device.", func(s *ports.Stats) uint64 { return s.TxErrors }},
	{"violations_total", "Frames the kernel handed back in a state they cannot be in; must stay 0.", func(s *ports.Stats) uint64 { return s.Violations }},
	{"live_frames_total", "Frames sent as XDP live frames (part of tx_packets).", func(s *ports.Stats) uint64 { return s.LiveFrames }},
	{"live_fallbacks_total", "Times the device refused live frames and the port transmitted through its socket for a while.", func(s *ports.Stats) uint64 { return s.LiveFallbacks }},
}

func newCollector(sw Switch, pools []string) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("ecnswitch_"+name, help, labels, nil)
	}
	port, queue := []string{"port"}, []string{"port", "queue"}
	var device []deviceMetric
	for _, m := range deviceMetrics {
		device = append(device, deviceMetric{d("port_device_"+m.name, m.help, port...), m.value})
	}
	return &collector{
		device: device,
		sw:     sw, pools: pools,

		rxPackets: d("port_rx_packets_total", "Frames received on the port.", port...),
		rxBytes:   d("port_rx_bytes_total", "Bytes received on the port (frames without FCS).", port...),
		txPackets: d("port_tx_packets_total", "Frames transmitted on the port.", port...),
		txBytes:   d("port_tx_bytes_total", "Bytes transmitted on the port.", port...),
		flooded:   d("port_flooded_packets_total", "Extra copies made by flooding frames received on the port.", port...),
		portDrops: d("port_drops_total", "Packets dropped, by reason; ingress reasons count on the ingress port, the rest on the egress port.", "port", "reason"),

		portTrimmed:     d("port_trimmed_packets_total", "Packets the port's admission refused and trimmed onto its trim queue instead of dropping (SAI_PORT_STAT_TRIM_PACKETS).", port...),
		portTrimDropped: d("port_trim_dropped_packets_total", "Trimmed packets the trim queue refused too, dropped (SAI_PORT_STAT_DROPPED_TRIM_PACKETS; in port_drops_total by reason).", port...),

		portBytes:   d("port_buffer_bytes", "Bytes buffered in the port's egress queues now.", port...),
		portPackets: d("port_buffer_packets", "Packets buffered in the port's egress queues now.", port...),
		portPeak:    d("port_buffer_peak_bytes", "Most bytes the port's egress queues have held.", port...),
		portHeld:    d("port_held_packets", "Packets held in the port's delay line and TX backlog now (not buffered).", port...),

		enqPackets:  d("queue_enqueued_packets_total", "Packets admitted to the queue.", queue...),
		enqBytes:    d("queue_enqueued_bytes_total", "Bytes admitted to the queue.", queue...),
		deqPackets:  d("queue_dequeued_packets_total", "Packets the scheduler took from the queue.", queue...),
		deqBytes:    d("queue_dequeued_bytes_total", "Bytes the scheduler took from the queue.", queue...),
		marked:      d("queue_marked_packets_total", "Packets marked CE in the queue, by marker stage.", "port", "queue", "stage"),
		queueDrops:  d("queue_drops_total", "Buffer and marker drops of the queue, by reason, trimmed afterwards or not.", "port", "queue", "reason"),
		trimmed:     d("queue_trimmed_packets_total", "Packets the queue refused that were trimmed onto the port's trim queue (SAI_QUEUE_STAT_TRIM_PACKETS).", queue...),
		trimDropped: d("queue_trim_dropped_packets_total", "Packets the queue refused, trimmed, and the trim queue refused too (SAI_QUEUE_STAT_DROPPED_TRIM_PACKETS).", queue...),

		queueBytes:   d("queue_bytes", "Bytes in the queue now.", queue...),
		queuePackets: d("queue_packets", "Packets in the queue now.", queue...),
		queuePeak:    d("queue_peak_bytes", "Most bytes the queue has held.", queue...),
		thres:        d("queue_threshold_bytes", "The buffer's current admission limit for the queue (Dynamic Threshold or cap, plus reserve).", queue...),

		markerMarks: d("marker_marks_total", "Packets a marker voted to mark, whatever the chain decided.", "port", "marker"),
		markerDrops: d("marker_drops_total", "Packets a marker voted to drop.", "port", "marker"),

		dualqProb:       d("dualq_probability", "A DualQ port's coupled AQM probabilities as of its last update: base (p′), classic (p_C = p′²), l4s (p_CL = min(k·p′, 1)).", "port", "which"),
		dualqDelay:      d("dualq_classic_delay_seconds", "The queue delay that a DualQ port's last PI2 update took: the larger of its two queues', the Classic queue's unless the L4S queue is overloaded.", port...),
		dualqOverloaded: d("dualq_overloaded", "1 while a DualQ port's AQM is overloaded (k·p′ ≥ 1: both queues drop with p_C), else 0.", port...),
		dualqOverloads:  d("dualq_overloads_total", "Times a DualQ port's AQM entered overload.", port...),
		dualqUpdates:    d("dualq_updates_total", "PI2 updates a DualQ port's AQM ran.", port...),

		intPackets: d("int_packets_total", "Packets carrying INT headers that left a port with INT, by what it did: added (its record), no_room (none: the packet would outgrow the MTU), hop_limit (none: no hops left), malformed (headers that did not parse).", "port", "outcome"),
		intTxBytes: d("int_tx_bytes_total", "Bytes a port with INT has sent on its line, as its shaper counts them: what its records carry as TX bytes.", port...),

		poolBytes:   d("pool_bytes", "Bytes in the shared pool now, reserves included.", "pool"),
		poolPackets: d("pool_packets", "Packets in the shared pool now.", "pool"),
		poolSize:    d("pool_size_bytes", "The shared pool's size B.", "pool"),

		portMACs:       d("port_macs", "Learning-table entries holding MACs learned on the port.", port...),
		portMACLimited: d("port_mac_limited_total", "New source MACs not learned because the port held forwarding.mac_limit of them.", port...),
		macSlots:       d("mac_table_slots", "Slots of the L2 learning table."),
		macEntries:     d("mac_table_entries", "Slots holding a learned MAC, stale ones until reused or swept."),
		macFull:        d("mac_table_full_total", "Source MACs not learned because their probe window had no free slot."),
		macCap:         d("mac_table_port_limit", "The most MACs one port may hold (forwarding.mac_limit); 0 for no limit."),

		workerSeconds: d("worker_seconds_total", "Wall-clock time of a worker's thread: busy (passes that moved packets), spin (passes that found nothing) or sleep.", "worker", "cpu", "state"),
	}
}

func (c *collector) descs() []*prometheus.Desc {
	ds := []*prometheus.Desc{
		c.rxPackets, c.rxBytes, c.txPackets, c.txBytes, c.flooded, c.portDrops,
		c.portTrimmed, c.portTrimDropped,
		c.portBytes, c.portPackets, c.portPeak, c.portHeld,
		c.enqPackets, c.enqBytes, c.deqPackets, c.deqBytes, c.marked, c.queueDrops,
		c.trimmed, c.trimDropped,
		c.queueBytes, c.queuePackets, c.queuePeak, c.thres,
		c.markerMarks, c.markerDrops,
		c.dualqProb, c.dualqDelay, c.dualqOverloaded, c.dualqOverloads, c.dualqUpdates,
		c.intPackets, c.intTxBytes,
		c.poolBytes, c.poolPackets, c.poolSize,
		c.portMACs, c.portMACLimited, c.macSlots, c.macEntries, c.macFull, c.macCap,
		c.workerSeconds,
	}
	for _, m := range c.device {
		ds = append(ds, m.desc)
	}
	return ds
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.sw.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, p := range st.Ports {
		counter(c.rxPackets, p.RxPackets, p.Name)
		counter(c.rxBytes, p.RxBytes, p.Name)
		counter(c.txPackets, p.TxPackets, p.Name)
		counter(c.txBytes, p.TxBytes, p.Name)
		counter(c.flooded, p.Flooded, p.Name)
		for reason, v := range p.Drops {
			counter(c.portDrops, v, p.Name, reason)
		}
		counter(c.portTrimmed, p.Trimmed, p.Name)
		counter(c.portTrimDropped, p.TrimDropped, p.Name)
		gauge(c.portBytes, p.Bytes, p.Name)
		gauge(c.portPackets, p.Packets, p.Name)
		gauge(c.portPeak, p.Peak, p.Name)
		gauge(c.portHeld, int64(p.Held), p.Name)
		for qi, q := range p.Queues {
			qs := strconv.Itoa(qi)
			counter(c.enqPackets, q.Enqueued, p.Name, qs)
			counter(c.enqBytes, q.EnqueueBytes, p.Name, qs)
			counter(c.deqPackets, q.Dequeued, p.Name, qs)
			counter(c.deqBytes, q.DequeueBytes, p.Name, qs)
			counter(c.marked, q.MarkedEnq, p.Name, qs, "enqueue")
			counter(c.marked, q.MarkedDeq, p.Name, qs, "dequeue")
			for reason, v := range q.Drops {
				counter(c.queueDrops, v, p.Name, qs, reason)
			}
			counter(c.trimmed, q.Trimmed, p.Name, qs)
			counter(c.trimDropped, q.TrimDropped, p.Name, qs)
			gauge(c.queueBytes, q.Bytes, p.Name, qs)
			gauge(c.queuePackets, q.Packets, p.Name, qs)
			gauge(c.queuePeak, q.Peak, p.Name, qs)
			gauge(c.thres, q.Threshold, p.Name, qs)
		}
		for _, m := range p.Markers {
			counter(c.markerMarks, m.Marks, p.Name, m.Name)
			counter(c.markerDrops, m.Drops, p.Name, m.Name)
		}
		if q := p.DualQ; q != nil {
			for _, v := range [...]struct {
				which string
				p     float64
			}{{"base", q.Prob}, {"classic", q.ProbC}, {"l4s", q.ProbL}} {
				ch <- prometheus.MustNewConstMetric(c.dualqProb, prometheus.GaugeValue, v.p, p.Name, v.which)
			}
			ch <- prometheus.MustNewConstMetric(c.dualqDelay, prometheus.GaugeValue, float64(q.DelayC)/1e9, p.Name)
			overloaded := int64(0)
			if q.Overloaded {
				overloaded = 1
			}
			gauge(c.dualqOverloaded, overloaded, p.Name)
			counter(c.dualqOverloads, q.Overloads, p.Name)
			counter(c.dualqUpdates, q.Updates, p.Name)
		}
		if in := p.INT; in != nil {
			for _, v := range [...]struct {
				outcome dataplane.INTOutcome
				n       uint64
			}{{dataplane.INTAdded, in.Added}, {dataplane.INTNoRoom, in.NoRoom}, {dataplane.INTHopLimit, in.HopLimit}, {dataplane.INTMalformed, in.Malformed}} {
				counter(c.intPackets, v.n, p.Name, v.outcome.String())
			}
			counter(c.intTxBytes, in.TxBytes, p.Name)
		}
		if p.Device != nil {
			for _, m := range c.device {
				counter(m.desc, m.value(p.Device), p.Name)
			}
		}
	}
	if t := st.MACTable; t != nil {
		for _, p := range st.Ports {
			gauge(c.portMACs, p.MACs, p.Name)
			counter(c.portMACLimited, p.MACLimited, p.Name)
		}
		gauge(c.macSlots, int64(t.Slots))
		gauge(c.macEntries, t.Entries)
		counter(c.macFull, t.Full)
		gauge(c.macCap, t.Limit)
	}
	for i, w := range st.Workers {
		id, cpu := strconv.Itoa(i), strconv.Itoa(w.CPU)
		for _, s := range [...]struct {
			state string
			ns    int64
		}{{"busy", w.Busy}, {"spin", w.Spin}, {"sleep", w.Sleep}} {
			ch <- prometheus.MustNewConstMetric(c.workerSeconds, prometheus.CounterValue, float64(s.ns)/1e9, id, cpu, s.state)
		}
	}
	for i, pool := range st.Pools {
		name := poolName(c.pools, i)
		gauge(c.poolBytes, pool.Bytes, name)
		gauge(c.poolPackets, pool.Packets, name)
		gauge(c.poolSize, pool.Size, name)
	}
}

func poolName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return strconv.Itoa(i)
}

var _ prometheus.Collector = (*collector)(nil)

// StatsResponse is the body of /stats: dataplane.Stats with the time it was
// read and the pools' names.
type StatsResponse struct {
	TimeNS int64 `json:"time_ns"` // the switch clock when the snapshot was taken
	dataplane.Stats
	PoolNames []string `json:"pool_names"`
	// Build is the switch's build and the machine it runs on.
	Build *buildinfo.Info `json:"build,omitempty"`
	// Config is the switch's running settings, where the server was given
	// them (Options.Config): the daemon's node.RunningConfig, which
	// `ecnswitch set` and a reload change.
	Config any `json:"config,omitempty"`
}
