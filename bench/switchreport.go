package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ecnswitch/ecnswitch/loadgen"
)

// Write writes the report into dir (created if missing): report.md with
// the results table and the trials, results.json, and two PNG plots per
// frame size: rate-<size>.png (forwarded against offered rate, each
// device's trials) and latency-<size>.png (p50 and p99 one-way latency
// against offered rate). command, if not empty, is shown as the command
// line that produced the report.
func (r *SwitchReport) Write(dir, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	for _, size := range r.Options.Sizes {
		if err := r.plotRates(size, filepath.Join(dir, fmt.Sprintf("rate-%d.png", size))); err != nil {
			return fmt.Errorf("bench: report: %d B rate plot: %w", size, err)
		}
		if err := r.plotLatency(size, filepath.Join(dir, fmt.Sprintf("latency-%d.png", size))); err != nil {
			return fmt.Errorf("bench: report: %d B latency plot: %w", size, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown(command)), 0o644); err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	return nil
}

func gbps(pps float64, size int) float64 { return pps * float64(size) * 8 / 1e9 }

// Markdown renders the report: how it was measured, the results table with
// each device's ratio to the bridge, the plots and every trial.
func (r *SwitchReport) Markdown(command string) string {
	var b strings.Builder
	b.WriteString("# ecnswitch forwarding benchmark (RFC 2544)\n\n")
	if command != "" {
		fmt.Fprintf(&b, "    %s\n\n", command)
	}
	fmt.Fprintf(&b, "%s.\n\n", r.Build)
	o := r.Options
	gen := "over AF_XDP (veth, copy mode)"
	if r.External != nil {
		gen = "over AF_XDP"
	}
	if r.Generator == GeneratorXDP {
		gen = "as XDP live frames (BPF_PROG_RUN of ecnswitch's generator program, one thread)"
	} else if r.GeneratorNote != "" {
		gen += " (live frames unusable: " + r.GeneratorNote + ")"
	}
	sink, wait := "over AF_XDP", "and includes the time frames wait for the sink to read them"
	if r.Sink == loadgen.SinkXDP {
		sink = "counting in an XDP program (ecnswitch's, per CPU: it keeps up with any device here)"
		wait = fmt.Sprintf("taken when the sink's program sees the frame, for a random %.3g of the frames", loadgen.DefaultSample)
	} else if r.SinkNote != "" {
		sink += " (XDP sink unusable: " + r.SinkNote + ")"
	}
	where := fmt.Sprintf("A generator in one testbed namespace sends UDP frames %s through the device to a sink %s in another namespace; "+
		"the devices take turns over the same veth ends. ", gen, sink)
	cpus := fmt.Sprintf("Generator, devices and sink compete for the CPUs (%d here): ecnswitch's loss shows up as its socket overflowing "+
		"(xsk_rx in results.json) whenever its worker is descheduled. ", r.CPUs)
	if x := r.External; x != nil {
		where = fmt.Sprintf("A generator on %s sends UDP frames %s (%s → %s, %s → %s) through a device that is not ours, "+
			"wired between %s and %s, to a sink %s on %s. ", x.GenIface.Name, gen, x.SrcMAC, x.DstMAC, x.SrcIP, x.DstIP,
			x.GenIface.Name, x.SinkIface.Name, sink, x.SinkIface.Name)
		if x.Learn {
			where += fmt.Sprintf("Before every trial one frame left %s from its MAC, for a learning switch to learn where the sink is. ", x.SinkIface.Name)
		}
		where += "The device's own counters are not read: its loss is what was sent and never arrived, " +
			"and the trials' sink drops say what of it the sink's side dropped. "
		cpus = fmt.Sprintf("The generator and the sink share this machine's CPUs (%d here), not the device's. ", r.CPUs)
	}
	fmt.Fprintf(&b, "Measured %s on Linux %s with %d CPUs in %.0f s. %s"+
		"%d flows, %s. Each trial sends for %s. "+
		"**Max** is the unpaced trial: what the generator offered and what reached the sink. "+
		"**Throughput** is the RFC 2544 throughput: the highest offered rate whose trial lost at most %.4g%% of its frames, "+
		"found by a sweep at %v of the max offered rate and then up to %d bisection steps (resolution %.3g%%). "+
		"**Bound by** says which side limited the max: the device when the generator offered more than reached the sink, "+
		"the generator when everything it offered arrived. "+
		"Throughput marked ≥ is bound by the generator (it lost nothing at the most the generator offered), and ratios over it are bounds too. "+
		"Rates count frames with their FCS; Gbit/s = frames/s × size × 8. Latency is one-way, generator to sink (%s), "+
		"%s.\n\n"+
		"%s%s"+
		"On a shared machine, stalls of tens of ms (other processes, softirq) cost frames "+
		"and vary from run to run; running the benchmark under nice -n -10 makes them rarer.\n\n",
		r.Start.UTC().Format(time.RFC3339), r.Kernel, r.CPUs, r.Seconds, where, o.Flows, o.Mix, o.Trial,
		100*o.LossTolerance, o.Sweep, max(o.Iterations, 0), 100*o.Resolution, r.Stamps, wait, r.howToRead(), cpus)

	// Ratios to the bridge where there may be one: not for an external
	// device, measured alone.
	ratios := r.External == nil
	if ratios {
		b.WriteString("| frame | device | max forwarded | | offered at max | loss at max | bound by | throughput | | throughput ÷ bridge | max ÷ bridge | latency p50 / p99 at throughput |\n")
		b.WriteString("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	} else {
		b.WriteString("| frame | device | max forwarded | | offered at max | loss at max | bound by | throughput | | latency p50 / p99 at throughput |\n")
		b.WriteString("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|\n")
	}
	for _, size := range o.Sizes {
		bridge, hasBridge := r.Result(DeviceBridge, size)
		for _, dev := range o.Devices {
			res, ok := r.Result(dev, size)
			if !ok {
				continue
			}
			tp := fmt.Sprintf("%.4f Mpps", res.ThroughputPPS/1e6)
			if res.GeneratorBound {
				tp = "≥ " + tp
			}
			ratioTP, ratioMax := "", ""
			if hasBridge && bridge.ThroughputPPS > 0 {
				// A generator-bound throughput is a lower bound, so is a
				// ratio over it the other way round.
				bound := ""
				switch {
				case res.GeneratorBound && bridge.GeneratorBound && dev != DeviceBridge:
					bound = "≈ "
				case res.GeneratorBound && !bridge.GeneratorBound:
					bound = "≥ "
				case !res.GeneratorBound && bridge.GeneratorBound:
					bound = "≤ "
				}
				ratioTP = fmt.Sprintf("%s%.2f", bound, res.ThroughputPPS/bridge.ThroughputPPS)
			}
			if hasBridge && bridge.MaxForwardedPPS > 0 {
				ratioMax = fmt.Sprintf("%.2f", res.MaxForwardedPPS/bridge.MaxForwardedPPS)
			}
			lat := "–"
			if res.ThroughputPPS > 0 {
				lat = fmt.Sprintf("%v / %v", roundDur(res.ThroughputLatency.P50), roundDur(res.ThroughputLatency.P99))
			}
			fmt.Fprintf(&b, "| %d B | %s | %.4f Mpps | %.3f Gbit/s | %.4f Mpps | %.3f%% | %s | %s | %.3f Gbit/s | ",
				size, r.label(dev), res.MaxForwardedPPS/1e6, gbps(res.MaxForwardedPPS, size), res.MaxOfferedPPS/1e6, 100*res.MaxLossRatio,
				res.BoundBy(), tp, gbps(res.ThroughputPPS, size))
			if ratios {
				fmt.Fprintf(&b, "%s | %s | ", ratioTP, ratioMax)
			}
			fmt.Fprintf(&b, "%s |\n", lat)
		}
	}
	for _, dev := range o.Devices {
		if why, ok := r.Skipped[dev]; ok {
			fmt.Fprintf(&b, "\n%s: not measured: %s.\n", r.label(dev), why)
		}
	}
	b.WriteString("\n## Plots\n\n")
	for _, size := range o.Sizes {
		fmt.Fprintf(&b, "![%d B: forwarded vs offered](rate-%d.png)\n![%d B: latency vs offered](latency-%d.png)\n\n", size, size, size, size)
	}
	b.WriteString("## Trials\n\nOffered rates marked * fell short of the target: the generator could not keep up. " +
		"Loss is split where counters show it: dropped by the device (ecnswitch's drop counters and its sockets' kernel drops; " +
		"the bridge's port counters) and dropped on the sink's side (its AF_XDP socket, or the XDP sink's veth ring: the measurement, not the device).\n\n")
	b.WriteString("| device | frame | kind | target | offered | forwarded | loss | device drops | sink drops | CE | reordered | p50 | p99 | max latency |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range r.Trials {
		target, short := "unpaced", ""
		if t.TargetPPS > 0 {
			target = fmt.Sprintf("%.4f Mpps", t.TargetPPS/1e6)
		}
		if t.Short {
			short = "*"
		}
		fmt.Fprintf(&b, "| %s | %d B | %s | %s | %.4f Mpps%s | %.4f Mpps | %.3f%% | %d | %d | %d | %d | %v | %v | %v |\n",
			r.label(t.Device), t.Size, t.Kind, target, t.OfferedPPS/1e6, short, t.ForwardedPPS/1e6, 100*t.LossRatio,
			t.DeviceDropped, t.SinkDropped, t.CE, t.Reordered,
			roundDur(t.Latency.P50), roundDur(t.Latency.P99), roundDur(t.Latency.Max))
	}
	return b.String()
}

func roundDur(ns int64) time.Duration {
	d := time.Duration(ns)
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}

// trialsOf returns dev's trials at size, by offered rate.
func (r *SwitchReport) trialsOf(dev Device, size int) []Trial {
	var ts []Trial
	for _, t := range r.Trials {
		if t.Device == dev && t.Size == size {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b Trial) int {
		switch {
		case a.OfferedPPS < b.OfferedPPS:
			return -1
		case a.OfferedPPS > b.OfferedPPS:
			return 1
		}
		return 0
	})
	return ts
}

func (r *SwitchReport) plotRates(size int, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d-byte frames: forwarded vs offered", size)
	p.X.Label.Text = "offered (Mpps)"
	p.Y.Label.Text = "forwarded (Mpps)"
	p.Legend.Top, p.Legend.Left = true, true
	top := 0.0
	for i, dev := range r.Options.Devices {
		ts := r.trialsOf(dev, size)
		xy := make(plotter.XYs, len(ts))
		for k, t := range ts {
			xy[k].X, xy[k].Y = t.OfferedPPS/1e6, t.ForwardedPPS/1e6
			top = max(top, xy[k].X)
		}
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(r.label(dev), l, s)
	}
	ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}})
	if err != nil {
		return err
	}
	ideal.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(ideal)
	p.Legend.Add("no loss", ideal)
	p.Add(plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

func (r *SwitchReport) plotLatency(size int, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d-byte frames: one-way latency vs offered load", size)
	p.X.Label.Text = "offered (Mpps)"
	p.Y.Label.Text = "latency (µs)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	for i, dev := range r.Options.Devices {
		ts := r.trialsOf(dev, size)
		var p50, p99 plotter.XYs
		for _, t := range ts {
			if t.Latency.Count == 0 {
				continue
			}
			p50 = append(p50, plotter.XY{X: t.OfferedPPS / 1e6, Y: max(float64(t.Latency.P50)/1e3, 0.1)})
			p99 = append(p99, plotter.XY{X: t.OfferedPPS / 1e6, Y: max(float64(t.Latency.P99)/1e3, 0.1)})
		}
		if len(p50) == 0 {
			continue
		}
		for k, xy := range []plotter.XYs{p50, p99} {
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
			name := r.label(dev) + " p50"
			if k == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				name = r.label(dev) + " p99"
			}
			p.Add(l, s)
			p.Legend.Add(name, l, s)
		}
	}
	p.Add(plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// label is dev's name in the report: an external device's says which
// interfaces it is wired between.
func (r *SwitchReport) label(dev Device) string {
	if dev == DeviceExternal && r.External != nil {
		return r.External.Label()
	}
	return string(dev)
}

// howToRead explains what limits each device with the report's generator.
func (r *SwitchReport) howToRead() string {
	if r.External != nil {
		return "How to read it: a max bound by the generator says the device forwards at least that much; " +
			"one bound by the device is its forwarding rate under overload, if the sink's side dropped nothing (sink drops in the trials). "
	}
	if r.Generator == GeneratorXDP {
		return "How to read it: the generator runs on the first CPU, and the receiving veth end's NAPI (the bridge's forwarding, " +
			"the devices' XDP hook) in a kernel thread of its own, so the device works on its own CPU time and one that falls behind " +
			"loses frames at the veth instead of slowing the generator. Unpaced, the generator offers several Mpps, far more than " +
			"any device here forwards, so the max is the device's forwarding rate under overload, and the sweep is taken at " +
			"fractions of what the device forwarded. "
	}
	return "How to read it: with a Linux bridge, the generator's transmit system call itself carries each frame through both veths, " +
		"the bridge and the sink's XDP hook, so the bridge seldom loses what the generator manages to send and is often generator-bound. " +
		"With ecnswitch, the generator's call ends at the switch's AF_XDP socket and the switch's worker thread does the rest. "
}
