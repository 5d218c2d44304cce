package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// Device is what forwards between the generator's and the sink's hosts in
// RunSwitch.
type Device string

// Devices RunSwitch compares.
const (
	// DeviceSwitch is ecnswitch with its full pipeline: L2 forwarding,
	// the DSCP classifier, 8 DWRR queues per port and DCTCP-style RED
	// marking at K = 32 KB per queue (PipelineConfig).
	DeviceSwitch Device = "ecnswitch"
	// DevicePatch is ecnswitch as a bare port-to-port patch: one queue per
	// port, no markers (PatchConfig).
	DevicePatch Device = "patch"
	// DeviceBridge is a Linux bridge over the same two veth ends, in the
	// same namespace, with ecnswitch stopped.
	DeviceBridge Device = "bridge"
)

// pipelinePool is the shared buffer of the benchmark configurations.
const pipelinePool = 4 << 20

// PipelineConfig is the full-pipeline switch of DeviceSwitch over two
// ports: frames to macs[i] go out of port i (and other frames are learned
// or flooded), classified by DSCP class selector (DSCP>>3) into 8 DWRR
// queues of one MTU quantum per port, unshaped, with RED on each queue at
// K_min = K_max = 32 KB: DCTCP's cut-off marking (001 §2.2 footnote 1) at
// the "standard" 32 KB per-queue threshold of a 1 Gbit/s port (the MQ-ECN
// testbed; notes/prior-art.md §3). The buffer is one 4 MB pool.
func PipelineConfig(names []string, macs []net.HardwareAddr) dataplane.Config {
	cfg := baseConfig(names, 8, scheduler.DWRR)
	for i, m := range macs {
		cfg.Forwarding.MACs = append(cfg.Forwarding.MACs, dataplane.MACRule{MAC: m, Port: i})
	}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(32_000)}, marking.Enqueue, q)
	}
	for i := range cfg.Ports {
		cfg.Ports[i].Enqueue = []dataplane.MarkerSpec{{Name: "red", New: red}}
	}
	return cfg
}

// PatchConfig is DevicePatch: port 0 ↔ port 1 by static patch, one queue
// per port, no markers, no learning.
func PatchConfig(names []string) dataplane.Config {
	cfg := baseConfig(names, 1, scheduler.SP)
	cfg.Forwarding = dataplane.Forwarding{NoLearning: true, Patches: []dataplane.Patch{{From: 0, To: 1}, {From: 1, To: 0}}}
	return cfg
}

func baseConfig(names []string, nq int, kind scheduler.Kind) dataplane.Config {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: pipelinePool}}, Workers: 1}
	for _, n := range names {
		qs := make([]buffer.QueueConfig, nq)
		for q := range qs {
			qs[q] = buffer.QueueConfig{Cap: pipelinePool}
		}
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name:      n,
			Scheduler: scheduler.Config{Kind: kind, NumQueues: nq},
			Queues:    qs,
		})
	}
	return cfg
}

// SwitchOptions configure RunSwitch. The zero value of every field selects
// its default. A run is 1 + len(Sweep) + at most Iterations trials per
// device and size, each Trial long plus up to Drain: about 2.5 minutes
// with the defaults.
type SwitchOptions struct {
	// Sizes are the frame sizes, FCS included. Default 64, 512, 1500.
	Sizes []int
	// Devices are compared in this order. Default DeviceSwitch,
	// DevicePatch, DeviceBridge.
	Devices []Device
	// Trial is how long the generator sends in each trial (RFC 2544 §24
	// asks for 60 s; here trials are short so that a whole run takes
	// minutes). Default 1 s.
	Trial time.Duration
	// Drain is the longest a trial waits, after the generator stops, for
	// frames still in flight; it ends sooner once the sink has received
	// nothing for 100 ms. Default 2 s.
	Drain time.Duration
	// Sweep are the offered loads, as fractions of the generator's
	// unpaced rate, tried after the unpaced trial: they draw the
	// offered-vs-forwarded and latency curves and bracket the zero-loss
	// rate. Default 0.1, 0.25, 0.5, 0.75, 0.9.
	Sweep []float64
	// Iterations bounds the binary search for the RFC 2544 throughput
	// (§26.1) between the highest zero-loss and the lowest lossy rate
	// found so far. Default 5; negative searches none (the sweep decides).
	Iterations int
	// Resolution ends the search early once the bracket is this narrow,
	// relative to its top. Default 0.01.
	Resolution float64
	// LossTolerance is the loss ratio a trial may have and still pass.
	// Default 0: RFC 2544 throughput is the rate with no loss at all.
	LossTolerance float64
	// Flows, DSCP and ECN are the generator's mix. Defaults: 16 flows,
	// 50% DSCP 0 and 50% DSCP 8 (two DWRR queues), all ECT(0).
	Flows int
	DSCP  []Share[uint8]
	ECN   []Share[packet.ECN]
	// Testbed are the options of the two-host testbed; Hosts is set to 2.
	Testbed testbed.Options
	// Progress receives one line per trial; nil prints nothing.
	Progress io.Writer
	// Logger receives lifecycle events of the testbed, ports and switch.
	Logger *zap.Logger
}

