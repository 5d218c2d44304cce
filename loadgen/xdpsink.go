package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/cilium/ebpf/link"

	"github.com/ecnswitch/ecnswitch/loadgen/xdpsink"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Sink modes: how a sink receives.
const (
	SinkAuto  = "auto"  // XDP where the program attaches, else AF_XDP
	SinkXDP   = "xdp"   // XDPSink: counted and dropped in XDP
	SinkAFXDP = "afxdp" // Sink: every frame to user space over AF_XDP
)

// DefaultSample is the fraction of frames whose one-way latency an
// XDPSink records: 5 Mpps sends 78k samples a second to user space.
const DefaultSample = 1.0 / 64

// XDPSink counts a generator's frames as Sink does, but in an XDP
// program attached to the receiving device (package xdpsink): per flow
// and per CPU, without sending frames to user space, so it keeps up with
// the device. It drops every frame of the generator after counting it,
// passes every other frame to the kernel, and sends a SinkConfig.Sample
// fraction of the frames' headers (with the time the program saw them)
// to user space through a ring buffer for the latency histogram.
//
// Counts are defined as Sink's (lost, reordered, duplicated and late per
// flow from the sequence numbers, within a Window), merged over CPUs: a
// flow whose frames arrive on several CPUs has exact received, lost, CE
// and byte counts, but reordering and duplicates are seen only among the
// frames of one CPU (FlowReport.CPUs says so). Its Report has Sink's
// shape, with Mode "xdp".
//
// Run reads the samples and calls Progress; Totals may be read from any
// goroutine, Report when Run is not running.
type XDPSink struct {
	cfg   SinkConfig
	prog  *xdpsink.Program
	link  link.Link
	clock timestamp.Clock
	hist  *hdrhistogram.Histogram

	negative, clamped uint64
	record            func(xdpsink.Sample)

	progStart, progLast int64
	progPackets         uint64
	progBytes           uint64
}

// NewXDPSink loads the sink's program and attaches it to ifname in the
// named network namespace ("" the caller's), in native mode or, with
// generic, in generic (skb) mode; clock nil means a SystemClock. Only
// cfg's Run, Window, Overhead, Flows, Sample and Progress apply.
func NewXDPSink(cfg SinkConfig, netns, ifname string, generic bool, clock timestamp.Clock) (_ *XDPSink, err error) {
	s, err := newXDPSink(cfg, clock)
	if err != nil {
		return nil, err
	}
	err = inNetns(netns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		s.link, err = s.prog.Attach(ifi.Index, generic)
		return err
	})
	if err != nil {
		s.prog.Close()
		return nil, fmt.Errorf("loadgen: XDP sink on %s: %w", ifname, err)
	}
	return s, nil
}

// newXDPSink loads the program without attaching it.
func newXDPSink(cfg SinkConfig, clock timestamp.Clock) (*XDPSink, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	clock, err := orSystemClock(clock)
	if err != nil {
		return nil, err
	}
	prog, err := xdpsink.Load(xdpsink.Config{Magic: Magic, Flows: cfg.Flows, Window: cfg.Window, Sample: cfg.Sample})
	if err != nil {
		return nil, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	s := &XDPSink{cfg: cfg, prog: prog, clock: clock, hist: hdrhistogram.New(1, MaxLatency, latencySigDigits)}
	s.record = s.recordSample
	prog.SetRun(cfg.Run)
	return s, nil
}

// Close detaches and unloads the program.
func (s *XDPSink) Close() error {
	var errs []error
	if s.link != nil {
		errs = append(errs, s.link.Close())
		s.link = nil
	}
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
		s.prog = nil
	}
	return errors.Join(errs...)
}

