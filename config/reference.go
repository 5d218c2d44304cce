package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/telemetry"
)

// Type is the kind of value a key of the file takes.
type Type uint8

// Types.
const (
	TypeInteger  Type = iota + 1 // a whole number of Key.Unit
	TypeNumber                   // a real number
	TypeSize                     // bytes: 1500, 96KB, 64KiB (Size)
	TypeRate                     // bit/s: 995Mbit, 10Gbps (Rate)
	TypeDuration                 // Go syntax: 100us, 1.5ms (Duration)
	TypeBool                     // true or false
	TypeString                   // text
	TypeChoice                   // one of Key.Choices
	TypeList                     // a list of Key.Unit
	TypeMapping                  // a mapping; Key.Unit says from what to what
	TypeMarkers                  // a list of markers, each a scheme and its parameters
)

var typeNames = [...]string{
	TypeInteger: "integer", TypeNumber: "number", TypeSize: "size", TypeRate: "rate",
	TypeDuration: "duration", TypeBool: "bool", TypeString: "string", TypeChoice: "choice",
	TypeList: "list", TypeMapping: "mapping", TypeMarkers: "markers",
}

// String returns the type's name as the docs write it.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Key documents one key of the configuration file: its type, default and
// allowed values, read from the constants of the packages that own them.
// docs/configuration.md is generated from Reference, and config's tests
// hold Reference to the decoder: every key of the file is listed, every
// Default is what an absent key stands for, and every Range is what the
// checks accept.
type Key struct {
	// Path is the key's place in the file: "ports[].scheduler.kind";
	// "[]" stands for any list element and "N" for any index of a
	// mapping by number.
	Path string
	Type Type
	// Unit is what an integer counts ("frames"), what a list holds, or
	// what a mapping maps.
	Unit string
	// Default is the value an absent key stands for: int64 for integers,
	// sizes and rates, time.Duration, float64, bool or string; nil when
	// DefaultText says it in words.
	Default any
	// DefaultText says the default where Default cannot: "the port's name".
	DefaultText string
	// Range is the values a numeric key allows, in its Type's unit (bytes,
	// bit/s, ns); nil when RangeText alone says it.
	Range *marking.Range
	// RangeText adds what Range cannot say ("a power of two", "or 0 for
	// unshaped"), or says it all.
	RangeText string
	// Choices are a TypeChoice key's values.
	Choices []string
	// Doc says what the key sets, in one or two sentences.
	Doc string
}

// Section is a part of the file, as the docs group its keys.
type Section struct {
	Name string // the heading: "Workers", "ports[].scheduler"
	Doc  string // what the section is
	Keys []Key
}

