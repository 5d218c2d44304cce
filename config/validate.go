package config

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Defaults and limits of the file's keys. docs and examples/ecnswitch.yaml
// quote them.
const (
	DefaultListen            = "127.0.0.1:9090"
	DefaultQueueSamplePeriod = 100 * time.Microsecond
	DefaultQueueSamples      = 65536
	DefaultPoolName          = "default"
	DefaultPoolSize          = 2_000_000 // bytes: the MQ-ECN/TCN kernel module's shared_buffer (2 MB)
	DefaultQueues            = scheduler.DefaultQueues
	DefaultMTU               = 1514 // bytes: a 1500-byte IP packet in an untagged frame, without FCS
	DefaultAlpha             = 1.0
	DefaultBucketMin         = 2500                  // bytes: 001 §4.2's 2.5 KB bucket
	DefaultBucketTime        = 20 * time.Microsecond // the HKUST module's bucket_ns; equals 2.5 KB at 1 Gbit/s
	DefaultAgeTime           = 300 * time.Second
	DefaultTableSize         = 4096

	MinRate     = 1_000_000       // bit/s: 1 Mbit
	MaxRate     = 400_000_000_000 // bit/s: 400 Gbit
	MaxDelay    = time.Second     // fixed and jitter
	maxPorts    = 1024
	maxWorkers  = 64
	maxSeries   = 1 << 26 // samples × series held by the telemetry ring (512 MiB)
	maxCPU      = 1023
	maxNameLen  = 32
	maxIfName   = 15
	maxBucket   = scheduler.MaxBucket
	maxQuantum  = scheduler.MaxQuantum
	maxSamples  = 1 << 24
	maxAgeTime  = 24 * time.Hour
	maxTableSz  = 1 << 24
	minPeriod   = time.Microsecond
	maxPeriod   = 10 * time.Second
	maxSpin     = 1 << 30
	maxFrames   = 1 << 22
	minFrameSz  = 128
	maxFrameSz  = 65536
	maxBatch    = 1024
	minPortMTU  = scheduler.MinMTU
	maxPortMTU  = 65536
	maxPoolSize = buffer.MaxPoolSize
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// checker validates a decoded file and collects every error.
type checker struct {
	ix   *index
	errs Errors
}

func (c *checker) errf(key, format string, args ...any) {
	c.add(Errors{{Key: key, Line: c.ix.line(key), Msg: fmt.Sprintf(format, args...)}})
}

// add appends errors, skipping repeats: a bad key in port_defaults is
// reported once, not once per port.
func (c *checker) add(es Errors) {
next:
	for _, e := range es {
		s := e.Error()
		for _, o := range c.errs {
			if o.Error() == s {
				continue next
			}
		}
		c.errs = append(c.errs, e)
	}
}

func (c *checker) sorted() Errors {
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i].Line, c.errs[j].Line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
	return c.errs
}

// portKey returns where port i's sub-key was written: in the port, else in
// port_defaults, else (for afxdp.*) in the top-level afxdp section; the
// port's own path if it was not written at all.
func (c *checker) portKey(i int, sub string) string {
	own := fmt.Sprintf("ports[%d].%s", i, sub)
	switch {
	case c.ix.has(own):
		return own
	case c.ix.has("port_defaults." + sub):
		return "port_defaults." + sub
	case strings.HasPrefix(sub, "afxdp.") && c.ix.has(sub):
		return sub
	}
	return own
}

// intIn checks an optional integer key against [lo, hi] and returns it or def.
func (c *checker) intIn(key string, p *int, def, lo, hi int) int {
	if p == nil {
		return def
	}
	if *p < lo || *p > hi {
		c.errf(key, "%d outside [%d, %d]", *p, lo, hi)
		return def
	}
	return *p
}

// pow2In checks an optional power-of-two key against [lo, hi].
func (c *checker) pow2In(key string, p *int, def, lo, hi int) int {
	if p == nil {
		return def
	}
	if *p < lo || *p > hi || *p&(*p-1) != 0 {
		c.errf(key, "%d is not a power of two in [%d, %d]", *p, lo, hi)
		return def
	}
	return *p
}

