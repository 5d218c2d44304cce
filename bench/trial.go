package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ecnswitch/ecnswitch/loadgen"
)

// trial sends at pps (0: unpaced) for Trial, waits for the stragglers, and
// compares what the sink counted with what the generator sent.
func (r *rig) trial(ctx context.Context, dev Device, size int, kind string, pps float64) (Trial, error) {
	r.run++
	sink, err := r.newSink()
	if err != nil {
		return Trial{}, err
	}
	gen, err := r.generator(loadgen.GeneratorConfig{
		Addresses: r.addrs,
		Sizes:     []loadgen.Share[int]{{Value: size, Weight: 1}}, DSCP: r.o.DSCP, ECN: r.o.ECN, Flows: r.o.Flows,
		Rate: loadgen.Rate{Packets: pps}, Duration: r.o.Trial, Run: r.run,
	})
	if err != nil {
		return Trial{}, err
	}
	defer gen.Close()
	if r.learn {
		if err := r.sendLearn(); err != nil {
			return Trial{}, err
		}
	}
	dev0, sink0 := r.drops(), r.sinkDrops()
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

	rep, err := sink.Report()
	if err != nil {
		return Trial{}, err
	}
	st := gen.Stats()
	t := Trial{
		Device: dev, Size: size, Kind: kind, TargetPPS: pps,
		Sent: st.Sent, Received: rep.Unique(),
		Reordered: rep.Reordered, Duplicated: rep.Duplicated, CE: rep.CE,
		Latency: rep.Latency.Checked(r.checkClocks()), GeneratorLag: st.Late,
		SinkDropped: r.sinkDrops() - sink0,
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

// trialSink is a trial's sink: a loadgen.XDPSink, or a loadgen.Sink on
// the rig's AF_XDP port.
type trialSink interface {
	Run(context.Context) error
	Totals() loadgen.Totals
	Report() (loadgen.Report, error)
}

// afxdpSink is a loadgen.Sink as a trialSink.
type afxdpSink struct{ *loadgen.Sink }

func (s afxdpSink) Report() (loadgen.Report, error) { return s.Sink.Report(), nil }

// newSink makes the sink of the rig's next trial, counting run r.run.
func (r *rig) newSink() (trialSink, error) {
	if r.xsink != nil {
		return r.xsink, r.xsink.Reset(r.run)
	}
	s, err := loadgen.NewSink(loadgen.SinkConfig{Run: r.run}, r.sink, r.rxClock)
	if err != nil {
		return nil, err
	}
	s.Prepare(r.o.Flows)
	return afxdpSink{s}, nil
}

// sinkDrops is what the sink's side dropped so far: the AF_XDP sink's
// socket drops, or the receive drops of the XDP sink's interface (a
// testbed's veth end, an external device's NIC).
func (r *rig) sinkDrops() uint64 {
	if r.xsink == nil {
		return r.sink.Stats().RxDropped
	}
	var n uint64
	_ = inNetns(r.sink0.netns, func() error {
		l, err := netlink.LinkByName(r.sink0.iface)
		if err != nil {
			return err
		}
		if st := l.Attrs().Statistics; st != nil {
			// A NIC counts frames it had no room for as missed or FIFO
			// errors; a veth counts none there.
			n = st.RxDropped + st.RxMissedErrors + st.RxFifoErrors
		}
		return nil
	})
	return n
}

// trialGenerator is a trial's generator: a loadgen.LiveGenerator, or a
// loadgen.Generator on the rig's AF_XDP port.
type trialGenerator interface {
	Run(context.Context) error
	Stats() loadgen.GeneratorStats
	Close() error
}

// afxdpGenerator is a loadgen.Generator whose port outlives it.
type afxdpGenerator struct{ *loadgen.Generator }

func (afxdpGenerator) Close() error { return nil }

// generator makes a trial's generator, of the rig's mode.
func (r *rig) generator(cfg loadgen.GeneratorConfig) (trialGenerator, error) {
	if !r.live {
		g, err := loadgen.NewGenerator(cfg, r.gen, r.txClock)
		return afxdpGenerator{g}, err
	}
	// One thread, on the first CPU: the device's receive thread (see
	// threadedNAPI), its worker and the sink take the others.
	var cpus []int
	if runtime.NumCPU() > 1 {
		cpus = []int{0}
	}
	return loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: r.gen0.netns, Iface: r.gen0.iface, CPUs: cpus}, r.clock)
}

// probeLive checks that the kernel runs the live-frames generator: it
// loads its program for a one-frame configuration (nothing is sent).
// For an external device it also checks that the generator's interface
// takes redirected frames: on a testbed the device's own XDP program,
// attached later, makes the veth take them.
func (r *rig) probeLive() error {
	cfg := loadgen.GeneratorConfig{Addresses: r.addrs, Count: 1}
	if err := loadgen.ProbeLive(cfg, r.clock); err != nil {
		return err
	}
	if r.tb == nil {
		if ok, err := loadgen.LiveUsable(r.gen0.netns, r.gen0.iface); !ok {
			return err
		}
	}
	return nil
}