func (o *SwitchOptions) setDefaults() error {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 512, 1500}
	}
	if len(o.Devices) == 0 {
		o.Devices = []Device{DeviceSwitch, DevicePatch, DeviceBridge}
	}
	if o.Trial == 0 {
		o.Trial = time.Second
	}
	if o.Drain == 0 {
		o.Drain = 2 * time.Second
	}
	if o.Sweep == nil {
		o.Sweep = []float64{0.1, 0.25, 0.5, 0.75, 0.9}
	}
	if o.Iterations == 0 {
		o.Iterations = 5
	}
	if o.Resolution == 0 {
		o.Resolution = 0.01
	}
	if o.Flows == 0 {
		o.Flows = 16
	}
	if len(o.DSCP) == 0 {
		o.DSCP = []Share[uint8]{{0, 50}, {8, 50}}
	}
	if len(o.ECN) == 0 {
		o.ECN = []Share[packet.ECN]{{packet.ECT0, 1}}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.Testbed.Hosts = 2
	for i, s := range o.Sizes {
		if s < MinSize || s > afxdp.UsableFrame(afxdp.DefaultFrameSize)+FCS {
			return fmt.Errorf("sizes[%d]: %d bytes: want %d to %d (FCS included; the AF_XDP frame holds %d)",
				i, s, MinSize, afxdp.UsableFrame(afxdp.DefaultFrameSize)+FCS, afxdp.UsableFrame(afxdp.DefaultFrameSize))
		}
	}
	for i, d := range o.Devices {
		if d != DeviceSwitch && d != DevicePatch && d != DeviceBridge {
			return fmt.Errorf("devices[%d]: %q: want %s, %s or %s", i, d, DeviceSwitch, DevicePatch, DeviceBridge)
		}
	}
	for i, f := range o.Sweep {
		if !(f > 0 && f <= 1) {
			return fmt.Errorf("sweep[%d]: %v: want a fraction in (0, 1]", i, f)
		}
	}
	switch {
	case o.Trial < 10*time.Millisecond || o.Trial > time.Hour:
		return fmt.Errorf("trial: %v: want 10ms to 1h", o.Trial)
	case o.Drain < 0:
		return fmt.Errorf("drain: %v: want ≥ 0", o.Drain)
	case o.Iterations > 64:
		return fmt.Errorf("iterations: %d: want at most 64 (negative for none)", o.Iterations)
	case !(o.Resolution > 0 && o.Resolution < 1):
		return fmt.Errorf("resolution: %v: want a fraction in (0, 1)", o.Resolution)
	case !(o.LossTolerance >= 0 && o.LossTolerance < 1):
		return fmt.Errorf("loss_tolerance: %v: want a fraction in [0, 1)", o.LossTolerance)
	}
	return nil
}

// Trial is one generator run through a device at one offered load.
type Trial struct {
	Device Device `json:"device"`
	Size   int    `json:"size"`
	// Kind is "max" (unpaced), "sweep" or "search".
	Kind string `json:"kind"`
	// TargetPPS is the paced rate; 0 for the unpaced trial.
	TargetPPS    float64 `json:"target_pps"`
	Sent         uint64  `json:"sent"`
	Received     uint64  `json:"received"` // distinct frames
	Lost         uint64  `json:"lost"`     // Sent − Received
	LossRatio    float64 `json:"loss_ratio"`
	OfferedPPS   float64 `json:"offered_pps"`   // Sent / Trial
	ForwardedPPS float64 `json:"forwarded_pps"` // Received / Trial
	Reordered    uint64  `json:"reordered"`
	Duplicated   uint64  `json:"duplicated"`
	CE           uint64  `json:"ce"`
	Latency      Latency `json:"latency"`
	GeneratorLag int64   `json:"generator_late_ns"` // schedule the generator gave up (it could not keep the rate)
	// Short says the generator offered less than TargetPPS·(1−Resolution):
	// it could not keep the rate, so the trial says nothing about higher ones.
	Short bool `json:"short"`
	// DeviceDropped counts the frames the device reported dropping during
	// the trial, DeviceDrops the same by reason (ecnswitch: its drop
	// reasons, and xsk_rx for its sockets' kernel drops; the bridge: the
	// dropped counters of the bridge and its ports). SinkDropped counts
	// those the sink's socket dropped (RX ring full, no fill frame): loss
	// the measurement caused, not the device.
	DeviceDropped uint64            `json:"device_dropped"`
	DeviceDrops   map[string]uint64 `json:"device_drops,omitempty"`
	SinkDropped   uint64            `json:"sink_dropped"`
	Pass          bool              `json:"pass"` // LossRatio ≤ LossTolerance
}