// oneOf checks a string key against its allowed values; "" means def.
func (c *checker) oneOf(key, v, def string, allowed ...string) string {
	if v == "" {
		return def
	}
	if !slices.Contains(allowed, v) {
		c.errf(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		return def
	}
	return v
}

func (c *checker) config(f *fileYAML) *Config {
	cfg := &Config{}
	cfg.LogLevel = c.oneOf("log_level", f.LogLevel, "info", "debug", "info", "warn", "error")
	cfg.Workers = c.intIn("workers", f.Workers, 1, 1, maxWorkers)
	cfg.Frames = c.pow2In("frames", f.Frames, 16384, 64, maxFrames)
	cfg.FrameSize = c.intIn("frame_size", f.FrameSize, 2048, minFrameSz, maxFrameSz)
	cfg.Batch = c.intIn("batch", f.Batch, 64, 1, maxBatch)
	cfg.Spin = c.intIn("spin", f.Spin, 256, 1, maxSpin)
	if f.BusyPoll {
		if f.Spin != nil {
			c.errf("spin", "%d set with busy_poll: true, which never waits; remove one", *f.Spin)
		}
		cfg.Spin = -1
	}
	seen := map[int]bool{}
	for i, cpu := range f.CPUs {
		key := fmt.Sprintf("cpus[%d]", i)
		switch {
		case cpu < 0 || cpu > maxCPU:
			c.errf(key, "%d outside [0, %d]", cpu, maxCPU)
		case seen[cpu]:
			c.errf(key, "CPU %d listed twice", cpu)
		}
		seen[cpu] = true
	}
	cfg.CPUs = slices.Clone(f.CPUs)

	c.pools(cfg, f.Pools)
	if len(f.Ports) == 0 {
		c.errf("ports", "none configured; want 1 to %d ports", maxPorts)
		return cfg
	}
	if len(f.Ports) > maxPorts {
		c.errf("ports", "%d configured; want 1 to %d", len(f.Ports), maxPorts)
		return cfg
	}
	names := map[string]int{}
	ifaces := map[string]int{}
	for i := range f.Ports {
		p := &f.Ports[i]
		key := fmt.Sprintf("ports[%d]", i)
		switch {
		case p.Name == "":
			c.errf(key+".name", "missing; every port needs a unique name")
		case len(p.Name) > maxNameLen || !nameRE.MatchString(p.Name):
			c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-', starting with a letter or digit", p.Name, maxNameLen)
		default:
			if j, dup := names[p.Name]; dup {
				c.errf(key+".name", "%q already names ports[%d]", p.Name, j)
			}
			names[p.Name] = i
		}
		iface := p.Interface
		if iface == "" {
			iface = p.Name
		}
		if len(iface) > maxIfName || strings.ContainsAny(iface, "/ \t\n") || iface == "." || iface == ".." {
			c.errf(key+".interface", "%q is not a Linux interface name (1 to %d bytes, no '/' or spaces)", iface, maxIfName)
		} else if j, dup := ifaces[iface]; dup && iface != "" {
			c.errf(key+".interface", "%q is already driven by ports[%d]", iface, j)
		}
		ifaces[iface] = i
	}
	c.telemetry(cfg, f)
	cfg.Classifier = c.classifier(f.Classifier)
	for i := range f.Ports {
		cfg.Ports = append(cfg.Ports, c.port(cfg, f, i))
	}
	// Markers last: BCC reads the buffer settings of every port on its pool.
	for i := range cfg.Ports {
		cfg.Ports[i].Markers = c.markers(cfg, f, i)
	}
	maxQ := 1
	for _, p := range cfg.Ports {
		maxQ = max(maxQ, p.Scheduler.NumQueues)
	}
	for _, k := range sortedKeys(cfg.Classifier.DSCP) {
		if q := cfg.Classifier.DSCP[k]; q >= maxQ {
			c.errf(fmt.Sprintf("classifier.dscp.%d", k), "queue %d outside [0, %d] (the most queues any port has, minus 1)", q, maxQ-1)
		}
	}
	for _, k := range sortedKeys(cfg.Classifier.PCP) {
		if q := cfg.Classifier.PCP[k]; q >= maxQ {
			c.errf(fmt.Sprintf("classifier.pcp.%d", k), "queue %d outside [0, %d] (the most queues any port has, minus 1)", q, maxQ-1)
		}
	}
	cfg.Forwarding = c.forwarding(f.Forwarding, names)
	c.telemetryMemory(cfg)
	cfg.Capture = c.capture(cfg, f.Capture)
	return cfg
}

func sortedKeys[V any](m map[uint8]V) []uint8 {
	keys := make([]uint8, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (c *checker) pools(cfg *Config, pools []poolYAML) {
	if len(pools) == 0 {
		cfg.Pools = []Pool{{Name: DefaultPoolName, Size: DefaultPoolSize}}
		return
	}
	seen := map[string]int{}
	for i, p := range pools {
		key := fmt.Sprintf("pools[%d]", i)
		if p.Name == "" || len(p.Name) > maxNameLen || !nameRE.MatchString(p.Name) {
			c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-'", p.Name, maxNameLen)
		} else if j, dup := seen[p.Name]; dup {
			c.errf(key+".name", "%q already names pools[%d]", p.Name, j)
		}
		seen[p.Name] = i
		size := int64(0)
		if p.Size == nil {
			c.errf(key+".size", "missing; want the pool's shared buffer in (0, %s]", FormatSize(maxPoolSize))
		} else if size = p.Size.N; size < 1 || size > maxPoolSize {
			c.errf(key+".size", "%q outside [1, %s]", p.Size, FormatSize(maxPoolSize))
		}
		cfg.Pools = append(cfg.Pools, Pool{Name: p.Name, Size: size})
	}
}

func (c *checker) telemetry(cfg *Config, f *fileYAML) {
	t := f.Telemetry
	cfg.Telemetry = Telemetry{Enabled: true, Listen: DefaultListen, QueueSamplePeriod: DefaultQueueSamplePeriod, QueueSamples: DefaultQueueSamples}
	if t.Enabled != nil {
		cfg.Telemetry.Enabled = *t.Enabled
	}
	if t.Listen != nil {
		host, port, err := net.SplitHostPort(*t.Listen)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			c.errf("telemetry.listen", "%q is not host:port (e.g. 127.0.0.1:9090, [::1]:9090, :9090 for every address)", *t.Listen)
		case perr != nil || n < 0 || n > 65535:
			c.errf("telemetry.listen", "port %q outside [0, 65535]", port)
		case host != "" && host != "localhost" && net.ParseIP(host) == nil:
			c.errf("telemetry.listen", "host %q is not an IP address or localhost", host)
		default:
			cfg.Telemetry.Listen = *t.Listen
		}
	}
	if t.QueueSamplePeriod != nil {
		if d := t.QueueSamplePeriod.D; d < minPeriod || d > maxPeriod {
			c.errf("telemetry.queue_sample_period", "%q outside [%v, %v]", t.QueueSamplePeriod, minPeriod, maxPeriod)
		} else {
			cfg.Telemetry.QueueSamplePeriod = d
		}
	}
	cfg.Telemetry.QueueSamples = c.intIn("telemetry.queue_samples", t.QueueSamples, DefaultQueueSamples, 2, maxSamples)
}

// telemetryMemory bounds the sampler's ring: samples × series int64s.
func (c *checker) telemetryMemory(cfg *Config) {
	if !cfg.Telemetry.Enabled {
		return
	}
	series := len(cfg.Pools)
	for _, p := range cfg.Ports {
		series += p.Scheduler.NumQueues
	}
	if n := cfg.Telemetry.QueueSamples; int64(n)*int64(series+1) > maxSeries {
		c.errf("telemetry.queue_samples", "%d samples × %d series (queues, pools and the time) exceed %d values (%d MiB); want at most %d",
			n, series+1, maxSeries, maxSeries*8>>20, maxSeries/(series+1))
	}
}

func (c *checker) classifier(y classifierYAML) dataplane.Classifier {
	return dataplane.Classifier{
		UsePCP: y.UsePCP,
		DSCP:   c.codepoints("classifier.dscp", "DSCP", y.DSCP, 63),
		PCP:    c.codepoints("classifier.pcp", "PCP", y.PCP, 7),
	}
}

// codepoints checks a map of codepoints in [0, maxCode] to queues; nil
// when it is empty.
func (c *checker) codepoints(key, name string, m map[int]int, maxCode int) map[uint8]int {
	var out map[uint8]int
	for _, k := range sortedIntKeys(m) {
		key := fmt.Sprintf("%s.%d", key, k)
		q := m[k]
		switch {
		case k < 0 || k > maxCode:
			c.errf(key, "%s %d outside [0, %d]", name, k, maxCode)
		case q < 0 || q >= scheduler.MaxQueues:
			c.errf(key, "queue %d outside [0, %d]", q, scheduler.MaxQueues-1)
		default:
			if out == nil {
				out = map[uint8]int{}
			}
			out[uint8(k)] = q
		}
	}
	return out
}

func sortedIntKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (c *checker) forwarding(y forwardingYAML, names map[string]int) dataplane.Forwarding {
	fw := dataplane.Forwarding{AgeTime: DefaultAgeTime, TableSize: DefaultTableSize}
	if y.Learning != nil {
		fw.NoLearning = !*y.Learning
	}
	if y.AgeTime != nil {
		if d := y.AgeTime.D; d < time.Second || d > maxAgeTime {
			c.errf("forwarding.age_time", "%q outside [1s, %v]", y.AgeTime, maxAgeTime)
		} else {
			fw.AgeTime = d
		}
	}
	fw.TableSize = c.intIn("forwarding.table_size", y.TableSize, DefaultTableSize, 1, maxTableSz)
	port := func(key, name string) (int, bool) {
		if name == "" {
			c.errf(key, "missing; want a port name")
			return 0, false
		}
		i, ok := names[name]
		if !ok {
			c.errf(key, "%q is not a port; ports are %s", name, strings.Join(sortedNames(names), ", "))
		}
		return i, ok
	}
	for i, p := range y.Patches {
		key := fmt.Sprintf("forwarding.patches[%d]", i)
		from, ok1 := port(key+".from", p.From)
		to, ok2 := port(key+".to", p.To)
		if ok1 && ok2 {
			if from == to {
				c.errf(key+".to", "%q patched to itself", p.To)
			}
			fw.Patches = append(fw.Patches, dataplane.Patch{From: from, To: to})
		}
	}
	for i, m := range y.MACs {
		key := fmt.Sprintf("forwarding.macs[%d]", i)
		mac, err := net.ParseMAC(m.MAC)
		if err != nil || len(mac) != 6 {
			c.errf(key+".mac", "%q is not a 6-byte MAC address like 02:00:00:00:00:01", m.MAC)
		}
		if p, ok := port(key+".port", m.Port); ok && err == nil && len(mac) == 6 {
			fw.MACs = append(fw.MACs, dataplane.MACRule{MAC: mac, Port: p})
		}
	}
	for i, r := range y.Prefixes {
		key := fmt.Sprintf("forwarding.prefixes[%d]", i)
		pfx, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			if a, aerr := netip.ParseAddr(r.Prefix); aerr == nil {
				pfx, err = a.Prefix(a.BitLen())
			}
		}
		if err != nil {
			c.errf(key+".prefix", "%q is not an IP prefix like 198.18.0.0/24 or 2001:2::/64", r.Prefix)
		}
		if p, ok := port(key+".port", r.Port); ok && err == nil {
			fw.Prefixes = append(fw.Prefixes, dataplane.PrefixRule{Prefix: pfx, Port: p})
		}
	}
	return fw
}

func sortedNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return m[a] - m[b] })
	return out
}

