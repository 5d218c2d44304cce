package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

func validateCmd(e *env, args []string) int {
	fs, _ := e.flagSet("validate", "-c FILE", "Check a config: decode it strictly, validate every key, and build the switch it\n"+
		"describes on stand-in ports (no root needed). Prints a summary, or every error\nwith its key, value and allowed range.")
	path := fs.String("c", "", "config file (required)")
	cfg, code, ok := loadConfig(e, fs, path, args)
	if !ok {
		return code
	}
	if err := dryRun(cfg); err != nil {
		return e.fail("validate", err)
	}
	fmt.Fprintf(e.stdout, "%s: ok\n", *path)
	summarize(e.stdout, cfg)
	return exitOK
}

// dryRun builds the switch the config describes on stand-in ports, so that
// dataplane.New's own checks run too.
func dryRun(cfg *config.Config) error {
	dc, err := cfg.Dataplane()
	if err != nil {
		return err
	}
	devs := make([]ports.Port, len(dc.Ports))
	for i, p := range dc.Ports {
		devs[i] = nullPort(p.Name)
	}
	sw, err := dataplane.New(dc, devs, timestamp.NewVirtual(0), nil)
	if err != nil {
		return err
	}
	return sw.Close()
}

// nullPort is a port with no link: it receives nothing and takes every
// frame.
type nullPort string

var _ ports.Port = nullPort("")

func (p nullPort) Name() string                            { return string(p) }
func (p nullPort) Receive([]*packet.Desc) (int, error)     { return 0, nil }
func (p nullPort) Transmit(ds []*packet.Desc) (int, error) { return len(ds), nil }
func (p nullPort) Close() error                            { return nil }

// summarize prints what a config sets up, one block per port.
func summarize(w io.Writer, c *config.Config) {
	spin := fmt.Sprintf("spin %d", c.Spin)
	if c.Spin < 0 {
		spin = "busy poll"
	}
	cpus := "no CPU pinning"
	if len(c.CPUs) > 0 {
		cpus = fmt.Sprintf("CPUs %v", c.CPUs)
	}
	fmt.Fprintf(w, "switch     %d worker(s), %d frames of %d B each, batch %d, %s, %s, log %s\n",
		c.Workers, c.Frames, c.FrameSize, c.Batch, spin, cpus, c.LogLevel)
	var pools []string
	for _, p := range c.Pools {
		pools = append(pools, p.Name+" "+config.FormatSize(p.Size))
	}
	fmt.Fprintf(w, "pools      %s\n", strings.Join(pools, ", "))
	if t := c.Telemetry; t.Enabled {
		fmt.Fprintf(w, "telemetry  http://%s  (/metrics /stats /queues; queue depth every %v, %d samples)\n", t.Listen, t.QueueSamplePeriod, t.QueueSamples)
	} else {
		fmt.Fprintln(w, "telemetry  off")
	}
	api := "ecnswitch capture start|stop|status"
	if !c.Telemetry.Enabled {
		api = "no run-time API: telemetry is off"
	}
	fmt.Fprintf(w, "capture    dir %s, %d at start (%s)\n", c.Capture.Dir, len(c.Capture.Captures), api)
	for _, s := range c.Capture.Captures {
		fmt.Fprintf(w, "             %s %s → %s\n", s.Port, describeSpec(s), s.Path)
	}
	fw := c.Forwarding
	learning := "learning off"
	if !fw.NoLearning {
		learning = fmt.Sprintf("learning (age %v, %d slots)", fw.AgeTime, fw.TableSize)
	}
	fmt.Fprintf(w, "forwarding %s, %d patch(es), %d MAC rule(s), %d prefix rule(s)\n", learning, len(fw.Patches), len(fw.MACs), len(fw.Prefixes))
	fmt.Fprintln(w, "ports")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range c.Ports {
		rate := "unshaped"
		if p.Shaper.Rate > 0 {
			rate = fmt.Sprintf("%s (bucket %s)", config.FormatRate(p.Shaper.Rate), config.FormatSize(p.Shaper.Bucket))
		}
		strict := 0
		for _, q := range p.Scheduler.Queues {
			if q.Strict {
				strict++
			}
		}
		sched := fmt.Sprintf("%v × %d queues", p.Scheduler.Kind, p.Scheduler.NumQueues)
		if strict > 0 && p.Scheduler.Kind.String() != "sp" {
			sched += fmt.Sprintf(" (%d strict)", strict)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\tpool %s\tafxdp %v/zerocopy %v\n", p.Name, p.Interface, rate, sched,
			c.Pools[p.Pool].Name, p.AFXDP.Attach, p.AFXDP.ZeroCopy)
	}
	tw.Flush()
	for _, p := range c.Ports {
		var lines []string
		for _, m := range p.Markers {
			lines = append(lines, fmt.Sprintf("%s: %s %s", m.Stage, m.Scheme, m.Params))
		}
		if len(p.Markers) > 0 && p.NonECT == marking.NonECTPass {
			lines = append(lines, "non-ECT packets pass unmarked")
		}
		if d := describeDelay(p.Delay); d != "" {
			lines = append(lines, "delay: "+d)
		}
		for i, l := range lines {
			label := ""
			if i == 0 {
				label = p.Name
			}
			fmt.Fprintf(w, "  %-8s %s\n", label, l)
		}
	}
}

func describeDelay(d dataplane.Delay) string {
	one := func(d dataplane.Delay) string {
		s := d.Fixed.String()
		if d.Jitter > 0 {
			s += " + U[0, " + d.Jitter.String() + ")"
		}
		return s
	}
	var parts []string
	if d.Fixed > 0 || d.Jitter > 0 {
		parts = append(parts, one(d))
	}
	for q := range 64 {
		if pq, ok := d.PerQueue[q]; ok {
			parts = append(parts, fmt.Sprintf("queue %d %s", q, one(pq)))
		}
	}
	return strings.Join(parts, ", ")
}