// Result sums up one device at one frame size.
type Result struct {
	Device Device `json:"device"`
	Size   int    `json:"size"`
	// MaxOfferedPPS and MaxForwardedPPS come from the unpaced trial: the
	// most the generator offered and what reached the sink (a).
	MaxOfferedPPS   float64 `json:"max_offered_pps"`
	MaxForwardedPPS float64 `json:"max_forwarded_pps"`
	MaxLossRatio    float64 `json:"max_loss_ratio"`
	// ThroughputPPS is the RFC 2544 throughput (b): the highest offered
	// rate that passed; 0 if none did. GeneratorBound says the unpaced
	// trial itself passed, so the device may forward more than the
	// generator could offer.
	ThroughputPPS  float64 `json:"throughput_pps"`
	GeneratorBound bool    `json:"generator_bound"`
	// ThroughputLatency is the latency of the trial at the throughput.
	ThroughputLatency Latency `json:"throughput_latency"`
	Trials            int     `json:"trials"`
}

// SwitchReport is what RunSwitch measured.
type SwitchReport struct {
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
	Kernel  string    `json:"kernel"`
	CPUs    int       `json:"cpus"`
	Options struct {
		Sizes         []int     `json:"sizes"`
		Devices       []Device  `json:"devices"`
		Trial         string    `json:"trial"`
		Sweep         []float64 `json:"sweep"`
		Iterations    int       `json:"iterations"`
		Resolution    float64   `json:"resolution"`
		LossTolerance float64   `json:"loss_tolerance"`
		Flows         int       `json:"flows"`
		Mix           string    `json:"mix"`
	} `json:"options"`
	Results []Result `json:"results"`
	Trials  []Trial  `json:"trials"`
}

// Result returns the result of dev at size, or false.
func (r *SwitchReport) Result(dev Device, size int) (Result, bool) {
	for _, x := range r.Results {
		if x.Device == dev && x.Size == size {
			return x, true
		}
	}
	return Result{}, false
}

// rig is RunSwitch's topology: generator in host 1, sink in host 2, the
// device between their switch ends in the caller's namespace.
type rig struct {
	o     SwitchOptions
	tb    *testbed.Testbed
	hosts []testbed.Host
	clock *SystemClock
	gen   *NetnsPort
	sink  *NetnsPort
	run   uint16
	rep   *SwitchReport
	drops func() map[string]uint64 // the device's drop counters by reason, while it is up
}