func (c *checker) port(cfg *Config, f *fileYAML, i int) Port {
	y := &f.Ports[i]
	k := func(sub string) string { return c.portKey(i, sub) }
	p := Port{Name: y.Name, Interface: y.Interface, Worker: -1}
	if p.Interface == "" {
		p.Interface = p.Name
	}
	p.AFXDP = c.afxdp(i, &y.AFXDP, cfg.FrameSize)

	nq := c.intIn(k("queues"), y.Queues, DefaultQueues, 1, scheduler.MaxQueues)
	mtu := c.intIn(k("mtu"), y.MTU, DefaultMTU, minPortMTU, maxPortMTU)
	if mtu > cfg.FrameSize {
		c.errf(k("mtu"), "%d above frame_size %d; the switch's frames must hold the largest frame", mtu, cfg.FrameSize)
	}

	var rate int64
	if y.Rate != nil {
		rate = y.Rate.BPS
		if rate != 0 && (rate < MinRate || rate > MaxRate) {
			c.errf(k("rate"), "%q outside [%s, %s] (or 0 for unshaped)", y.Rate, FormatRate(MinRate), FormatRate(MaxRate))
			rate = 0
		}
	}
	overhead := scheduler.OverheadEthernet
	if c.oneOf(k("overhead"), y.Overhead, "ethernet", "ethernet", "none") == "none" {
		overhead = scheduler.OverheadNone
	}
	bucket := int64(0)
	if rate > 0 {
		bucket = max(DefaultBucketMin, rate*int64(DefaultBucketTime)/8e9)
	}
	if y.Bucket != nil {
		if b := y.Bucket.N; b < 0 || b > maxBucket {
			c.errf(k("bucket"), "%q outside [0, %s]", y.Bucket, FormatSize(maxBucket))
		} else {
			bucket = b
		}
	}
	p.Shaper = scheduler.ShaperConfig{Rate: rate, Bucket: bucket, Overhead: overhead}
	p.Scheduler = c.scheduler(i, &y.Scheduler, nq, mtu, rate, overhead)

	p.Pool = 0
	if y.Pool != "" {
		found := false
		for j, pool := range cfg.Pools {
			if pool.Name == y.Pool {
				p.Pool, found = j, true
			}
		}
		if !found {
			c.errf(k("pool"), "%q is not a pool; pools are %s", y.Pool, strings.Join(poolNames(cfg.Pools), ", "))
		}
	}
	p.Buffer = c.buffer(i, &y.Buffer, nq, cfg.Pools[p.Pool].Size)

	switch c.oneOf(k("non_ect"), y.NonECT, "drop", "drop", "pass") {
	case "pass":
		p.NonECT = marking.NonECTPass
	default:
		p.NonECT = marking.NonECTDrop
	}
	if y.Worker != nil {
		p.Worker = c.intIn(k("worker"), y.Worker, -1, -1, cfg.Workers-1)
	}
	p.Delay = c.delay(i, &y.Delay, nq, cfg.Classifier)
	return p
}