// FormatValue writes v, a value of k's type, as the file would: 2048,
// 96KB, 995Mbit, 100µs, true, auto.
func (k Key) FormatValue(v any) string {
	switch x := v.(type) {
	case int64:
		switch k.Type {
		case TypeSize:
			return FormatSize(x)
		case TypeRate:
			if x == 0 {
				return "0"
			}
			return FormatRate(x)
		}
		return strconv.FormatInt(x, 10)
	case time.Duration:
		if x == 0 {
			return "0"
		}
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	return fmt.Sprint(v)
}

// FormatRange writes k's Range in interval notation, bounds in the file's
// units: "[1, 64]", "(0, 256]", "[1µs, 10s]"; "" when k has none.
func (k Key) FormatRange() string {
	if k.Range == nil {
		return ""
	}
	return k.Range.Format(func(x float64) string {
		switch {
		case math.IsInf(x, 0):
			return "∞"
		case k.Type == TypeDuration:
			return k.FormatValue(time.Duration(x))
		case k.Type == TypeNumber:
			return k.FormatValue(x)
		}
		return k.FormatValue(int64(x))
	})
}

// closed and leftOpen are the ranges [lo, hi] and (lo, hi].
func closed(lo, hi float64) *marking.Range   { return &marking.Range{Min: lo, Max: hi} }
func leftOpen(lo, hi float64) *marking.Range { return &marking.Range{Min: lo, Max: hi, MinOpen: true} }
func open(lo, hi float64) *marking.Range {
	return &marking.Range{Min: lo, Max: hi, MinOpen: true, MaxOpen: true}
}

// afxdpKeys are the AF_XDP options, which the top-level afxdp section,
// port_defaults.afxdp and a port's own afxdp all take.
func afxdpKeys() []Key {
	ring := func(name, what string) Key {
		return Key{Path: "afxdp." + name, Type: TypeInteger, Unit: "descriptors", Default: int64(afxdp.DefaultRingSize),
			Range: closed(afxdp.MinRingSize, afxdp.MaxRingSize), RangeText: "a power of two", Doc: what}
	}
	return []Key{
		{Path: "afxdp.mode", Type: TypeChoice, Default: "auto", Choices: []string{"auto", "native", "generic"},
			Doc: "How the XDP redirect program attaches: auto is native where the driver allows, generic otherwise (with a warning)."},
		{Path: "afxdp.zerocopy", Type: TypeChoice, Default: "auto", Choices: []string{"auto", "on", "off"},
			Doc: "Zero-copy sockets: auto where the driver supports them; on requires them (and mode native or auto)."},
		{Path: "afxdp.queues", Type: TypeList, Unit: "RX queue numbers", DefaultText: "every RX queue of the interface",
			RangeText: fmt.Sprintf("each in [0, %d], no repeats, below the interface's RX queue count", maxRxQueue),
			Doc:       "The RX queues to open a socket on; frames on other queues go to the kernel's stack."},
		{Path: "afxdp.frames", Type: TypeInteger, Unit: "frames", Default: int64(afxdp.DefaultFrames),
			Range: closed(afxdp.MinFrames, afxdp.MaxFrames), RangeText: "a power of two, at least fill_ring + tx_ring",
			Doc: "UMEM frames per socket."},
		{Path: "afxdp.frame_size", Type: TypeInteger, Unit: "bytes", Default: int64(afxdp.DefaultFrameSize),
			RangeText: fmt.Sprintf("%d or %d", afxdp.DefaultFrameSize, afxdp.MaxFrameSize),
			Doc: fmt.Sprintf("The UMEM frame. A frame carries frame_size − %d bytes of headroom, so %d allows an interface MTU of at most %d, and %d of %d.",
				afxdp.Headroom, afxdp.DefaultFrameSize, afxdp.UsableFrame(afxdp.DefaultFrameSize)-18, afxdp.MaxFrameSize, afxdp.UsableFrame(afxdp.MaxFrameSize)-18)},
		ring("fill_ring", "The fill ring: free frames for the kernel to receive into."),
		ring("completion_ring", "The completion ring: frames sent, free again; at least tx_ring."),
		ring("rx_ring", "The RX ring: received frames."),
		ring("tx_ring", "The TX ring: frames to send."),
		{Path: "afxdp.tx_budget", Type: TypeInteger, Unit: "frames",
			DefaultText: fmt.Sprintf("`%d`, or tx_ring if smaller", afxdp.DefaultTxBudget),
			RangeText:   fmt.Sprintf("[%d, tx_ring]", afxdp.MinTxBudget),
			Doc:         "Frames one copy-mode TX kick sends (XDP_MAX_TX_SKB_BUDGET, Linux 6.17+; older kernels keep 32)."},
		{Path: "afxdp.tx_hash", Type: TypeBool, Default: false,
			Doc: "Spread transmitted frames over the queues' sockets by flow hash; otherwise every frame leaves on the first queue's socket."},
		{Path: "afxdp.transmit", Type: TypeChoice, Default: "auto", Choices: []string{"auto", "socket", "xdp"},
			Doc: "How frames leave: auto sends batches of at least live_min frames as XDP live frames on a copy-mode veth whose peer takes them, and uses the socket elsewhere; socket never uses live frames; xdp always does, refusing to start where it cannot."},
		{Path: "afxdp.live_min", Type: TypeInteger, Unit: "frames", Default: int64(afxdp.DefaultLiveMin), Range: closed(1, afxdp.MaxLiveMin),
			Doc: "The smallest batch sent as live frames; smaller ones go through the socket."},
		{Path: "afxdp.rx_timestamp", Type: TypeChoice, Default: "auto", Choices: []string{"auto", "on", "off"},
			Doc: "Hardware receive stamps from a device-bound XDP program: auto where the driver has the RX-metadata timestamp and the device a PTP clock; on wherever the driver has it; the port then transmits through its socket."},
		{Path: "afxdp.tx_timestamp", Type: TypeChoice, Default: "off", Choices: []string{"on", "off"},
			Doc: "TX completion stamps (XSK TX metadata) of every frame the socket sends, for /stats' tx_stamps; the port then transmits through its socket."},
		{Path: "afxdp.force", Type: TypeBool, Default: false,
			Doc: "Replace an XDP program that is not ecnswitch's."},
	}
}

// Reference returns every key of the configuration file, section by
// section, in the order docs/configuration.md lists them.
func Reference() []Section {
	return []Section{
		{Name: "Workers and frames", Doc: "The switch's poll-mode workers and their frame arenas.", Keys: []Key{
			{Path: "log_level", Type: TypeChoice, Default: "info", Choices: []string{"debug", "info", "warn", "error"},
				Doc: "The log level of lifecycle events (never packets); the --log-level flag overrides it."},
			{Path: "workers", Type: TypeInteger, Unit: "workers", Default: int64(dataplane.DefaultWorkers), Range: closed(1, dataplane.MaxWorkers),
				Doc: "Poll-mode workers: threads that each own some ports, their receive side and their egress queues."},
			{Path: "frames", Type: TypeInteger, Unit: "frames", Default: int64(dataplane.DefaultFrames),
				Range: closed(dataplane.MinFrames, dataplane.MaxFrames), RangeText: "a power of two",
				Doc: "Arena frames per worker: the most packets one worker holds at once in queues, delay lines and rings; beyond it arrivals drop as arena_empty."},
			{Path: "frame_size", Type: TypeInteger, Unit: "bytes", Default: int64(dataplane.DefaultFrameSize),
				Range: closed(dataplane.MinFrameSize, dataplane.MaxFrameSize), RangeText: "at least every port's mtu and AF_XDP usable frame",
				Doc: "Bytes per arena frame: the largest frame the switch holds."},
			{Path: "batch", Type: TypeInteger, Unit: "frames", Default: int64(dataplane.DefaultBatch), Range: closed(1, dataplane.MaxBatch),
				Doc: "Frames moved per receive or transmit call."},
			{Path: "spin", Type: TypeInteger, Unit: "passes", Default: int64(dataplane.DefaultSpin), Range: closed(1, dataplane.MaxSpin),
				Doc: "Idle passes before a worker sleeps on its ports; not with never_sleep."},
			{Path: "never_sleep", Type: TypeBool, Default: false,
				Doc: "A worker never sleeps: it spins on its ports, a whole core each (ecnswitch's loop, not the kernel's SO_BUSY_POLL)."},
			{Path: "busy_poll", Type: TypeBool, Default: false,
				Doc: "The old name of never_sleep, accepted with a warning for one release."},
			{Path: "cpus", Type: TypeList, Unit: "CPU numbers", DefaultText: "none: no pinning",
				RangeText: fmt.Sprintf("each in [0, %d], no repeats, within the process's affinity", dataplane.MaxCPU),
				Doc:       "CPUs the process may run on; worker i is pinned to cpus[i % len]."},
		}},
		{Name: "afxdp", Doc: "AF_XDP options of every port: the top-level section sets them for all ports, and port_defaults.afxdp and a port's own afxdp override them key by key.",
			Keys: afxdpKeys()},
		{Name: "telemetry", Doc: "The read-only HTTP API: /metrics, /stats, /queues (docs/telemetry.md).", Keys: []Key{
			{Path: "telemetry.enabled", Type: TypeBool, Default: true, Doc: "Serve telemetry."},
			{Path: "telemetry.listen", Type: TypeString, Default: telemetry.DefaultListen, RangeText: "host:port, the host an IP address, localhost or empty (every address)",
				Doc: "Where the API listens; a non-loopback address exposes the counters to the network."},
			{Path: "telemetry.hosts", Type: TypeList, Unit: "DNS names", DefaultText: "none",
				Doc: "Names a request's Host may carry besides localhost, IP addresses and this machine's name; others get 403."},
			{Path: "telemetry.queue_sample_period", Type: TypeDuration, Default: telemetry.DefaultSamplePeriod, Range: closed(float64(minPeriod), float64(maxPeriod)),
				Doc: "Period of the queue-depth sampler behind /queues."},
			{Path: "telemetry.queue_samples", Type: TypeInteger, Unit: "samples", Default: int64(telemetry.DefaultSamples), Range: closed(2, maxSamples),
				RangeText: fmt.Sprintf("samples × (queues + pools + 1) ≤ %d", maxSeries),
				Doc:       "Samples kept in the sampler's ring."},
		}},
		{Name: "pools", Doc: fmt.Sprintf("The shared buffer pools ports draw from (002 §II-A). Without any, one pool named %q of %s.", DefaultPoolName, FormatSize(dataplane.DefaultPoolSize)), Keys: []Key{
			{Path: "pools", Type: TypeList, Unit: "pools", DefaultText: fmt.Sprintf("one pool, %q, of %s", DefaultPoolName, FormatSize(dataplane.DefaultPoolSize)),
				Doc: "The pools, each a name and a size."},
			{Path: "pools[].name", Type: TypeString, DefaultText: "required",
				RangeText: fmt.Sprintf("1 to %d letters, digits, _ . : -; unique", maxNameLen), Doc: "The pool's name, which ports[].pool refers to."},
			{Path: "pools[].size", Type: TypeSize, DefaultText: "required", Range: closed(1, buffer.MaxPoolSize),
				Doc: "The pool's shared buffer B."},
		}},
		{Name: "forwarding", Doc: "Static rules first (a port patch, a destination MAC, then the longest IP prefix), then the learned L2 table; anything unmatched, and every broadcast or multicast frame, floods.", Keys: []Key{
			{Path: "forwarding.learning", Type: TypeBool, Default: true, Doc: "Learn source MACs."},
			{Path: "forwarding.age_time", Type: TypeDuration, Default: dataplane.DefaultAgeTime, Range: closed(float64(dataplane.MinAgeTime), float64(dataplane.MaxAgeTime)),
				Doc: "How long a learned MAC stays without being seen."},
			{Path: "forwarding.table_size", Type: TypeInteger, Unit: "slots", Default: int64(dataplane.DefaultTableSize), Range: closed(1, dataplane.MaxTableSize),
				RangeText: "rounded up to a power of two", Doc: "Learning table slots; the table's hash is seeded at start."},
			{Path: "forwarding.mac_limit", Type: TypeInteger, Unit: "MACs", Default: int64(dataplane.DefaultMACLimit), Range: closed(0, dataplane.MaxMACLimit),
				RangeText: "0 for no limit", Doc: "Most MACs learned on one port; more are not learned (frames to them flood) and count as mac_limited."},
			{Path: "forwarding.flood_rate", Type: TypeInteger, Unit: "frames/s", Default: int64(dataplane.DefaultFloodRate), Range: closed(0, dataplane.MaxFloodRate),
				RangeText: "0 for no limit", Doc: "Storm control: frames per second each ingress port may flood; beyond it they drop as storm."},
			{Path: "forwarding.flood_burst", Type: TypeInteger, Unit: "frames", Default: int64(dataplane.DefaultFloodBurst), Range: closed(1, dataplane.MaxFloodBurst),
				Doc: "Storm control's bucket: frames a port may flood at once."},
			{Path: "forwarding.patches", Type: TypeList, Unit: "patches", DefaultText: "none", Doc: "Everything received on port from leaves by port to."},
			{Path: "forwarding.patches[].from", Type: TypeString, DefaultText: "required", RangeText: "a port name", Doc: "The ingress port."},
			{Path: "forwarding.patches[].to", Type: TypeString, DefaultText: "required", RangeText: "another port's name", Doc: "The egress port."},
			{Path: "forwarding.macs", Type: TypeList, Unit: "rules", DefaultText: "none", Doc: "Frames for a destination MAC leave by a port."},
			{Path: "forwarding.macs[].mac", Type: TypeString, DefaultText: "required", RangeText: "a 6-byte MAC, 02:00:00:00:00:01", Doc: "The destination MAC."},
			{Path: "forwarding.macs[].port", Type: TypeString, DefaultText: "required", RangeText: "a port name", Doc: "The port it leaves by."},
			{Path: "forwarding.prefixes", Type: TypeList, Unit: "rules", DefaultText: "none", Doc: "Packets for an IP prefix leave by a port; the longest prefix wins."},
			{Path: "forwarding.prefixes[].prefix", Type: TypeString, DefaultText: "required", RangeText: "198.18.0.0/24, 2001:2::/64; an address alone is a /32 or /128", Doc: "The destination prefix."},
			{Path: "forwarding.prefixes[].port", Type: TypeString, DefaultText: "required", RangeText: "a port name", Doc: "The port it leaves by."},
		}},
		{Name: "classifier", Doc: "Which egress queue a packet joins: by default the DSCP class selector DSCP >> 3, capped at the port's last queue.", Keys: []Key{
			{Path: "classifier.dscp", Type: TypeMapping, Unit: "DSCP → queue", DefaultText: "none",
				RangeText: fmt.Sprintf("DSCP in [0, %d], queue in [0, the most queues any port has − 1]", dataplane.MaxDSCP),
				Doc:       "Queues for DSCPs, overriding the class selector."},
			{Path: "classifier.use_pcp", Type: TypeBool, Default: false,
				Doc: "VLAN-tagged frames use the 802.1Q PCP instead (PCP n → queue n unless pcp says otherwise); untagged frames still use DSCP."},
			{Path: "classifier.pcp", Type: TypeMapping, Unit: "PCP → queue", DefaultText: "none",
				RangeText: fmt.Sprintf("PCP in [0, %d], queue as for dscp", dataplane.MaxPCP),
				Doc:       "Queues for PCPs, with use_pcp."},
		}},
		{Name: "ports", Doc: "The switch's ports, each an interface.", Keys: []Key{
			{Path: "ports", Type: TypeList, Unit: "ports", DefaultText: "required", RangeText: fmt.Sprintf("1 to %d ports", dataplane.MaxPorts),
				Doc: "The ports, in order."},
			{Path: "port_defaults", Type: TypeMapping, Unit: "port keys", DefaultText: "none",
				RangeText: "any ports[] key but name and interface",
				Doc:       "A template merged into every port: a port's own keys win, mappings merge key by key, lists are replaced whole."},
			{Path: "ports[].name", Type: TypeString, DefaultText: "required",
				RangeText: fmt.Sprintf("1 to %d letters, digits, _ . : -, starting with a letter or digit; unique", maxNameLen),
				Doc:       "The port's name, which labels its counters and which rules and captures refer to."},
			{Path: "ports[].interface", Type: TypeString, DefaultText: "the port's name", RangeText: fmt.Sprintf("a Linux interface name, 1 to %d bytes; one port each", maxIfName),
				Doc: "The interface the port drives."},
			{Path: "ports[].queues", Type: TypeInteger, Unit: "queues", Default: int64(scheduler.DefaultQueues), Range: closed(1, scheduler.MaxQueues),
				Doc: "Egress queues."},
			{Path: "ports[].mtu", Type: TypeInteger, Unit: "bytes", Default: int64(scheduler.DefaultMTU), Range: closed(scheduler.MinMTU, scheduler.MaxMTU),
				RangeText: "at most frame_size", Doc: "The largest frame the port's queues carry, without FCS."},
			{Path: "ports[].rate", Type: TypeRate, Default: int64(0), Range: closed(MinRate, MaxRate), RangeText: "or 0 for unshaped",
				Doc: "The emulated line rate: a token bucket drains the port at this rate, so that queues build here, not in the NIC (001 §4.2 used 99.5% of 1 Gbit/s)."},
			{Path: "ports[].bucket", Type: TypeSize, Range: closed(0, scheduler.MaxBucket),
				DefaultText: fmt.Sprintf("the bytes of %v at the rate, at least %s (001 §4.2); 0 unshaped", dataplane.DefaultBucketTime, FormatSize(dataplane.DefaultBucketMin)),
				Doc:         "The shaper's token bucket."},
			{Path: "ports[].overhead", Type: TypeChoice, Default: "ethernet", Choices: []string{"ethernet", "none"},
				Doc: "What a frame costs the shaper and scheduler: ethernet adds FCS, padding to 64 bytes, preamble and inter-frame gap; none counts the frame alone."},
			{Path: "ports[].pool", Type: TypeString, DefaultText: "the first pool", RangeText: "a pool's name",
				Doc: "The pool the port's queues share."},
			{Path: "ports[].markers.enqueue", Type: TypeMarkers, DefaultText: "none",
				Doc: "The enqueue marker chain, before a packet joins its queue: each marker a scheme and its parameters (docs/marking.md)."},
			{Path: "ports[].markers.dequeue", Type: TypeMarkers, DefaultText: "none",
				Doc: "The dequeue marker chain, when the scheduler picks a packet (sojourn-time schemes)."},
			{Path: "ports[].non_ect", Type: TypeChoice, Default: "drop", Choices: []string{"drop", "pass"},
				Doc: "What becomes of a packet a chain would mark that is not ECN-capable: dropped, as RED does, or passed."},
			{Path: "ports[].coalesce", Type: TypeDuration, Default: dataplane.DefaultCoalesce, Range: closed(0, float64(dataplane.MaxCoalesce)),
				RangeText: "0 sends every packet at its departure time",
				Doc:       "How long a packet that has left the port's virtual line may wait for its batch to the device."},
			{Path: "ports[].worker", Type: TypeInteger, Unit: "worker", Default: int64(-1), RangeText: "[-1, workers − 1]",
				Doc: "The worker that owns the port; -1 lets the switch choose."},
		}},
		{Name: "ports[].scheduler", Doc: "The port's egress scheduler.", Keys: []Key{
			{Path: "ports[].scheduler.kind", Type: TypeChoice, Default: "dwrr", Choices: []string{"sp", "wrr", "dwrr", "wfq", "dualq"},
				Doc: "The discipline; with some queues strict, wrr, dwrr and wfq are SP over them; dualq is the DualQ Coupled AQM (RFC 9332), with the keys of its own section."},
			{Path: "ports[].scheduler.queues", Type: TypeMapping, Unit: "queue → settings", DefaultText: "none",
				RangeText: "queues in [0, ports[].queues − 1]", Doc: "Per-queue settings by queue index; absent queues get the defaults."},
			{Path: "ports[].scheduler.queues.N.weight", Type: TypeInteger, Unit: "weight", Default: int64(1), Range: closed(1, scheduler.MaxWeight),
				Doc: "The WFQ share, or the WRR/DWRR quantum in MTUs."},
			{Path: "ports[].scheduler.queues.N.quantum", Type: TypeSize, DefaultText: "weight × the MTU as charged",
				RangeText: fmt.Sprintf("[1, %s]; for DWRR at least the MTU as charged (1538 with overhead ethernet); only non-strict wrr and dwrr queues", FormatSize(scheduler.MaxQuantum)),
				Doc:       "Bytes per round."},
			{Path: "ports[].scheduler.queues.N.strict", Type: TypeBool, Default: false, DefaultText: "true for every queue with kind sp",
				Doc: "Serve the queue at strict priority above the others (the higher index first)."},
			{Path: "ports[].scheduler.beta", Type: TypeNumber, Default: scheduler.DefaultBeta, Range: open(0, 1),
				Doc: "The smoothing β of MQ-ECN's round time T_round (001 §3.3.1). With kind dualq, PI2's gain β instead: " + dualqBeta() + "."},
			{Path: "ports[].scheduler.t_idle", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(maxTIdle)),
				RangeText: "0 means one MTU's transmission time at the port's rate",
				Doc:       "Idle time after which T_round decays (001 §3.3.1)."},
		}},
		dualqSection(),
		{Name: "ports[].buffer", Doc: "Buffer admission per egress queue (002 §II-A): a queue uses its reserve, then the shared pool up to its Dynamic Threshold α·(B − Σ shared occupancy), or up to a static cap. The keys at this level apply to every queue; queues overrides them by index.", Keys: []Key{
			{Path: "ports[].buffer.alpha", Type: TypeNumber, Default: dataplane.DefaultAlpha, Range: leftOpen(0, buffer.MaxAlpha),
				RangeText: "not with cap", Doc: "The Dynamic Threshold's α (002 Eq. 1)."},
			{Path: "ports[].buffer.reserve", Type: TypeSize, Default: int64(0), Range: closed(0, buffer.MaxPoolSize),
				Doc: "Private bytes per queue, outside the pool."},
			{Path: "ports[].buffer.cap", Type: TypeSize, Default: int64(0), RangeText: "[0, the pool's size]; 0 means none",
				Doc: "A static limit on the queue's shared occupancy instead of the Dynamic Threshold (alpha must then be absent)."},
			{Path: "ports[].buffer.queues", Type: TypeMapping, Unit: "queue → settings", DefaultText: "none",
				RangeText: "queues in [0, ports[].queues − 1]", Doc: "Per-queue alpha, reserve and cap by queue index."},
			{Path: "ports[].buffer.queues.N.alpha", Type: TypeNumber, DefaultText: "the port's alpha", Range: leftOpen(0, buffer.MaxAlpha),
				RangeText: "not with cap", Doc: "The queue's α."},
			{Path: "ports[].buffer.queues.N.reserve", Type: TypeSize, DefaultText: "the port's reserve", Range: closed(0, buffer.MaxPoolSize),
				Doc: "The queue's private bytes."},
			{Path: "ports[].buffer.queues.N.cap", Type: TypeSize, DefaultText: "the port's cap", RangeText: "[0, the pool's size]; 0 means none",
				Doc: "The queue's static cap."},
		}},
		{Name: "ports[].delay", Doc: "Emulated propagation delay before the egress queue (held packets are not in the buffer): each packet waits fixed plus a jitter, counted from its arrival; a queue's packets never overtake each other.", Keys: []Key{
			{Path: "ports[].delay.fixed", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				RangeText: fmt.Sprintf("fixed + jitter ≤ %v", dataplane.MaxDelay), Doc: "The delay every packet of the port waits."},
			{Path: "ports[].delay.jitter", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				Doc: "The jitter added to it, drawn from distribution."},
			{Path: "ports[].delay.distribution", Type: TypeChoice, Default: "uniform", Choices: []string{"uniform", "normal", "exponential"},
				Doc: "The jitter's: uniform in [0, jitter), normal with standard deviation jitter (the total never below 0), or exponential with mean jitter."},
			{Path: "ports[].delay.seed", Type: TypeInteger, Unit: "seed", DefaultText: "the port's index + 1", RangeText: "any 64-bit unsigned integer",
				Doc: "The jitter's random seed."},
			{Path: "ports[].delay.per_queue", Type: TypeMapping, Unit: "queue → {fixed, jitter}", DefaultText: "none",
				RangeText: "queues in [0, ports[].queues − 1]", Doc: "Delays by egress queue, replacing the port's."},
			{Path: "ports[].delay.per_queue.N.fixed", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				Doc: "The queue's delay."},
			{Path: "ports[].delay.per_queue.N.jitter", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				Doc: "The queue's jitter."},
			{Path: "ports[].delay.per_dscp_class", Type: TypeMapping, Unit: "DSCP class → {fixed, jitter}", DefaultText: "none",
				RangeText: "classes in [0, 7] (DSCP >> 3), each classified into one queue",
				Doc:       "Delays by DSCP class, applied to the queue the class's DSCPs go to."},
			{Path: "ports[].delay.per_dscp_class.N.fixed", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				Doc: "The class's delay."},
			{Path: "ports[].delay.per_dscp_class.N.jitter", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(dataplane.MaxDelay)),
				Doc: "The class's jitter."},
		}},
		{Name: "ports[].trim", Doc: "Packet trimming (SAI's trim on failed admission; NDP, SIGCOMM 2017): a packet the port's buffer or an enqueue marker refuses is cut to its headers, marked with dscp and queued on queue instead of dropped, so that its receiver learns of the loss at once (docs/telemetry.md counts it). Only UDP over IPv4 or IPv6 is trimmed; the rest is dropped as before. Off unless the section is set; queue and dscp are then required. A trim queue that is not strict priority, has no buffer reserve, or whose DSCP the classifier puts elsewhere draws a warning.", Keys: []Key{
			{Path: "ports[].trim.bytes", Type: TypeSize, Default: int64(0), Range: closed(dataplane.MinTrimSize, dataplane.MaxFrameSize-1),
				RangeText: fmt.Sprintf("below the port's mtu; 0 keeps the L2–L4 headers plus %d bytes", packet.DefaultTrimPayload),
				Doc:       "The frame length a trimmed packet keeps; never less than its headers."},
			{Path: "ports[].trim.queue", Type: TypeInteger, Unit: "queue", DefaultText: "required",
				RangeText: "[0, ports[].queues − 1]; not the port's only queue, nor on a dualq port",
				Doc:       "The queue trimmed packets go to: best a strict priority queue with a buffer reserve."},
			{Path: "ports[].trim.dscp", Type: TypeInteger, Unit: "DSCP", DefaultText: "required", Range: closed(0, dataplane.MaxTrimDSCP),
				Doc: "The DSCP that marks a packet trimmed (SAI's PACKET_TRIM_DSCP_VALUE); its ECN field is kept."},
			{Path: "ports[].trim.queues", Type: TypeList, Unit: "queue", DefaultText: "every queue but queue",
				RangeText: "queues in [0, ports[].queues − 1], not queue, each once",
				Doc:       "The queues whose refused packets are trimmed (SAI's per-queue eligibility)."},
		}},
		{Name: "ports[].int", Doc: "In-band network telemetry (INT-MD over UDP, INT spec v2.1 §5; HPCC's per-hop feedback): a UDP packet to port, or with DSCP dscp, whose payload starts with INT headers gets this hop's record on top of its stack as it leaves the port, with the fields its instruction bitmap asks for (queue and port occupancy, the bytes the port has sent, the departure time on the switch's clock, the port's rate, node_id). A record never grows a frame past the port's mtu: a packet without room leaves without one and is counted. Needs a shaped port (rate); port or dscp required; it cannot change while the switch runs.", Keys: []Key{
			{Path: "ports[].int.port", Type: TypeInteger, Unit: "UDP port", DefaultText: "none", Range: closed(1, 65535),
				Doc: "The UDP destination port of the packets that carry INT headers."},
			{Path: "ports[].int.dscp", Type: TypeInteger, Unit: "DSCP", DefaultText: "none", Range: closed(0, dataplane.MaxDSCP),
				RangeText: "not the port's trim.dscp",
				Doc:       "The DSCP of the packets that carry INT headers, where port does not say."},
			{Path: "ports[].int.node_id", Type: TypeInteger, Unit: "ID", Default: int64(0), RangeText: "[0, 2³² − 1]",
				Doc: "This switch's node ID in the records that ask for one."},
		}},
		{Name: "capture", Doc: "pcap and pcapng captures (docs/capture.md): the directory every capture file is confined to, and the captures that start with the switch.", Keys: []Key{
			{Path: "capture.dir", Type: TypeString, Default: DefaultCaptureDir,
				Doc: "The directory every capture file goes in, created mode 0750 on first use; a relative path is relative to where ecnswitch run starts."},
			{Path: "capture.quota", Type: TypeSize, Default: int64(capture.DefaultQuota), Range: closed(0, maxQuota), RangeText: "0 for no quota",
				Doc: "Bytes the directory may hold: a capture starts only if the files there and the most every running capture may keep fit."},
			{Path: "capture.ring_memory", Type: TypeSize, Default: int64(capture.DefaultRingMemory), Range: closed(minRingMemory, maxRingMemory),
				Doc: "Memory of the running captures' rings together."},
			{Path: "capture.captures", Type: TypeList, Unit: "captures", DefaultText: "none", RangeText: fmt.Sprintf("at most %d", MaxCaptures),
				Doc: "Captures that start with the switch; more start at run time with ecnswitch capture start."},
			{Path: "capture.captures[].port", Type: TypeString, DefaultText: "required", RangeText: "a port name", Doc: "The port captured."},
			{Path: "capture.captures[].direction", Type: TypeChoice, Default: string(capture.Egress), DefaultText: "drops with filter dropped",
				Choices: []string{string(capture.Ingress), string(capture.Egress), string(capture.Drops)},
				Doc:     "What the port received, sent (after any CE mark) or dropped."},
			{Path: "capture.captures[].filter", Type: TypeChoice, Default: string(capture.All),
				Choices: []string{string(capture.All), string(capture.Marked), string(capture.Dropped)},
				Doc:     "All packets of the direction, the egress packets the switch set CE on, or the dropped ones (direction drops)."},
			{Path: "capture.captures[].queue", Type: TypeInteger, Unit: "queue", DefaultText: "any", RangeText: "[0, the port's queues − 1]; not with direction ingress",
				Doc: "Only this egress queue's packets."},
			{Path: "capture.captures[].dscp", Type: TypeInteger, Unit: "DSCP", DefaultText: "any", Range: closed(0, dataplane.MaxDSCP),
				Doc: "Only IP packets with this DSCP."},
			{Path: "capture.captures[].format", Type: TypeChoice, Default: string(capture.PCAPNG), Choices: []string{string(capture.PCAPNG), string(capture.PCAP)},
				Doc: "pcapng carries a comment on every packet naming the marker, its value and threshold, or the drop reason."},
			{Path: "capture.captures[].path", Type: TypeString, DefaultText: "PORT-DIRECTION-FILTER.FORMAT", RangeText: "relative, inside capture.dir; one capture each",
				Doc: "The file; rotated files insert .1, .2, … before the extension."},
			{Path: "capture.captures[].snaplen", Type: TypeInteger, Unit: "bytes", Default: int64(capture.DefaultSnapLen), Range: closed(capture.MinSnapLen, capture.MaxSnapLen),
				Doc: "Bytes kept of each frame."},
			{Path: "capture.captures[].max_bytes", Type: TypeSize, Default: int64(capture.DefaultMaxBytes), Range: closed(capture.MinMaxBytes, capture.MaxMaxBytes),
				RangeText: "or 0 (or -1) never to rotate", Doc: "Start a new file before one would grow past this."},
			{Path: "capture.captures[].max_files", Type: TypeInteger, Unit: "files", Default: int64(capture.DefaultMaxFiles), Range: closed(-1, capture.MaxMaxFiles),
				RangeText: "0 (or -1) keeps every file; not with max_bytes 0", Doc: "Keep only the newest files."},
			{Path: "capture.captures[].ring", Type: TypeInteger, Unit: "slots", Default: int64(capture.DefaultRing), Range: closed(capture.MinRing, capture.MaxRing),
				RangeText: fmt.Sprintf("a power of two; ring × snaplen ≤ %s", FormatSize(capture.MaxRingBytes)),
				Doc:       "Slots between the port's worker and the file writer; when it is full packets are skipped and counted, never waited for."},
		}},
		{Name: "control", Doc: "The UNIX socket on which the switch takes commands (ecnswitch capture); its file mode decides who may (docs/security.md).", Keys: []Key{
			{Path: "control.socket", Type: TypeString, Default: DefaultControlSocket,
				RangeText: fmt.Sprintf("an absolute path of at most %d bytes, or \"\" for none", maxSocketPath),
				Doc:       "The socket, mode 0600 (0660 with group)."},
			{Path: "control.group", Type: TypeString, Default: "", RangeText: "a group name or number",
				Doc: "A group that may use the socket too."},
		}},
	}
}

