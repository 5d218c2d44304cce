package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/loadgen/xdpgen"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// SwitchOptions configure RunSwitch. The zero value of every field selects
// its default. A run is 1 + len(Sweep) + at most Iterations trials per
// device and size, each Trial long plus up to Drain: about 2.5 minutes
// with the defaults.
type SwitchOptions struct {
	// Sizes are the frame sizes, FCS included. Default 64, 512, 1500.
	Sizes []int
	// Devices are compared in this order. Default DeviceSwitch,
	// DevicePatch, DeviceTestpmd, DeviceOVS, DeviceBridge.
	Devices []Device
	// Testpmd is the dpdk-testpmd binary of DeviceTestpmd; default found
	// in PATH. Without it the testpmd row is skipped, and the report says
	// why.
	Testpmd string
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
	DSCP  []loadgen.Share[uint8]
	ECN   []loadgen.Share[packet.ECN]
	// Generator is how the generator sends: GeneratorXDP (live frames,
	// loadgen.LiveGenerator), GeneratorAFXDP (loadgen.Generator on an
	// AF_XDP port), or
	// GeneratorAuto (the default): live frames where the kernel runs
	// them, AF_XDP otherwise. The report says which.
	Generator string
	// Sink is how the sink counts: loadgen.SinkXDP (loadgen.XDPSink on the
	// sink host's veth end: it keeps up with any device here),
	// loadgen.SinkAFXDP (loadgen.Sink on an AF_XDP port), or
	// loadgen.SinkAuto (the default): XDP where the program
	// attaches, AF_XDP otherwise. The report says which.
	Sink string
	// Testbed are the options of the two-host testbed; Hosts is set to 2.
	Testbed testbed.Options
	// External, when set, measures a device that is not ours, wired
	// between two interfaces of this machine, instead of bringing up a
	// testbed: Devices is DeviceExternal alone, and Testbed and Start are
	// not used.
	External *External
	// Start starts ecnswitch for DeviceSwitch and DevicePatch. Required
	// for them: node.BenchSwitch passes the switch on AF_XDP ports.
	Start StartSwitch
	// Progress receives one line per trial; nil prints nothing.
	Progress io.Writer
	// Logger receives lifecycle events of the testbed, ports and switch.
	Logger *zap.Logger
}