// RunSwitch brings up a two-host testbed (generator in h1 → device → sink
// in h2), and for every device and frame size measures (a) the maximum
// forwarding rate, with the generator unpaced, and (b) the RFC 2544
// throughput, the highest offered rate with no loss: a sweep of offered
// loads, then a binary search between the highest passing and the lowest
// failing rate. Devices run one after another over the same veths, so
// their results are side by side. It needs root and removes everything it
// created, also on error or when ctx is cancelled.
func RunSwitch(ctx context.Context, o SwitchOptions) (rep *SwitchReport, err error) {
	if err := o.setDefaults(); err != nil {
		return nil, fmt.Errorf("bench: switch: %w", err)
	}
	r := &rig{o: o, rep: &SwitchReport{Start: time.Now(), CPUs: runtime.NumCPU()}}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		r.rep.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	ro := &r.rep.Options
	ro.Sizes, ro.Devices, ro.Trial, ro.Sweep = o.Sizes, o.Devices, o.Trial.String(), o.Sweep
	ro.Iterations, ro.Resolution, ro.LossTolerance, ro.Flows = o.Iterations, o.Resolution, o.LossTolerance, o.Flows
	ro.Mix = mixString(o.DSCP, o.ECN)

	if r.clock, err = NewSystemClock(); err != nil {
		return nil, err
	}
	if o.Testbed.Logger == nil {
		o.Testbed.Logger = o.Logger.Named("testbed")
	}
	if r.tb, err = testbed.Up(o.Testbed); err != nil {
		return nil, fmt.Errorf("bench: switch: %w", err)
	}
	defer func() { err = errors.Join(err, r.tb.Down()) }()
	r.hosts = r.tb.Hosts()
	if r.gen, err = OpenPort(r.hosts[0].Netns, r.hosts[0].HostIf, r.portOptions()); err != nil {
		return nil, fmt.Errorf("bench: switch: generator port: %w", err)
	}
	defer func() { err = errors.Join(err, r.gen.Close()) }()
	if r.sink, err = OpenPort(r.hosts[1].Netns, r.hosts[1].HostIf, r.sinkPortOptions()); err != nil {
		return nil, fmt.Errorf("bench: switch: sink port: %w", err)
	}
	defer func() { err = errors.Join(err, r.sink.Close()) }()

	for _, dev := range o.Devices {
		if err := r.device(ctx, dev); err != nil {
			return r.rep, err
		}
	}
	r.rep.Seconds = time.Since(r.rep.Start).Seconds()
	return r.rep, nil
}

func mixString(dscp []Share[uint8], ecn []Share[packet.ECN]) string {
	var parts []string
	for _, d := range dscp {
		parts = append(parts, fmt.Sprintf("DSCP %d:%d", d.Value, d.Weight))
	}
	for _, e := range ecn {
		parts = append(parts, fmt.Sprintf("%v:%d", e.Value, e.Weight))
	}
	return strings.Join(parts, ", ")
}

// device brings dev up between the hosts, measures every size, and takes
// it down again.
func (r *rig) device(ctx context.Context, dev Device) (err error) {
	down, drops, err := r.up(dev)
	r.drops = drops
	if err != nil {
		return fmt.Errorf("bench: switch: %s: %w", dev, err)
	}
	defer func() {
		if derr := down(); derr != nil {
			err = errors.Join(err, fmt.Errorf("bench: switch: %s down: %w", dev, derr))
		}
	}()
	for _, size := range r.o.Sizes {
		res, err := r.measure(ctx, dev, size)
		if err != nil {
			return err
		}
		r.rep.Results = append(r.rep.Results, res)
	}
	return nil
}

// up starts dev and returns the function that stops it and the one that
// reads its drop counter.
func (r *rig) up(dev Device) (down func() error, drops func() map[string]uint64, err error) {
	names := []string{r.hosts[0].SwitchIf, r.hosts[1].SwitchIf}
	switch dev {
	case DeviceBridge:
		return upBridge("ecnsw"+r.tb.ID()+"br", names)
	case DevicePatch:
		return r.upSwitch(PatchConfig(names))
	default:
		return r.upSwitch(PipelineConfig(names, []net.HardwareAddr{r.hosts[0].MAC, r.hosts[1].MAC}))
	}
}

// portOptions are the AF_XDP options of the switch's and the generator's
// ports: the defaults, native attach (veth has it; generic mode would let
// the peer's GSO aggregates through, notes/afxdp.md pitfall 4).
func (r *rig) portOptions() afxdp.Options {
	return afxdp.Options{Attach: afxdp.AttachNative, Logger: r.o.Logger.Named("port")}
}

// sinkPortOptions give the sink's socket 8192-entry RX and fill rings, so
// that a sink thread descheduled for a few ms (two cores, shared) does not
// drop what the device delivered. It never transmits.
func (r *rig) sinkPortOptions() afxdp.Options {
	o := r.portOptions()
	o.Frames, o.FillRingSize, o.RxRingSize = 16384, 8192, 8192
	o.TxRingSize, o.CompletionRingSize = 64, 64
	return o
}

// upSwitch runs ecnswitch with cfg over AF_XDP ports on the switch ends.
func (r *rig) upSwitch(cfg dataplane.Config) (func() error, func() map[string]uint64, error) {
	var devs []ports.Port
	var xsks []*afxdp.Port
	closeAll := func() error {
		var errs []error
		for _, p := range devs {
			errs = append(errs, p.Close())
		}
		return errors.Join(errs...)
	}
	for _, pc := range cfg.Ports {
		p, err := afxdp.Open(pc.Name, r.portOptions())
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		devs, xsks = append(devs, p), append(xsks, p)
	}
	sw, err := dataplane.New(cfg, devs, r.clock, r.o.Logger.Named("switch"))
	if err != nil {
		return nil, nil, errors.Join(err, closeAll())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	drops := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, p := range sw.Stats().Ports {
			for k, v := range p.Drops {
				m[k] += v
			}
		}
		for _, p := range xsks {
			m["xsk_rx"] += p.Stats().RxDropped
		}
		return m
	}
	return func() error {
		cancel()
		return errors.Join(<-done, sw.Close())
	}, drops, nil
}