// dualqSection documents the scheduler keys of kind dualq: the coupled
// AQM's, as marking declares them (tc-dualpi2's names), then the
// classifier's and the Classic queue's protection.
func dualqSection() Section {
	sec := Section{Name: "ports[].scheduler, kind dualq", Doc: "The DualQ Coupled AQM (RFC 9332 §2.4, Appendix A.1; tc-dualpi2): an L4S queue (ECT(1) and CE, queue 1) served before a Classic queue (ECT(0) and Not-ECT, queue 0), PI2 on the Classic queue's delay, coupled into the L4S queue's marking. Its keys take tc-dualpi2's names."}
	for _, p := range marking.DualPI2Params() {
		if p.Key == "beta" {
			continue // the key of the round-robin kinds' β, whose Doc says this one
		}
		k := Key{Path: "ports[].scheduler." + p.Key, DefaultText: p.DefaultText, Doc: capital(p.Doc) + "."}
		switch p.Unit {
		case marking.UnitBool, marking.UnitSeed, marking.UnitChoice:
		default:
			k.Range = &p.Range
		}
		switch p.Unit {
		case marking.UnitDuration:
			k.Type = TypeDuration
			if d, ok := p.Default.(int64); ok {
				k.Default = time.Duration(d)
			}
		case marking.UnitPackets:
			k.Type, k.Unit, k.Default = TypeInteger, "packets", p.Default
		case marking.UnitBool:
			k.Type, k.Default = TypeBool, p.Default
		case marking.UnitSeed:
			k.Type, k.Unit, k.RangeText = TypeInteger, "seed", "any 64-bit unsigned integer"
		default:
			k.Type, k.Unit, k.Default = TypeNumber, p.Unit.String(), p.Default
		}
		if p.Key == "step_thresh" {
			k.RangeText = "or a number of packets: 5pkt"
		}
		sec.Keys = append(sec.Keys, k)
	}
	return sec.with(
		Key{Path: "ports[].scheduler.ecn_mask", Type: TypeChoice, Default: marking.ECNMaskL4S.String(),
			Choices: []string{marking.ECNMaskL4S.String(), marking.ECNMaskAny.String()},
			Doc:     "Which ECN codepoints go to the L4S queue: ECT(1) and CE, or every ECN-capable packet."},
		Key{Path: "ports[].scheduler.classic_protection", Type: TypeInteger, Unit: "%", Default: int64(scheduler.DefaultClassicProtection),
			Range: closed(0, 100), RangeText: "0 serves the L4S queue at strict priority",
			Doc: "The Classic queue's share of the credit of the weighted round robin between the two queues (Linux's c_protection)."},
		Key{Path: "ports[].scheduler.tshift", Type: TypeDuration, Default: time.Duration(0), Range: closed(0, float64(scheduler.MaxTShift)),
			RangeText: "0 keeps the round robin",
			Doc:       "Serve the queues as a time-shifted FIFO instead (RFC 9332 Appendix A.2): the Classic head goes first once it has waited tshift longer than the L4S head."},
		Key{Path: "ports[].scheduler.dscp", Type: TypeMapping, Unit: "DSCP → classic or l4s", DefaultText: "none",
			RangeText: fmt.Sprintf("DSCP in [0, %d]", dataplane.MaxDSCP),
			Doc:       "Overrides of the ECN classifier by DSCP."},
	)
}

// with returns s with keys appended.
func (s Section) with(keys ...Key) Section {
	s.Keys = append(s.Keys, keys...)
	return s
}

// capital returns s with its first letter upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

// dualqBeta says what beta is on a dualq port: PI2's proportional gain.
func dualqBeta() string {
	for _, p := range marking.DualPI2Params() {
		if p.Key == "beta" {
			return fmt.Sprintf("%s, in Hz, default %v, in %s", p.Doc, p.Default, FormatRange(p))
		}
	}
	return "PI2's gain"
}