// Reset starts counting run afresh: the counters, the flows' sequence
// numbers and the latencies are forgotten, and frames of any other run
// are stale from now on. Call it when Run is not running.
func (s *XDPSink) Reset(run uint16) error {
	s.cfg.Run = run
	s.prog.SetRun(run)
	if err := s.prog.Reset(); err != nil {
		return fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	s.hist.Reset()
	s.negative, s.clamped = 0, 0
	return nil
}

func (s *XDPSink) recordSample(x xdpsink.Sample) {
	switch lat := x.RxTime - x.TxTime; {
	case lat < 0:
		s.negative++
	case lat > MaxLatency:
		s.clamped++
		_ = s.hist.RecordValue(MaxLatency)
	default:
		_ = s.hist.RecordValue(max(lat, 1))
	}
}

// Totals returns the frames the program has seen, of any run or none;
// safe from any goroutine. (Zero if the counters cannot be read.)
func (s *XDPSink) Totals() Totals {
	g, err := s.prog.Global()
	if err != nil {
		return Totals{}
	}
	return Totals{Packets: g.Packets, Bytes: g.Bytes}
}

// Run reads latency samples until ctx is done, calling Progress every
// ProgressEvery, then reads the samples left. Counting goes on in XDP
// whether Run runs or not.
func (s *XDPSink) Run(ctx context.Context) error {
	s.progStart = s.clock.Now()
	s.progLast = s.progStart
	t := s.Totals()
	s.progPackets, s.progBytes = t.Packets, t.Bytes
	for ctx.Err() == nil {
		if _, err := s.prog.ReadSamples(time.Now().Add(10*time.Millisecond), s.record); err != nil {
			return fmt.Errorf("loadgen: XDP sink: %w", err)
		}
		if now := s.clock.Now(); s.cfg.Progress != nil && now-s.progLast >= int64(s.cfg.ProgressEvery) {
			p, err := s.progress(now)
			if err != nil {
				return err
			}
			s.cfg.Progress(p)
		}
	}
	if _, err := s.prog.ReadSamples(time.Time{}, s.record); err != nil {
		return fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	return nil
}

func (s *XDPSink) progress(now int64) (Progress, error) {
	g, err := s.prog.Global()
	if err != nil {
		return Progress{}, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	flows, err := s.prog.Flows()
	if err != nil {
		return Progress{}, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	dt := float64(now-s.progLast) / 1e9
	p := Progress{
		Elapsed: time.Duration(now - s.progStart),
		PPS:     float64(g.Packets-s.progPackets) / dt,
		BPS:     float64(g.Bytes-s.progBytes+(g.Packets-s.progPackets)*uint64(s.cfg.Overhead)) * 8 / dt,
		P50:     time.Duration(s.hist.ValueAtQuantile(50)),
		P99:     time.Duration(s.hist.ValueAtQuantile(99)),
	}
	for _, f := range flows {
		p.Received += f.Received
		p.Lost += f.Lost()
		p.Reordered += f.Reordered
		p.Duplicated += f.Duplicated
		p.CE += f.CE
	}
	s.progLast, s.progPackets, s.progBytes = now, g.Packets, g.Bytes
	return p, nil
}

// Report sums the counters. Call it when Run is not running; it reports
// an error if the program's maps cannot be read.
func (s *XDPSink) Report() (Report, error) {
	g, err := s.prog.Global()
	if err != nil {
		return Report{}, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	flows, err := s.prog.Flows()
	if err != nil {
		return Report{}, fmt.Errorf("loadgen: XDP sink: %w", err)
	}
	r := Report{Run: s.cfg.Run, Mode: SinkXDP, Foreign: g.Foreign, Malformed: g.Malformed, Stale: g.Stale, Unknown: g.Unknown}
	slices.SortFunc(flows, func(a, b xdpsink.Flow) int { return a.ID - b.ID })
	for _, fl := range flows {
		f := FlowReport{
			Flow: fl.ID, DSCP: fl.DSCP, Received: fl.Received, Lost: fl.Lost(),
			Reordered: fl.Reordered, Duplicated: fl.Duplicated, Late: fl.Late, CE: fl.CE,
			Bytes: fl.Bytes, Highest: fl.Top, CPUs: fl.CPUs,
		}
		r.addFlow(f)
	}
	if g.First != 0 {
		r.First, r.Last = g.First, g.Last
		r.Seconds = float64(g.Last-g.First) / 1e9
		if r.Seconds > 0 {
			r.PPS = float64(r.Received) / r.Seconds
			r.BPS = float64(r.Bytes+r.Received*uint64(s.cfg.Overhead)) * 8 / r.Seconds
		}
	}
	r.Latency = latency(s.hist, s.negative, s.clamped)
	r.Latency.Sample = s.prog.Config().Sample
	r.Latency.SamplesLost = g.SamplesLost
	return r, nil
}