// upBridge enslaves the switch ends to a new Linux bridge (STP off, so
// its ports forward at once; no IPv6, so it sends nothing of its own) and
// returns the function that deletes it and the one that sums the dropped
// counters of its ports.
func upBridge(name string, members []string) (func() error, func() map[string]uint64, error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, nil, fmt.Errorf("add bridge %s: %w", name, err)
	}
	del := func() error {
		if err := netlink.LinkDel(br); err != nil {
			return fmt.Errorf("delete bridge %s: %w", name, err)
		}
		return nil
	}
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	for _, m := range members {
		l, err := netlink.LinkByName(m)
		if err == nil {
			err = netlink.LinkSetMaster(l, br)
		}
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("add %s to bridge %s: %w", m, name, err), del())
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("set bridge %s up: %w", name, err), del())
	}
	drops := func() map[string]uint64 {
		d := map[string]uint64{}
		for _, m := range append([]string{name}, members...) {
			if l, err := netlink.LinkByName(m); err == nil && l.Attrs().Statistics != nil {
				st := l.Attrs().Statistics
				d[m+"_rx"] += st.RxDropped
				d[m+"_tx"] += st.TxDropped
			}
		}
		return d
	}
	return del, drops, nil
}

// measure runs the trials of one device and size.
func (r *rig) measure(ctx context.Context, dev Device, size int) (Result, error) {
	res, err := search(r.o, func(kind string, pps float64) (Trial, error) {
		t, err := r.trial(ctx, dev, size, kind, pps)
		if err == nil {
			r.rep.Trials = append(r.rep.Trials, t)
			fmt.Fprintf(r.o.Progress, "%-9s %4d B  %-6s offered %8.4f Mpps  forwarded %8.4f Mpps  loss %.4f%%  p50 %v  p99 %v\n",
				dev, size, kind, t.OfferedPPS/1e6, t.ForwardedPPS/1e6, 100*t.LossRatio,
				roundDur(t.Latency.P50), roundDur(t.Latency.P99))
		}
		return t, err
	})
	res.Device, res.Size = dev, size
	return res, err
}

// search finds the maximum forwarding rate and the RFC 2544 throughput
// with trials run by run: the unpaced trial, the sweep (always, for the
// plots), and, if the unpaced trial lost frames, bisection between the
// highest passing rate and the lowest failing one above it, for at most
// o.Iterations steps or until the bracket is narrower than o.Resolution.
// A trial whose generator fell short of its target is run again once; if
// it falls short again and passes, the generator's limit ends the search.
func search(o SwitchOptions, run func(kind string, pps float64) (Trial, error)) (Result, error) {
	var res Result
	var trials []Trial
	do := func(kind string, pps float64) (Trial, error) {
		t, err := run(kind, pps)
		if err == nil && t.Short {
			// A stall (the generator descheduled) is more likely than a
			// generator that cannot keep a rate it held a moment ago: try
			// again once, and take a second shortfall as its limit.
			res.Trials++
			t, err = run(kind, pps)
		}
		if err == nil {
			trials = append(trials, t)
			res.Trials++
		}
		return t, err
	}
	max, err := do("max", 0)
	if err != nil {
		return res, err
	}
	res.MaxOfferedPPS, res.MaxForwardedPPS, res.MaxLossRatio = max.OfferedPPS, max.ForwardedPPS, max.LossRatio
	fail := max.OfferedPPS
	for _, f := range o.Sweep {
		t, err := do("sweep", f*max.OfferedPPS)
		if err != nil {
			return res, err
		}
		if !t.Pass {
			fail = min(fail, t.TargetPPS)
		}
	}
	if max.Pass {
		res.ThroughputPPS, res.GeneratorBound, res.ThroughputLatency = max.OfferedPPS, true, max.Latency
		return res, nil
	}
	// The highest passing rate below the lowest failing one: noise can make
	// a lower load fail where a higher one passed.
	var best Trial
	for _, t := range trials {
		if t.Pass && t.TargetPPS < fail && t.TargetPPS > best.TargetPPS {
			best = t
		}
	}
	res.GeneratorBound = best.Short
	for i := 0; !best.Short && i < o.Iterations && (fail-best.TargetPPS)/fail > o.Resolution; i++ {
		t, err := do("search", (best.TargetPPS+fail)/2)
		if err != nil {
			return res, err
		}
		if !t.Pass {
			fail = t.TargetPPS
			continue
		}
		best = t // if Short, it passed but the generator could not offer more: the loop ends
		res.GeneratorBound = t.Short
	}
	if best.Pass {
		res.ThroughputPPS, res.ThroughputLatency = best.OfferedPPS, best.Latency
	}
	return res, nil
}