func (o *SwitchOptions) setDefaults() error {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{64, 512, 1500}
	}
	if len(o.Devices) == 0 && o.External == nil {
		o.Devices = Devices()
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
		o.DSCP = []loadgen.Share[uint8]{{Value: 0, Weight: 50}, {Value: 8, Weight: 50}}
	}
	if len(o.ECN) == 0 {
		o.ECN = []loadgen.Share[packet.ECN]{{Value: packet.ECT0, Weight: 1}}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.Testbed.Hosts = 2
	switch o.Generator {
	case "":
		o.Generator = GeneratorAuto
	case GeneratorAuto, GeneratorXDP, GeneratorAFXDP:
	default:
		return fmt.Errorf("generator: %q: want %s, %s or %s", o.Generator, GeneratorAuto, GeneratorXDP, GeneratorAFXDP)
	}
	switch o.Sink {
	case "":
		o.Sink = loadgen.SinkAuto
	case loadgen.SinkAuto, loadgen.SinkXDP, loadgen.SinkAFXDP:
	default:
		return fmt.Errorf("sink: %q: want %s, %s or %s", o.Sink, loadgen.SinkAuto, loadgen.SinkXDP, loadgen.SinkAFXDP)
	}
	for i, s := range o.Sizes {
		if s < loadgen.MinSize || s > afxdp.UsableFrame(afxdp.DefaultFrameSize)+loadgen.FCS {
			return fmt.Errorf("sizes[%d]: %d bytes: want %d to %d (FCS included; the AF_XDP frame holds %d)",
				i, s, loadgen.MinSize, afxdp.UsableFrame(afxdp.DefaultFrameSize)+loadgen.FCS, afxdp.UsableFrame(afxdp.DefaultFrameSize))
		}
	}
	if o.External != nil {
		if err := o.External.validate(o); err != nil {
			return err
		}
	}
	for i, d := range o.Devices {
		if !slices.Contains(Devices(), d) && (d != DeviceExternal || o.External == nil) {
			return fmt.Errorf("devices[%d]: %q: want one of %s", i, d, devicesString())
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

// Generator modes of SwitchOptions.Generator.
const (
	GeneratorAuto  = "auto"
	GeneratorXDP   = "xdp"
	GeneratorAFXDP = "afxdp"
)

// Switch is a running ecnswitch, as the benchmark reads it.
type Switch interface {
	Stats() dataplane.Stats
	KernelDrops() uint64 // frames the kernel dropped on the switch's sockets
	Stop() error         // stop the workers and close the ports
}

// StartSwitch starts ecnswitch with cfg, port i on the interface
// ifaces[i] opened with opts, on clock.
type StartSwitch func(cfg dataplane.Config, ifaces []string, opts afxdp.Options, clock timestamp.Clock) (Switch, error)

// rig is RunSwitch's topology: generator in host 1, sink in host 2, the
// device between their switch ends in the caller's namespace; or, for an
// external device, the generator and the sink on the two interfaces it is
// wired between.
type rig struct {
	o     SwitchOptions
	tb    *testbed.Testbed // nil for an external device
	hosts []testbed.Host
	gen0  end               // where the generator sends
	sink0 end               // where the sink counts
	addrs loadgen.Addresses // the frames'
	learn bool              // send a learning frame before each trial (External.NoLearn)
	clock *loadgen.SystemClock
	// txClock and rxClock are the generator's and the sink's stamp
	// clocks: clock, or a PHC (External); phcs are the PHCs opened.
	txClock, rxClock stampClock
	phcs             []*timestamp.PHC
	gen              *loadgen.NetnsPort // the AF_XDP generator's port; nil when live
	live             bool               // the generator sends XDP live frames
	sink             *loadgen.NetnsPort // the AF_XDP sink's port; nil with xsink
	xsink            *loadgen.XDPSink   // the XDP sink, if used
	run              uint16
	rep              *SwitchReport
	drops            func() map[string]uint64 // the device's drop counters by reason, while it is up
}

// stampClock is a clock a generator or a sink stamps on, as CheckClocks
// compares them.
type stampClock interface {
	timestamp.Clock
	loadgen.StampClock
}

// onPHC reports whether the TX (tx) or RX stamps are on a PHC.
func (r *rig) onPHC(tx bool) bool {
	e := r.o.External
	if e == nil {
		return false
	}
	if tx {
		return e.TxClock == StampPHC
	}
	return e.RxClock == StampPHC
}

// checkClocks checks the clocks of the TX and RX stamps (see
// loadgen.CheckClocks).
func (r *rig) checkClocks() loadgen.ClockCheck {
	var limit time.Duration
	if r.o.External != nil {
		limit = r.o.External.ClockLimit
	}
	return loadgen.CheckClocks(r.txClock, r.rxClock, limit)
}

// end is one end of the measured path: the interface the generator sends
// on, or the one the sink counts on, and its namespace.
type end struct{ netns, iface string }

// RunSwitch brings up a two-host testbed (generator in h1 → device → sink
// in h2), and for every device and frame size measures (a) the maximum
// forwarding rate, with the generator unpaced, and (b) the RFC 2544
// throughput, the highest offered rate with no loss: a sweep of offered
// loads, then a binary search between the highest passing and the lowest
// failing rate. Devices run one after another over the same veths, so
// their results are side by side. With o.External it brings up nothing
// and measures the device wired between the two interfaces instead. It
// needs root and removes everything it created or attached, also on
// error or when ctx is cancelled.
func RunSwitch(ctx context.Context, o SwitchOptions) (rep *SwitchReport, err error) {
	if err := o.setDefaults(); err != nil {
		return nil, fmt.Errorf("bench: switch: %w", err)
	}
	if o.Testpmd == "" {
		o.Testpmd, _ = exec.LookPath("dpdk-testpmd")
	}
	if o.Start == nil && slices.ContainsFunc(o.Devices, func(d Device) bool { return d == DeviceSwitch || d == DevicePatch }) {
		return nil, errors.New("bench: switch: SwitchOptions.Start is nil: run the benchmark through node.BenchSwitch, which starts ecnswitch")
	}
	r := &rig{o: o, rep: &SwitchReport{Start: time.Now(), CPUs: runtime.NumCPU(), Build: buildinfo.Read()}}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		r.rep.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	ro := &r.rep.Options
	ro.Sizes, ro.Devices, ro.Trial, ro.Sweep = o.Sizes, o.Devices, o.Trial.String(), o.Sweep
	ro.Iterations, ro.Resolution, ro.LossTolerance, ro.Flows = o.Iterations, o.Resolution, o.LossTolerance, o.Flows
	ro.Mix = mixString(o.DSCP, o.ECN)

	if r.clock, err = loadgen.NewSystemClock(); err != nil {
		return nil, err
	}
	r.txClock, r.rxClock = r.clock, r.clock
	if o.External != nil {
		err = r.external()
		defer func() { err = errors.Join(err, r.closeClocks()) }()
		if err != nil {
			return nil, err
		}
	} else {
		if o.Testbed.Logger == nil {
			o.Testbed.Logger = o.Logger.Named("testbed")
		}
		if r.tb, err = testbed.Up(o.Testbed); err != nil {
			return nil, fmt.Errorf("bench: switch: %w", err)
		}
		defer func() { err = errors.Join(err, r.tb.Down()) }()
		r.hosts = r.tb.Hosts()
		h0, h1 := r.hosts[0], r.hosts[1]
		r.gen0 = end{netns: h0.Netns, iface: h0.HostIf}
		r.sink0 = end{netns: h1.Netns, iface: h1.HostIf}
		r.addrs = loadgen.Addresses{SrcMAC: h0.MAC, DstMAC: h1.MAC, SrcIP: h0.IPv4, DstIP: h1.IPv4}
	}
	r.rep.Stamps = r.checkClocks()
	fmt.Fprintf(o.Progress, "stamps: %s\n", r.rep.Stamps)
	r.live = o.Generator != GeneratorAFXDP
	if r.live && r.onPHC(true) {
		r.live = false
		r.rep.GeneratorNote = "TX stamps on the PHC: live frames are stamped in XDP, on CLOCK_MONOTONIC"
	}
	if r.live {
		if perr := r.probeLive(); perr != nil {
			if o.Generator == GeneratorXDP {
				return nil, fmt.Errorf("bench: switch: live-frames generator: %w", perr)
			}
			r.live = false
			r.rep.GeneratorNote = perr.Error()
		}
	}
	r.rep.Generator = GeneratorAFXDP
	if r.live {
		r.rep.Generator = GeneratorXDP
	} else {
		if r.gen, err = loadgen.OpenPort(r.gen0.netns, r.gen0.iface, r.portOptions()); err != nil {
			return nil, fmt.Errorf("bench: switch: generator port: %w", err)
		}
		defer func() { err = errors.Join(err, r.gen.Close()) }()
	}
	fmt.Fprintf(o.Progress, "generator: %s %s\n", r.rep.Generator, r.rep.GeneratorNote)
	r.rep.Sink = loadgen.SinkAFXDP
	if o.Sink != loadgen.SinkAFXDP && r.onPHC(false) {
		r.rep.SinkNote = "RX stamps on the PHC: the XDP sink stamps on CLOCK_MONOTONIC"
	} else if o.Sink != loadgen.SinkAFXDP {
		xs, serr := loadgen.NewXDPSink(loadgen.SinkConfig{Flows: o.Flows}, r.sink0.netns, r.sink0.iface, false, r.clock)
		switch {
		case serr == nil:
			r.xsink, r.rep.Sink = xs, loadgen.SinkXDP
			defer func() { err = errors.Join(err, r.xsink.Close()) }()
		case o.Sink == loadgen.SinkXDP:
			return nil, fmt.Errorf("bench: switch: %w", serr)
		default:
			r.rep.SinkNote = serr.Error()
		}
	}
	if r.xsink == nil {
		if r.sink, err = loadgen.OpenPort(r.sink0.netns, r.sink0.iface, r.sinkPortOptions()); err != nil {
			return nil, fmt.Errorf("bench: switch: sink port: %w", err)
		}
		defer func() { err = errors.Join(err, r.sink.Close()) }()
	}
	fmt.Fprintf(o.Progress, "sink: %s %s\n", r.rep.Sink, r.rep.SinkNote)

	skip := func(dev Device, why string) {
		if r.rep.Skipped == nil {
			r.rep.Skipped = map[Device]string{}
		}
		r.rep.Skipped[dev] = why
		fmt.Fprintf(o.Progress, "%s: skipped: %s\n", dev, why)
	}
	for _, dev := range o.Devices {
		switch {
		case dev == DeviceTestpmd && o.Testpmd == "":
			skip(dev, "dpdk-testpmd not installed (scripts/deps.sh --testpmd installs it: apt-get install dpdk-dev librte-net-af-xdp23)")
			continue
		case dev == DeviceOVS && ovsMissing() != "":
			skip(dev, ovsMissing())
			continue
		}
		if err := r.device(ctx, dev); err != nil {
			var s errSkip
			if errors.As(err, &s) {
				skip(dev, s.why)
				continue
			}
			return r.rep, err
		}
	}
	r.rep.Seconds = time.Since(r.rep.Start).Seconds()
	return r.rep, nil
}

func mixString(dscp []loadgen.Share[uint8], ecn []loadgen.Share[packet.ECN]) string {
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
	if r.live && r.tb != nil {
		// Live frames run the receiving veth end's NAPI, and with it the
		// device's receive work (a bridge's forwarding, ecnswitch's XDP
		// redirect), inside the generator's own call, unless that NAPI has
		// a thread of its own: then the device works on its own CPU time,
		// and a device that falls behind shows as loss, not as a slower
		// generator. (The NAPI exists once the device's XDP program is on.)
		if err := threadedNAPI(r.hosts[0].SwitchIf); err != nil {
			return fmt.Errorf("bench: switch: %s: %w", dev, err)
		}
	}
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
	if dev == DeviceExternal {
		// Not ours: nothing to start, and its counters are its own.
		return func() error { return nil }, func() map[string]uint64 { return nil }, nil
	}
	names := []string{r.hosts[0].SwitchIf, r.hosts[1].SwitchIf}
	switch dev {
	case DeviceBridge:
		down, drops, err := upBridge("ecnsw"+r.tb.ID()+"br", names)
		if err != nil || !r.live {
			return down, drops, err
		}
		// Live frames reach the bridge's port only while it has an XDP
		// program: one that passes every frame to the bridge.
		ifi, ierr := net.InterfaceByName(names[0])
		var detach func() error
		if ierr == nil {
			detach, ierr = xdpgen.AttachPass(ifi.Index)
		}
		if ierr != nil {
			return nil, nil, errors.Join(ierr, down())
		}
		return func() error { return errors.Join(detach(), down()) }, drops, nil
	case DevicePatch:
		return r.upSwitch(PatchConfig(names))
	case DeviceTestpmd:
		// Its forwarding lcore on the last CPU, its main lcore (which
		// sleeps) and the live generator on the first.
		last := max(runtime.NumCPU()-1, 0)
		stop, err := startTestpmd(TCPOptions{Testpmd: r.o.Testpmd, WorkerCPUs: []int{last}, HostCPUs: []int{0}}, names)
		if err != nil {
			return nil, nil, err
		}
		return stop, func() map[string]uint64 { return nil }, nil
	case DeviceOVS:
		stop, err := startOVS("ecnsw"+r.tb.ID()+"ov", names, max(runtime.NumCPU()-1, 0))
		if err != nil {
			return nil, nil, err
		}
		return stop, func() map[string]uint64 { return nil }, nil
	default:
		return r.upSwitch(PipelineConfig(names, []net.HardwareAddr{r.hosts[0].MAC, r.hosts[1].MAC}))
	}
}

// PortOptions are the AF_XDP options of the switch's and the generator's
// ports in RunSwitch: the defaults, native attach (veth has it; generic
// mode would let the peer's GSO aggregates through, notes/afxdp.md
// pitfall 4).
func PortOptions(log *zap.Logger) afxdp.Options {
	return afxdp.Options{Attach: afxdp.AttachNative, Logger: log}
}

// SinkPortOptions give the sink's socket 8192-entry RX and fill rings, so
// that a sink thread descheduled for a few ms (two cores, shared) does not
// drop what the device delivered. It never transmits.
func SinkPortOptions(log *zap.Logger) afxdp.Options {
	o := PortOptions(log)
	o.Frames, o.FillRingSize, o.RxRingSize = 16384, 8192, 8192
	o.TxRingSize, o.CompletionRingSize = 64, 64
	return o
}

// portOptions are PortOptions; on an external device's NIC the generator
// takes one queue's socket (it transmits on the first socket; a socket
// on every queue of a many-queue NIC would only hold memory).
func (r *rig) portOptions() afxdp.Options {
	o := PortOptions(r.o.Logger.Named("port"))
	if r.tb == nil {
		o.Queues = []int{0}
	}
	return o
}

// sinkPortOptions are SinkPortOptions, with hardware stamps left on the
// PHC when RX stamps are to be on it.
func (r *rig) sinkPortOptions() afxdp.Options {
	o := SinkPortOptions(r.o.Logger.Named("port"))
	if r.onPHC(false) {
		o.RxStamp, o.RxStampRaw = afxdp.RxStampOn, true
	}
	return o
}

// upSwitch runs ecnswitch with cfg over AF_XDP ports on the switch ends.
func (r *rig) upSwitch(cfg dataplane.Config) (func() error, func() map[string]uint64, error) {
	names := make([]string, len(cfg.Ports))
	for i, pc := range cfg.Ports {
		names[i] = pc.Name
	}
	sw, err := r.o.Start(cfg, names, r.portOptions(), r.clock)
	if err != nil {
		return nil, nil, err
	}
	drops := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, p := range sw.Stats().Ports {
			for k, v := range p.Drops {
				m[k] += v
			}
		}
		m["xsk_rx"] += sw.KernelDrops()
		return m
	}
	return sw.Stop, drops, nil
}

// threadedNAPI gives ifname's NAPI a kernel thread of its own (sysfs
// threaded), in the caller's network namespace.
func threadedNAPI(ifname string) error {
	if err := os.WriteFile("/sys/class/net/"+ifname+"/threaded", []byte("1"), 0); err != nil {
		return fmt.Errorf("threaded NAPI on %s: %w", ifname, err)
	}
	return nil
}