func poolNames(pools []Pool) []string {
	out := make([]string, len(pools))
	for i, p := range pools {
		out[i] = p.Name
	}
	return out
}

func (c *checker) afxdp(i int, y *afxdpYAML, frameSize int) afxdp.Options {
	k := func(sub string) string { return c.portKey(i, "afxdp."+sub) }
	var o afxdp.Options
	switch c.oneOf(k("mode"), y.Mode, "auto", "auto", "native", "generic") {
	case "native":
		o.Attach = afxdp.AttachNative
	case "generic":
		o.Attach = afxdp.AttachGeneric
	}
	switch c.oneOf(k("zerocopy"), y.ZeroCopy, "auto", "auto", "on", "off") {
	case "on":
		o.ZeroCopy = afxdp.ZeroCopyOn
	case "off":
		o.ZeroCopy = afxdp.ZeroCopyOff
	}
	if o.ZeroCopy == afxdp.ZeroCopyOn && o.Attach == afxdp.AttachGeneric {
		c.errf(k("zerocopy"), "\"on\" with mode generic; zero-copy needs the program attached natively (mode native or auto)")
	}
	seen := map[int]bool{}
	for j, q := range y.Queues {
		key := fmt.Sprintf("%s[%d]", k("queues"), j)
		if q < 0 || q > 1<<16 {
			c.errf(key, "%d outside [0, 65536] (and below the interface's RX queue count)", q)
		} else if seen[q] {
			c.errf(key, "queue %d listed twice", q)
		}
		seen[q] = true
	}
	o.Queues = slices.Clone(y.Queues)
	o.FrameSize = afxdp.DefaultFrameSize
	if y.FrameSize != nil {
		if *y.FrameSize != 2048 && *y.FrameSize != 4096 {
			c.errf(k("frame_size"), "%d is not 2048 or 4096", *y.FrameSize)
		} else {
			o.FrameSize = *y.FrameSize
		}
	}
	if u := afxdp.UsableFrame(o.FrameSize); frameSize < u {
		c.errf(k("frame_size"), "%d gives %d-byte frames (frame_size − %d headroom), more than the switch's frame_size %d holds; raise frame_size to at least %d",
			o.FrameSize, u, afxdp.Headroom, frameSize, u)
	}
	o.FillRingSize = c.pow2In(k("fill_ring"), y.FillRing, afxdp.DefaultRingSize, 64, 1<<16)
	o.CompletionRingSize = c.pow2In(k("completion_ring"), y.CompletionRing, afxdp.DefaultRingSize, 64, 1<<16)
	o.RxRingSize = c.pow2In(k("rx_ring"), y.RxRing, afxdp.DefaultRingSize, 64, 1<<16)
	o.TxRingSize = c.pow2In(k("tx_ring"), y.TxRing, afxdp.DefaultRingSize, 64, 1<<16)
	// A relation between two keys is reported at the one written, so that
	// raising tx_ring alone points at tx_ring, not at a default.
	if o.CompletionRingSize < o.TxRingSize {
		if y.CompletionRing == nil {
			c.errf(k("tx_ring"), "%d above completion_ring %d (the default); raise completion_ring to at least tx_ring, or TX stalls on a full completion ring", o.TxRingSize, o.CompletionRingSize)
		} else {
			c.errf(k("completion_ring"), "%d below tx_ring %d; want completion_ring ≥ tx_ring, or TX stalls on a full completion ring", o.CompletionRingSize, o.TxRingSize)
		}
	}
	o.Frames = c.pow2In(k("frames"), y.Frames, afxdp.DefaultFrames, 128, 1<<18)
	if need := o.FillRingSize + o.TxRingSize; o.Frames < need {
		key := k("frames")
		if y.Frames == nil {
			key = k("tx_ring")
			if y.FillRing != nil {
				key = k("fill_ring")
			}
		}
		c.errf(key, "fill_ring + tx_ring = %d exceed frames %d; want at least that many UMEM frames (raise frames)", need, o.Frames)
	}
	o.TxBudget = min(afxdp.DefaultTxBudget, o.TxRingSize)
	if y.TxBudget != nil {
		if b := *y.TxBudget; b < 32 || b > o.TxRingSize {
			c.errf(k("tx_budget"), "%d outside [32, %d] (tx_ring)", b, o.TxRingSize)
		} else {
			o.TxBudget = b
		}
	}
	o.TxHash, o.Force = y.TxHash, y.Force
	return o
}