// trial sends at pps (0: unpaced) for Trial, waits for the stragglers, and
// compares what the sink counted with what the generator sent.
func (r *rig) trial(ctx context.Context, dev Device, size int, kind string, pps float64) (Trial, error) {
	r.run++
	sink, err := NewSink(SinkConfig{Run: r.run}, r.sink, r.clock)
	if err != nil {
		return Trial{}, err
	}
	sink.Prepare(r.o.Flows)
	gen, err := NewGenerator(GeneratorConfig{
		Addresses: Addresses{
			SrcMAC: r.hosts[0].MAC, DstMAC: r.hosts[1].MAC,
			SrcIP: r.hosts[0].IPv4, DstIP: r.hosts[1].IPv4,
		},
		Sizes: []Share[int]{{size, 1}}, DSCP: r.o.DSCP, ECN: r.o.ECN, Flows: r.o.Flows,
		Rate: Rate{Packets: pps}, Duration: r.o.Trial, Run: r.run,
	}, r.gen, r.clock)
	if err != nil {
		return Trial{}, err
	}
	dev0, sink0 := r.drops(), r.sink.Stats().RxDropped
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	sinkDone := make(chan error, 1)
	go func() { sinkDone <- sink.Run(sctx) }()

	gerr := gen.Run(ctx)
	if gerr == nil {
		gerr = ctx.Err()
	}
	// Wait until the sink has seen nothing new for 100 ms, at most Drain.
	last, quiet := sink.Totals(), 0
	for deadline := time.Now().Add(r.o.Drain); gerr == nil && quiet < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if t := sink.Totals(); t == last {
			quiet++
		} else {
			last, quiet = t, 0
		}
	}
	stop()
	if err := errors.Join(gerr, <-sinkDone); err != nil {
		return Trial{}, fmt.Errorf("bench: switch: %s %d B trial: %w", dev, size, err)
	}

	rep, st := sink.Report(), gen.Stats()
	t := Trial{
		Device: dev, Size: size, Kind: kind, TargetPPS: pps,
		Sent: st.Sent, Received: rep.Unique(),
		Reordered: rep.Reordered, Duplicated: rep.Duplicated, CE: rep.CE,
		Latency: rep.Latency, GeneratorLag: st.Late,
		SinkDropped: r.sink.Stats().RxDropped - sink0,
	}
	for k, v := range r.drops() {
		if d := v - dev0[k]; d > 0 {
			if t.DeviceDrops == nil {
				t.DeviceDrops = map[string]uint64{}
			}
			t.DeviceDrops[k] = d
			t.DeviceDropped += d
		}
	}
	if t.Received < t.Sent {
		t.Lost = t.Sent - t.Received
	}
	if t.Sent > 0 {
		t.LossRatio = float64(t.Lost) / float64(t.Sent)
	}
	secs := r.o.Trial.Seconds()
	t.OfferedPPS, t.ForwardedPPS = float64(t.Sent)/secs, float64(t.Received)/secs
	t.Short = pps > 0 && t.OfferedPPS < pps*(1-r.o.Resolution)
	t.Pass = t.Sent > 0 && t.LossRatio <= r.o.LossTolerance
	return t, nil
}

// Devices lists the names ParseDevices accepts.
func Devices() []Device { return []Device{DeviceSwitch, DevicePatch, DeviceBridge} }

// ParseDevices reads a comma-separated list of devices.
func ParseDevices(s string) ([]Device, error) {
	var out []Device
	for _, f := range strings.Split(s, ",") {
		d := Device(strings.TrimSpace(f))
		if !slices.Contains(Devices(), d) {
			return nil, fmt.Errorf("device %q: want %s, %s or %s", f, DeviceSwitch, DevicePatch, DeviceBridge)
		}
		out = append(out, d)
	}
	return out, nil
}
