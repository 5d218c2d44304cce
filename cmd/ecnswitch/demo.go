package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/node"
)

// demoCmd runs the MQ-ECN static-flow demo (package demo) and prints its
// table. Ctrl-C stops the flows and tears the testbed down.
func demoCmd(e *env, args []string) int {
	fs, level := e.flagSet("demo", "[flags]",
		"Build a 5-host testbed and replay the MQ-ECN static-flow experiment (001 §2.2.3,\n"+
			"§5.1.1) on real kernel TCP through ecnswitch: 1 flow in queue 1 against 4 in\n"+
			"queue 2 of a DWRR port shaped to 995 Mbit/s, once per marking scheme (per-port\n"+
			"ECN, per-queue ECN, MQ-ECN), then print a side-by-side table. Everything is\n"+
			"torn down at the end, on error and on Ctrl-C. Needs root.")
	duration := fs.Duration("duration", demo.DefaultDuration, "measured time per scheme")
	warmup := fs.Duration("warmup", demo.DefaultWarmup, "time before measuring, per scheme")
	short := fs.Bool("short", false, "quick run: 2s per scheme after 500ms of warm-up")
	schemes := fs.String("schemes", strings.Join(demo.Schemes(), ","), "comma-separated schemes to run, in order")
	rate := fs.Float64("rate", demo.DefaultRate/1e6, "egress shaping rate C, Mbit/s")
	bucket := fs.Int64("bucket", demo.DefaultBucket, "shaper token bucket, bytes")
	coalesce := fs.Duration("coalesce", 0, "how long a packet that left the virtual line may wait for its batch (0: the default)")
	buffer := fs.Int64("buffer", demo.DefaultBuffer, "buffer per port, bytes, shared by its queues")
	k := fs.Int64("k", demo.DefaultK, "standard marking threshold K, bytes")
	delay := fs.Duration("delay", 0, "delay added at every egress port (a flow's RTT grows by twice this)")
	flows := fs.String("flows", "1,4", "flows in queue 1 and queue 2")
	cc := fs.String("cc", demo.DefaultCC, "senders' TCP congestion control (reno and cubic react to ECN; bbr does not)")
	subnet := fs.String("subnet", "", "the hosts' IPv4 subnet inside 198.18.0.0/15 (default: the testbed's)")
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	lvl := *level
	if lvl == "" {
		lvl = "warn" // lifecycle logs would drown the progress lines
	}
	log, err := newLogger(lvl, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch demo:", err)
		return exitUsage
	}
	defer log.Sync()

	o := demo.Options{
		Duration: *duration, Warmup: *warmup,
		Rate: int64(*rate * 1e6), Bucket: *bucket, Coalesce: *coalesce, Buffer: *buffer, K: *k, Delay: *delay,
		CongestionControl: *cc, Out: e.stdout, Logger: log,
	}
	if *short {
		o.Duration, o.Warmup = 2*time.Second, 500*time.Millisecond
	}
	o.Schemes = strings.Split(*schemes, ",")
	if _, err := fmt.Sscanf(*flows, "%d,%d", &o.Flows[0], &o.Flows[1]); err != nil {
		fmt.Fprintf(e.stderr, "ecnswitch demo: --flows %q: want two counts, e.g. 1,4\n", *flows)
		return exitUsage
	}
	if *subnet != "" {
		p, err := netip.ParsePrefix(*subnet)
		if err != nil {
			fmt.Fprintf(e.stderr, "ecnswitch demo: --subnet %q: %v\n", *subnet, err)
			return exitUsage
		}
		o.Subnet = p
	}
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
	}
	if errors.Is(err, context.Canceled) {
		return e.fail("demo", errors.New("interrupted; the testbed is torn down"))
	}
	if err != nil {
		return e.fail("demo", err)
	}
	return exitOK
}