func (c *checker) scheduler(i int, y *schedulerYAML, nq, mtu int, rate int64, overhead scheduler.Overhead) scheduler.Config {
	k := func(sub string) string { return c.portKey(i, "scheduler."+sub) }
	sc := scheduler.Config{NumQueues: nq, MTU: mtu, Overhead: overhead, LineRate: rate}
	kind, _ := scheduler.ParseKind(c.oneOf(k("kind"), y.Kind, "dwrr", "sp", "wrr", "dwrr", "wfq"))
	sc.Kind = kind
	if y.Beta != nil {
		if b := *y.Beta; !(b > 0 && b < 1) {
			c.errf(k("beta"), "%g outside (0, 1)", b)
		} else {
			sc.Beta = b
		}
	}
	if y.TIdle != nil {
		if d := y.TIdle.D; d < 0 || d > time.Minute {
			c.errf(k("t_idle"), "%q outside [0, 1m]", y.TIdle)
		} else {
			sc.TIdle = d
		}
	}
	if len(y.Queues) == 0 {
		return sc
	}
	sc.Queues = make([]scheduler.QueueConfig, nq)
	charged := int64(overhead.Wire(mtu))
	for _, q := range sortedIntKeys(y.Queues) {
		key := k("queues." + strconv.Itoa(q))
		if q < 0 || q >= nq {
			c.errf(key, "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		yq := y.Queues[q]
		qc := scheduler.QueueConfig{Strict: yq.Strict || kind == scheduler.SP}
		if yq.Weight != nil {
			if w := *yq.Weight; w < 1 || w > scheduler.MaxWeight {
				c.errf(key+".weight", "%d outside [1, %d]", w, scheduler.MaxWeight)
			} else {
				qc.Weight = w
			}
		}
		if yq.Quantum != nil {
			rr := !qc.Strict && (kind == scheduler.WRR || kind == scheduler.DWRR)
			qv := yq.Quantum.N
			switch {
			case !rr:
				c.errf(key+".quantum", "%q set on a %s queue; only non-strict wrr and dwrr queues have a quantum (use weight)", yq.Quantum, map[bool]string{true: "strict", false: kind.String()}[qc.Strict])
			case kind == scheduler.DWRR && (qv < charged || qv > maxQuantum):
				c.errf(key+".quantum", "%q outside [%d, %s]: DWRR needs a quantum of at least the MTU as charged (%d bytes with overhead %v)", yq.Quantum, charged, FormatSize(maxQuantum), charged, overhead)
			case qv < 1 || qv > maxQuantum:
				c.errf(key+".quantum", "%q outside [1, %s]", yq.Quantum, FormatSize(maxQuantum))
			default:
				qc.Quantum = qv
			}
		}
		sc.Queues[q] = qc
	}
	if kind == scheduler.SP {
		for q := range sc.Queues {
			sc.Queues[q].Strict = true
		}
	}
	return sc
}

func (c *checker) buffer(i int, y *bufferYAML, nq int, poolSize int64) []buffer.QueueConfig {
	k := func(sub string) string { return c.portKey(i, "buffer."+sub) }
	base := buffer.QueueConfig{Alpha: DefaultAlpha}
	check := func(prefix string, q bufferQueueYAML, qc *buffer.QueueConfig) {
		if q.Alpha != nil && q.Cap != nil && q.Cap.N > 0 {
			c.errf(k(prefix+"alpha"), "%g set with cap %q; a queue has a Dynamic Threshold alpha or a static cap, not both", *q.Alpha, q.Cap)
			return
		}
		if q.Alpha != nil {
			if a := *q.Alpha; !(a > 0 && a <= buffer.MaxAlpha) {
				c.errf(k(prefix+"alpha"), "%g outside (0, %d]", a, buffer.MaxAlpha)
			} else {
				qc.Alpha, qc.Cap = a, 0
			}
		}
		if q.Cap != nil {
			if cp := q.Cap.N; cp < 0 || cp > poolSize {
				c.errf(k(prefix+"cap"), "%q outside [0, %s] (the pool's size)", q.Cap, FormatSize(poolSize))
			} else if cp > 0 {
				qc.Cap, qc.Alpha = cp, 0
			} else if qc.Alpha == 0 {
				qc.Cap, qc.Alpha = 0, DefaultAlpha
			}
		}
		if q.Reserve != nil {
			if r := q.Reserve.N; r < 0 || r > maxPoolSize {
				c.errf(k(prefix+"reserve"), "%q outside [0, %s]", q.Reserve, FormatSize(maxPoolSize))
			} else {
				qc.Reserve = r
			}
		}
	}
	check("", y.bufferQueueYAML, &base)
	out := make([]buffer.QueueConfig, nq)
	for q := range out {
		out[q] = base
	}
	for _, q := range sortedIntKeys(y.Queues) {
		prefix := "queues." + strconv.Itoa(q) + "."
		if q < 0 || q >= nq {
			c.errf(k("queues."+strconv.Itoa(q)), "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		check(prefix, y.Queues[q], &out[q])
	}
	return out
}

func (c *checker) delay(i int, y *delayYAML, nq int, cl dataplane.Classifier) dataplane.Delay {
	k := func(sub string) string { return c.portKey(i, "delay."+sub) }
	d := dataplane.Delay{Seed: uint64(i) + 1}
	params := func(prefix string, p delayParamsYAML) dataplane.Delay {
		var out dataplane.Delay
		for _, f := range []struct {
			name string
			v    *Duration
			dst  *time.Duration
		}{{"fixed", p.Fixed, &out.Fixed}, {"jitter", p.Jitter, &out.Jitter}} {
			if f.v == nil {
				continue
			}
			if f.v.D < 0 || f.v.D > MaxDelay {
				c.errf(k(prefix+f.name), "%q outside [0, %v]", f.v, MaxDelay)
				continue
			}
			*f.dst = f.v.D
		}
		return out
	}
	base := params("", y.delayParamsYAML)
	d.Fixed, d.Jitter = base.Fixed, base.Jitter
	if y.Distribution != "" {
		if dist, err := dataplane.ParseDistribution(y.Distribution); err != nil {
			c.errf(k("distribution"), "%q is not one of uniform, normal, exponential", y.Distribution)
		} else {
			d.Distribution = dist
		}
	}
	if y.Seed != nil {
		d.Seed = *y.Seed
	}
	for _, q := range sortedIntKeys(y.PerQueue) {
		key := "per_queue." + strconv.Itoa(q)
		if q < 0 || q >= nq {
			c.errf(k(key), "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		if d.PerQueue == nil {
			d.PerQueue = map[int]dataplane.Delay{}
		}
		d.PerQueue[q] = params(key+".", y.PerQueue[q])
	}
	// A DSCP class's delay applies to the egress queue its DSCPs are
	// classified into, so the class must own one queue.
	fromClass := map[int]int{}
	for _, class := range sortedIntKeys(y.PerDSCPClass) {
		key := "per_dscp_class." + strconv.Itoa(class)
		if class < 0 || class > 7 {
			c.errf(k(key), "class %d outside [0, 7] (the DSCP class selector, DSCP >> 3)", class)
			continue
		}
		queues := map[int]bool{}
		q := 0
		for dscp := class << 3; dscp < class<<3+8; dscp++ {
			q = classify(cl, dscp, nq)
			queues[q] = true
		}
		if len(queues) > 1 {
			c.errf(k(key), "DSCPs %d–%d of class %d go to %d different queues on this port; the delay applies per egress queue, so use per_queue",
				class<<3, class<<3+7, class, len(queues))
			continue
		}
		if _, dup := d.PerQueue[q]; dup {
			if other, ok := fromClass[q]; ok {
				c.errf(k(key), "class %d shares queue %d with class %d; the delay applies per egress queue, so give them one delay with per_queue", class, q, other)
			} else {
				c.errf(k(key), "class %d goes to queue %d, which per_queue already sets", class, q)
			}
			continue
		}
		if d.PerQueue == nil {
			d.PerQueue = map[int]dataplane.Delay{}
		}
		d.PerQueue[q] = params(key+".", y.PerDSCPClass[class])
		fromClass[q] = class
	}
	return d
}

// classify mirrors the dataplane's classifier for DSCP-marked packets:
// the DSCP map, else the class selector DSCP >> 3, capped at the port's
// last queue.
func classify(cl dataplane.Classifier, dscp, nq int) int {
	q := dscp >> 3
	if v, ok := cl.DSCP[uint8(dscp)]; ok {
		q = v
	}
	return min(q, nq-1)
}
