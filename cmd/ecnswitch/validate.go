package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/packet"
)

// validateCommand is `ecnswitch validate`: a config checked as the
// switch would, without root.
func validateCommand() *command {
	return &command{
		name: "validate", synopsis: "-c FILE", short: map[string]string{"c": "config"},
		summary: "check a config and print a summary",
		help: "Check a config: decode it strictly and validate every key, marker and piece of\n" +
			"the switch it describes, as the switch would (no root needed). Prints a summary, or\n" +
			"every error with its key, value and allowed range.",
		setup: func(fs *flag.FlagSet) action {
			path := fs.String("config", "", "config `FILE` (required)")
			return func(e *env, _ []string) int {
				cfg, code, ok := loadConfig(e, "validate", *path)
				if !ok {
					return code
				}
				fmt.Fprintf(e.stdout, "%s: ok\n", *path)
				for _, w := range cfg.Warnings {
					fmt.Fprintf(e.stdout, "warning: %s\n", w)
				}
				summarize(e.stdout, cfg)
				return exitOK
			}
		},
	}
}

// summarize prints what a config sets up, one block per port.
func summarize(w io.Writer, c *config.Config) {
	sw := c.Switch
	spin := fmt.Sprintf("spin %d", sw.Spin)
	if sw.Spin < 0 {
		spin = "never sleep"
	}
	cpus := "no CPU pinning"
	if len(sw.CPUs) > 0 {
		cpus = fmt.Sprintf("CPUs %v", sw.CPUs)
	}
	fmt.Fprintf(w, "switch     %d worker(s), %d frames of %d B each, batch %d, %s, %s, log %s\n",
		sw.Workers, sw.Frames, sw.FrameSize, sw.Batch, spin, cpus, c.LogLevel)
	var pools []string
	for i, p := range sw.Pools {
		pools = append(pools, c.Pools[i]+" "+config.FormatSize(p.Size))
	}
	fmt.Fprintf(w, "pools      %s\n", strings.Join(pools, ", "))
	if t := c.Telemetry; t.Enabled {
		fmt.Fprintf(w, "telemetry  http://%s  (/metrics /stats /queues; queue depth every %v, %d samples)\n", t.Listen, t.QueueSamplePeriod, t.QueueSamples)
	} else {
		fmt.Fprintln(w, "telemetry  off")
	}
	api := "ecnswitch capture start|stop|status on " + c.Control.Socket
	if c.Control.Socket == "" {
		api = "no run-time API: control.socket is empty"
	}
	fmt.Fprintf(w, "capture    dir %s, %d at start (%s)\n", c.Capture.Dir, len(c.Capture.Captures), api)
	for _, s := range c.Capture.Captures {
		fmt.Fprintf(w, "             %s %s → %s\n", s.Port, describeSpec(s), s.Path)
	}
	fw := sw.Forwarding
	learning := "learning off"
	if !fw.NoLearning {
		learning = fmt.Sprintf("learning (age %v, %d slots)", fw.AgeTime, fw.TableSize)
	}
	fmt.Fprintf(w, "forwarding %s, %d patch(es), %d MAC rule(s), %d prefix rule(s)\n", learning, len(fw.Patches), len(fw.MACs), len(fw.Prefixes))
	fmt.Fprintln(w, "ports")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, p := range sw.Ports {
		dev := c.Ports[i]
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\tpool %s\tafxdp %v/zerocopy %v\n", p.Name, dev.Interface, rate, sched,
			c.Pools[p.Pool], dev.AFXDP.Attach, dev.AFXDP.ZeroCopy)
	}
	tw.Flush()
	for i, p := range sw.Ports {
		markers := c.Ports[i].Markers
		var lines []string
		for _, m := range markers {
			lines = append(lines, fmt.Sprintf("%s: %s %s", m.Stage, m.Scheme, m.Params))
		}
		if len(markers) > 0 && p.NonECT == marking.NonECTPass {
			lines = append(lines, "non-ECT packets pass unmarked")
		}
		if d := describeDelay(p.Delay); d != "" {
			lines = append(lines, "delay: "+d)
		}
		if t := p.Trim; t != nil {
			lines = append(lines, "trim: "+describeTrim(t.Size, t.Queue, t.DSCP, t.Queues))
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

func describeDelay(d node.Delay) string {
	one := func(d node.Delay) string {
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

// describeTrim says what a port's trimming (its size, queue, DSCP and
// eligible queues) does: "what every queue but 7 refuses is cut to the
// headers + 64 B, DSCP 46, onto queue 7".
func describeTrim(size, queue int, dscp uint8, queues []int) string {
	which := fmt.Sprintf("every queue but %d refuses", queue)
	if queues != nil {
		which = fmt.Sprintf("queues %v refuse", queues)
	}
	cut := fmt.Sprintf("the headers + %d B", packet.DefaultTrimPayload)
	if size > 0 {
		cut = fmt.Sprintf("%d B", size)
	}
	return fmt.Sprintf("what %s is cut to %s, DSCP %d, onto queue %d (UDP only)", which, cut, dscp, queue)
}
