package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/node"
)

// demoCommand is `ecnswitch demo`: the MQ-ECN static-flow demo (package
// demo) on a testbed of its own, as a table. Ctrl-C stops the flows and
// tears the testbed down.
func demoCommand() *command {
	return &command{
		name: "demo", synopsis: "[flags]",
		summary: "run the MQ-ECN static-flow demo on a testbed (root)",
		help: "Build a 5-host testbed and replay the MQ-ECN static-flow experiment (001 §2.2.3,\n" +
			"§5.1.1) on real kernel TCP through ecnswitch: 1 flow in queue 1 against 4 in\n" +
			"queue 2 of a DWRR port shaped to 995 Mbit/s, once per marking scheme (per-port\n" +
			"ECN, per-queue ECN, MQ-ECN), then print a side-by-side table. Everything is\n" +
			"torn down at the end, on error and on Ctrl-C. Needs root.",
		setup: demoSetup,
	}
}

func demoSetup(fs *flag.FlagSet) action {
	duration := durationFlag(fs, "duration", demo.DefaultDuration, "measured time per scheme")
	warmup := durationFlag(fs, "warmup", demo.DefaultWarmup, "time before measuring, per scheme")
	short := fs.Bool("short", false, "quick run: 2s per scheme after 500ms of warm-up")
	schemes := fs.String("schemes", strings.Join(demo.Schemes(), ","), "comma-separated schemes to run, in order")
	rate := rateFlag(fs, "rate", demo.DefaultRate, "egress shaping rate C (995Mbit, 1Gbit)")
	bucket := sizeFlag(fs, "bucket", demo.DefaultBucket, "shaper token bucket")
	coalesce := durationFlag(fs, "coalesce", 0, "how long a packet that left the virtual line may wait for its batch (0: the default)")
	buffer := sizeFlag(fs, "buffer", demo.DefaultBuffer, "buffer per port, shared by its queues")
	k := sizeFlag(fs, "k", demo.DefaultK, "standard marking threshold K")
	delay := durationFlag(fs, "delay", 0, "delay added at every egress port (a flow's RTT grows by twice this)")
	flows := fs.String("flows", "1,4", "flows in queue 1 and queue 2")
	cc := fs.String("cc", demo.DefaultCC, "the hosts' TCP congestion control: dctcp (the papers', as BPF where the kernel lacks it; cubic if it cannot load), or reno or cubic, which react to ECN; bbr does not")
	subnet := fs.String("subnet", "", "the hosts' IPv4 `PREFIX` inside 198.18.0.0/15 (default: the testbed's)")
	level := logLevelFlag(fs, "warn", "")
	return func(e *env, _ []string) int {
		var o demo.Options
		o.Duration, o.Warmup = *duration, *warmup
		o.Rate, o.Bucket, o.Coalesce, o.Buffer, o.K, o.Delay = *rate, *bucket, *coalesce, *buffer, *k, *delay
		o.CongestionControl, o.Out = *cc, e.stdout
		if *short {
			o.Duration, o.Warmup = 2*time.Second, 500*time.Millisecond
		}
		o.Schemes = strings.Split(*schemes, ",")
		if _, err := fmt.Sscanf(*flows, "%d,%d", &o.Flows[0], &o.Flows[1]); err != nil {
			return e.usageError("demo", "--flows %q: want two counts, e.g. 1,4", *flows)
		}
		if *subnet != "" {
			p, err := netip.ParsePrefix(*subnet)
			if err != nil {
				return e.usageError("demo", "--subnet %q: %v", *subnet, err)
			}
			o.Subnet = p
		}
		return runDemo(e, o, *level)
	}
}

// runDemo runs the demo o describes, logging at level.
func runDemo(e *env, o demo.Options, level string) int {
	log, err := newLogger(level, e.stderr) // lifecycle logs above warn would drown the progress lines
	if err != nil {
		return e.usageError("demo", "%v", err)
	}
	defer log.Sync()
	o.Logger = log
	if err := o.Validate(); err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch", err) // "ecnswitch demo: …"
		return exitUsage
	}
	if os.Geteuid() != 0 {
		return e.fail("demo", errors.New("the demo creates network namespaces, veth pairs and XDP programs: run it as root"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	unwatch := context.AfterFunc(ctx, func() {
		fmt.Fprintln(e.stdout, "interrupted: stopping the flows and tearing the testbed down (again to kill at once)")
		stop() // a second signal kills the process
	})
	defer unwatch() // before stop, which would otherwise look like a signal
	res, err := node.Demo(ctx, o)
	if res != nil && len(res.Schemes) > 0 {
		if werr := res.WriteTable(e.stdout); werr != nil && err == nil {
			err = werr
		}
		fmt.Fprintf(e.stdout, "\n%s.\n", buildinfo.Read())
	}
	if errors.Is(err, context.Canceled) {
		return e.fail("demo", errors.New("interrupted; the testbed is torn down"))
	}
	if err != nil {
		return e.fail("demo", err)
	}
	return exitOK
}
