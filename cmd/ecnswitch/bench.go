package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// benchCommand is `ecnswitch bench`: the load generator and sink, and the
// benchmarks of ecnswitch against its peers.
func benchCommand() *command {
	return &command{
		name: "bench", synopsis: "gen | sink | switch | tcp | cacheline [flags]",
		summary: "AF_XDP traffic generator and sink, and benchmarks against DPDK testpmd, OVS and a Linux bridge (root)",
		help: "gen and sink are a traffic generator (XDP live frames, or AF_XDP) and a sink\n" +
			"(counting in XDP, or AF_XDP; root): UDP frames with a flow id, sequence number and TX\n" +
			"timestamp, counted per flow at the sink (lost, reordered, duplicated, CE) with one-way\n" +
			"latency. Run both on one machine (in testbed hosts with --netns): they share\n" +
			"CLOCK_MONOTONIC. switch runs the RFC 2544 benchmark of ecnswitch against DPDK testpmd,\n" +
			"OVS and a Linux bridge on a testbed of its own, or of any device wired between two NICs of\n" +
			"this machine (--gen-iface, --sink-iface; docs/load-testing.md). tcp measures real kernel TCP through\n" +
			"ecnswitch, DPDK testpmd and a Linux bridge. cacheline times a cache line's move\n" +
			"between two CPUs: on a VM it changes with where the host puts the vCPUs, and with it\n" +
			"the rates of a benchmark.",
		subs: []*command{
			{name: "gen", synopsis: "--iface IF [flags]", summary: "send UDP test frames at a target rate (root)",
				help: "Send UDP frames at a target rate until --duration or --count (or SIGINT): as XDP live frames\n" +
					"(BPF_PROG_RUN, from an XDP program of ecnswitch's own, one thread per --cpus), or over AF_XDP.\n" +
					"--mode auto uses live frames where the device takes them and says which mode it uses.\n" +
					"Every frame carries its flow id, sequence number and TX time (CLOCK_MONOTONIC) for `ecnswitch bench sink`.\n" +
					"Sizes and bit rates count the Ethernet frame with its FCS (RFC 2544); --l1 adds preamble and gap.\n" +
					"Into a device under test: --gen-iface A --sink-iface B sends on A to B's MAC, after a learning frame\n" +
					"from B, and refuses interfaces that are down or look like the host's management interface.\nNeeds root.", setup: benchGenSetup},
			{name: "sink", synopsis: "--iface IF [flags]", summary: "count test frames per flow: loss, reordering, CE, one-way latency (root)",
				help: "Count `ecnswitch bench gen` frames per flow: received, lost, reordered, duplicated, CE-marked,\n" +
					"and one-way latency (an HDR histogram). Start it before the generator.\n" +
					"--mode xdp counts in an XDP program attached to the interface (per CPU, frames dropped after counting,\n" +
					"other frames passed to the kernel, a --sample fraction's latency to user space): it keeps up with the device.\n" +
					"--mode afxdp receives every frame over an AF_XDP socket. --mode auto uses XDP where the program attaches.\n" +
					"Prints a progress line every second and a report at the end (SIGINT, or --duration).\n" +
					"Behind a device under test: --sink-iface B [--gen-iface A] counts on B, with the same checks as bench gen.\n" +
					"The report names the clocks of the TX and RX stamps, and drops the latencies when they are two PHCs\n" +
					"further apart than --max-clock-offset.\nNeeds root.", setup: benchSinkSetup},
			{name: "switch", synopsis: "[--gen-iface IF --sink-iface IF] [flags]", summary: "RFC 2544 forwarding rate and throughput against testpmd, OVS and a bridge, or of a device between two NICs (root)",
				help: "Bring up a testbed (generator host → device → sink host) and, for each frame size and device,\n" +
					"measure the maximum forwarding rate (generator unpaced) and the RFC 2544 throughput (the highest\n" +
					"offered rate with no loss: a sweep of loads, then a bounded binary search). Devices: ecnswitch with\n" +
					"its full pipeline (classifier, 8 DWRR queues, RED), ecnswitch as a bare port-to-port patch, DPDK\n" +
					"testpmd and OVS afxdp (if installed) and a Linux bridge over the same veths. The generator\n" +
					"sends XDP live frames where it can (--generator), and the sink counts in XDP where it can (--sink),\n" +
					"so that the device, not the generator, is the limit; the report says per row which was. Writes DIR/report.md, results.json and\n" +
					"PNG plots. Trials per device and size: 1 + sweep points + at most --iterations, each --trial long.\n" +
					"Generator, switch and sink share the CPUs; on a busy machine run it under nice -n -10.\n" +
					"--gen-iface A --sink-iface B measures instead whatever device is wired between A and B (a hardware\n" +
					"switch, a bridge or OVS on another server): no testbed, no ecnswitch, one report row; the frames go\n" +
					"from A's MAC to B's (--dst-mac for a router), and a learning frame from B before each trial teaches an L2\n" +
					"switch where B is. A and B are refused when down, the same, or looking like the host's management\n" +
					"interface (--force); nothing on them changes but the XDP programs and sockets, removed at exit.\n" +
					"Latency across two PHCs (--tx-clock phc --rx-clock phc) is reported only while they are synchronised.\nNeeds root.", setup: benchSwitchSetup},
			{name: "tcp", synopsis: "[flags]", summary: "real kernel TCP through ecnswitch, testpmd and a bridge (root)",
				help: "Bring up a 2-host testbed and measure the goodput of real kernel TCP from h1 to h2 (cubic with\n" +
					"ECN) through each device, unshaped: ecnswitch (learning, 8 DWRR queues, no marking; ecnswitch-red\n" +
					"adds RED on every queue), DPDK testpmd (io\n" +
					"forwarding over two net_af_xdp ports, when installed) and a Linux bridge, taking turns run after\n" +
					"run. The worker and testpmd's forwarding lcore get one CPU, the hosts the rest, when there are\n" +
					"two or more. Prints a table of goodput per run and median, and each device's ratio to testpmd.\nNeeds root.", setup: benchTCPSetup},
			{name: "cacheline", synopsis: "[--cpus A,B] [flags]", summary: "time a cache line's move between two CPUs",
				help: "Time a cache line's move from one CPU to another and back (bench.LineMove), and print\n" +
					"the mean one-way time, once per interval. On a VM the time says where the host has put the\n" +
					"vCPUs: on this project's 2-vCPU machines it moved between about 40 and 190 ns, and every\n" +
					"AF_XDP device's rate in the peer kit's layout B moved with it. Run it before and after a\n" +
					"benchmark, on otherwise idle CPUs, to tell whether two runs can be compared.", setup: benchCacheLineSetup},
		},
	}
}

// benchAction runs a bench command until it returns, or SIGINT or
// SIGTERM ends it.
func benchAction(name string, run func(ctx context.Context, e *env) error) action {
	return func(e *env, _ []string) int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := run(ctx, e)
		var ue usageError
		switch {
		case err == nil:
			return exitOK
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "ecnswitch %v\n", ue)
			return exitUsage
		}
		return e.fail("bench "+name, err)
	}
}

// usageError is an error in a command's flags or arguments: the command
// exits with exitUsage.
type usageError struct{ error }

// usageErr reports a bad flag value of the bench command fs is for.
func usageErr(fs *flag.FlagSet, format string, a ...any) error {
	return usageError{fmt.Errorf("%s: %s", strings.TrimPrefix(fs.Name(), "ecnswitch "), fmt.Sprintf(format, a...))}
}

// portFlags are the flags that open the AF_XDP port of gen and sink.
type portFlags struct {
	iface, netns, attach, level *string
}

func addPortFlags(fs *flag.FlagSet) portFlags {
	return portFlags{
		iface:  fs.String("iface", "", "the interface `IF` to drive (required)"),
		netns:  fs.String("netns", "", "the network namespace `NAME` the interface is in, as ip netns lists it (a testbed host's)"),
		attach: fs.String("attach", "native", "XDP attach mode: native, generic or auto"),
		level:  logLevelFlag(fs, "warn", ""),
	}
}

// open opens the port the flags name; rawStamps asks for hardware RX
// stamps left on the device's PHC (--rx-clock phc).
func (pf portFlags) open(fs *flag.FlagSet, stderr io.Writer, rawStamps bool) (*loadgen.NetnsPort, error) {
	if *pf.iface == "" {
		return nil, usageErr(fs, "--iface is required")
	}
	log, err := newLogger(*pf.level, stderr)
	if err != nil {
		return nil, usageErr(fs, "%v", err)
	}
	opts := afxdp.Options{Logger: log.Named("port")}
	switch *pf.attach {
	case "native":
		opts.Attach = afxdp.AttachNative
	case "generic":
		opts.Attach = afxdp.AttachGeneric
	case "auto":
	default:
		return nil, usageErr(fs, "--attach %q: want native, generic or auto", *pf.attach)
	}
	if rawStamps {
		opts.RxStamp, opts.RxStampRaw = afxdp.RxStampOn, true
	}
	return loadgen.OpenPort(*pf.netns, *pf.iface, opts)
}

// extFlags are the flags that point a bench command at a device under
// test that is not ours, wired between two interfaces of this machine.
// Flags a command does not define are nil.
type extFlags struct {
	gen, sink, netns, txClock, rxClock *string
	force, noLearn                     *bool
	clockLimit                         *time.Duration
}

// addExtFlags defines the flags of cmd: "switch", "gen" or "sink" (gen
// and sink have --netns already, for --iface).
func addExtFlags(fs *flag.FlagSet, cmd string) extFlags {
	genUsage := map[string]string{
		"switch": "measure the device under test wired between `IF` and --sink-iface: the generator sends on IF, the sink counts on --sink-iface; no testbed, no ecnswitch",
		"gen":    "send on `IF`, into a device under test, as --iface does, but refused when down or when it looks like the host's management interface",
		"sink":   "the interface `IF` the generator sends on, into the device under test: checked with --sink-iface (it must be another), and read for --tx-clock phc",
	}[cmd]
	sinkUsage := map[string]string{
		"switch": "the interface `IF` the device under test forwards to, where the sink counts",
		"gen":    "the interface `IF` the device under test forwards to: checked with --gen-iface, and the frames' --dst-mac unless given",
		"sink":   "count on `IF`, where the device under test forwards to, as --iface does, but refused when down or when it looks like the host's management interface",
	}[cmd]
	ef := extFlags{
		gen:   fs.String("gen-iface", "", genUsage),
		sink:  fs.String("sink-iface", "", sinkUsage),
		force: fs.Bool("force", false, "use --gen-iface and --sink-iface even when they look like the host's management interface (a default route, an SSH session)"),
	}
	if cmd != "sink" {
		ef.noLearn = fs.Bool("no-learn", false, "send no learning frame from --sink-iface (by default one, from its MAC, before the frames, so that "+
			"a learning switch forwards them to it instead of flooding them)")
		ef.txClock = fs.String("tx-clock", bench.StampMonotonic, "the clock of the TX stamps: monotonic (CLOCK_MONOTONIC) or phc (--gen-iface's PTP hardware clock, read at send; AF_XDP generator)")
	} else {
		ef.txClock = fs.String("tx-clock", bench.StampMonotonic, "the clock of the generator's TX stamps: monotonic (CLOCK_MONOTONIC of this machine) or phc (--gen-iface's PTP hardware clock)")
	}
	if cmd != "gen" {
		ef.rxClock = fs.String("rx-clock", bench.StampMonotonic, "the clock of the RX stamps: monotonic (CLOCK_MONOTONIC) or phc (--sink-iface's PTP hardware clock: its hardware stamps; AF_XDP sink)")
		ef.clockLimit = durationFlag(fs, "max-clock-offset", loadgen.DefaultClockLimit,
			"the largest offset between the PHCs of --tx-clock and --rx-clock with which one-way latency is still reported")
	}
	if cmd == "switch" {
		ef.netns = fs.String("netns", "", "the network namespace `NAME` --gen-iface and --sink-iface are in, as ip netns lists it")
	}
	return ef
}

// only lists bench switch's flags that make sense with an external device
// only.
func (ef extFlags) only() []string {
	return []string{"force", "no-learn", "tx-clock", "rx-clock", "max-clock-offset", "netns"}
}

// clocks checks --tx-clock, --rx-clock and --max-clock-offset, where
// defined.
func (ef extFlags) clocks(fs *flag.FlagSet) error {
	for _, c := range []*string{ef.txClock, ef.rxClock} {
		if c != nil && *c != bench.StampMonotonic && *c != bench.StampPHC {
			return usageErr(fs, "--tx-clock, --rx-clock %q: want %s or %s", *c, bench.StampMonotonic, bench.StampPHC)
		}
	}
	if ef.clockLimit != nil && *ef.clockLimit < 0 {
		return usageErr(fs, "--max-clock-offset %v: want ≥ 0", *ef.clockLimit)
	}
	return nil
}

// external returns bench switch's External from the flags.
func (ef extFlags) external(fs *flag.FlagSet) (*bench.External, error) {
	if *ef.gen == "" || *ef.sink == "" {
		return nil, usageErr(fs, "--gen-iface and --sink-iface go together: the device under test is wired between them")
	}
	if err := ef.clocks(fs); err != nil {
		return nil, err
	}
	return &bench.External{GenIface: *ef.gen, SinkIface: *ef.sink, Netns: *ef.netns, NoLearn: *ef.noLearn,
		TxClock: *ef.txClock, RxClock: *ef.rxClock, ClockLimit: *ef.clockLimit, Force: *ef.force}, nil
}

// ends resolves bench gen's and bench sink's --gen-iface and --sink-iface:
// the one the command drives (role "gen" or "sink") becomes --iface, and
// both are checked (bench.CheckInterfaces). Without either it returns
// zero Interfaces and checks nothing.
func (ef extFlags) ends(fs *flag.FlagSet, pf portFlags, role string) (gen, sink bench.Interface, err error) {
	if *ef.gen == "" && *ef.sink == "" {
		for _, f := range []string{"force", "no-learn"} {
			if isSet(fs, f) {
				return gen, sink, usageErr(fs, "--%s is for --gen-iface and --sink-iface", f)
			}
		}
		return gen, sink, nil
	}
	own := map[string]*string{"gen": ef.gen, "sink": ef.sink}[role]
	switch {
	case *own == "":
		return gen, sink, usageErr(fs, "--%s-iface is required with --gen-iface or --sink-iface: the interface this command drives", role)
	case *pf.iface != "":
		return gen, sink, usageErr(fs, "--iface and --%s-iface name the same thing: give one", role)
	}
	*pf.iface = *own
	return bench.CheckInterfaces(*pf.netns, *ef.gen, *ef.sink, *ef.force)
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// interfaceMAC returns ifname's MAC address, looked up inside netns.
func interfaceMAC(netns, ifname string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	look := func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		mac = ifi.HardwareAddr
		return nil
	}
	if netns == "" {
		return mac, look()
	}
	return mac, testbed.Host{Netns: netns}.Do(look)
}

func benchGenSetup(fs *flag.FlagSet) action {
	pf := addPortFlags(fs)
	rate := &loadgen.Rate{Bits: 10e6}
	fs.Var(genRateValue{rate}, "rate", "target rate: 100Mbit, 1.5Gbit, 500kpps, 1Mpps, or max")
	size := fs.String("size", "64", "frame sizes with FCS: 64, 64,512,1500 (alternating), 64:7,594:4,1518:1 (weighted), or imix")
	dscp := fs.String("dscp", "0", "DSCP mix by frames: 0, or 0:50,8:50")
	ecn := fs.String("ecn", "ect0", "ECN mix by frames: notect, ect0, ect1, ce, or ect0:90,notect:10")
	flows := fs.Int("flows", 0, "flows (UDP source ports --sport..); default one per DSCP×ECN class")
	duration := durationFlag(fs, "duration", 10*time.Second, "how long to send; 0 with --count 0 sends until SIGINT")
	count := fs.Uint64("count", 0, "frames to send (0: no limit)")
	srcMAC := fs.String("src-mac", "", "source MAC (default: the interface's)")
	dstMAC := fs.String("dst-mac", "ff:ff:ff:ff:ff:ff", "destination MAC: the sink host's, or broadcast (flooded)")
	srcIP := fs.String("src-ip", "198.18.0.1", "source IPv4 address")
	dstIP := fs.String("dst-ip", "198.18.0.2", "destination IPv4 address")
	sport := fs.Uint("sport", loadgen.DefaultSrcPort, "UDP source port of flow 0 (flow i uses sport+i)")
	dport := fs.Uint("dport", loadgen.DefaultDstPort, "UDP destination port")
	l1 := fs.Bool("l1", false, "count preamble and inter-frame gap (20 bytes per frame) in bit rates")
	burst := durationFlag(fs, "burst", loadgen.DefaultBurst, "most schedule to catch up at once after a stall")
	run := fs.Uint("run", 0, "run id written into every frame; the sink counts only its own (--run)")
	jsonOut := fs.String("json", "", "write the generator's counters, with the build and the machine, as JSON to `FILE`")
	mode := fs.String("mode", "auto", "auto, xdp (live frames) or afxdp (a socket)")
	cpus := fs.String("cpus", "", "live frames: CPUs to send from, one pinned thread each (0,1); default one thread, unpinned")
	redirect := fs.String("redirect", "", "live frames: redirect them to this interface instead of sending out of --iface")
	ef := addExtFlags(fs, "gen")
	return benchAction("gen", func(ctx context.Context, e *env) error {
		stdout, stderr := e.stdout, e.stderr
		if *mode != "auto" && *mode != "xdp" && *mode != "afxdp" {
			return usageErr(fs, "--mode %q: want auto, xdp or afxdp", *mode)
		}
		if err := ef.clocks(fs); err != nil {
			return err
		}
		onPHC := *ef.txClock == bench.StampPHC
		if onPHC && *mode == "xdp" {
			return usageErr(fs, "--tx-clock phc needs the AF_XDP generator: live frames are stamped in XDP, on CLOCK_MONOTONIC")
		}
		_, sinkIf, err := ef.ends(fs, pf, "gen")
		if err != nil {
			return err
		}
		cpuList, err := parseCPUs(*cpus)
		if err != nil {
			return usageErr(fs, "--cpus: %v", err)
		}
		if sinkIf.Name != "" && !isSet(fs, "dst-mac") {
			*dstMAC = sinkIf.MAC.String()
		}

		cfg := loadgen.GeneratorConfig{Flows: *flows, Duration: *duration, Count: *count, Burst: *burst, Run: uint16(*run)}
		cfg.Rate = *rate
		if cfg.Sizes, err = loadgen.ParseSizes(*size); err != nil {
			return usageErr(fs, "--size: %v", err)
		}
		if cfg.DSCP, err = loadgen.ParseDSCP(*dscp); err != nil {
			return usageErr(fs, "--dscp: %v", err)
		}
		if cfg.ECN, err = loadgen.ParseECN(*ecn); err != nil {
			return usageErr(fs, "--ecn: %v", err)
		}
		if *sport == 0 || *sport > 65535 || *dport == 0 || *dport > 65535 {
			return usageErr(fs, "--sport %d, --dport %d: want 1 to 65535", *sport, *dport)
		}
		if *run > 65535 {
			return usageErr(fs, "--run %d: want 0 to 65535", *run)
		}
		cfg.SrcPort, cfg.DstPort = uint16(*sport), uint16(*dport)
		if *l1 {
			cfg.Overhead = loadgen.L1Overhead
		}
		if cfg.DstMAC, err = net.ParseMAC(*dstMAC); err != nil {
			return usageErr(fs, "--dst-mac: %v", err)
		}
		if *srcMAC != "" {
			if cfg.SrcMAC, err = net.ParseMAC(*srcMAC); err != nil {
				return usageErr(fs, "--src-mac: %v", err)
			}
		}
		if cfg.SrcIP, err = netip.ParseAddr(*srcIP); err != nil {
			return usageErr(fs, "--src-ip: %v", err)
		}
		if cfg.DstIP, err = netip.ParseAddr(*dstIP); err != nil {
			return usageErr(fs, "--dst-ip: %v", err)
		}
		if *duration == 0 && *count == 0 {
			cfg.Duration = 0
		}
		if cfg.SrcMAC == nil && *pf.iface != "" {
			if cfg.SrcMAC, err = interfaceMAC(*pf.netns, *pf.iface); err != nil {
				return fmt.Errorf("bench gen: MAC of %s: %w", *pf.iface, err)
			}
		}

		if *pf.iface == "" {
			return usageErr(fs, "--iface is required")
		}
		clock, err := newSystemClock()
		if err != nil {
			return err
		}
		if onPHC {
			c, closePHC, err := phcClock(*pf.netns, *pf.iface)
			if err != nil {
				return fmt.Errorf("--tx-clock phc: %w", err)
			}
			defer closePHC()
			clock = c
		}
		if sinkIf.Name != "" && !*ef.noLearn && bytes.Equal(cfg.DstMAC, sinkIf.MAC) {
			if err := bench.SendLearn(*pf.netns, sinkIf.Name, cfg.SrcMAC); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "sent a learning frame from %s (%v), for a learning switch to forward to it\n", sinkIf.Name, sinkIf.MAC)
		}
		var g sender
		how := ""
		if onPHC {
			how = "AF_XDP (--tx-clock phc: live frames are stamped in XDP, on CLOCK_MONOTONIC)"
		}
		if *mode != "afxdp" && !onPHC {
			lg, err := loadgen.NewLiveGenerator(cfg, loadgen.LiveConfig{Netns: *pf.netns, Iface: *pf.iface, Redirect: *redirect, CPUs: cpuList}, nil)
			switch {
			case err == nil:
				defer lg.Close()
				g, how = lg, fmt.Sprintf("XDP live frames, %d thread(s)", lg.Threads())
			case *mode == "xdp":
				return err
			default:
				how = fmt.Sprintf("AF_XDP (live frames unusable: %v)", err)
			}
		}
		if g == nil {
			if len(cpuList) > 1 || *redirect != "" {
				return usageErr(fs, "--cpus with more than one CPU and --redirect need live frames (--mode xdp)")
			}
			port, err := pf.open(fs, stderr, false)
			if err != nil {
				return err
			}
			defer port.Close()
			ag, err := loadgen.NewGenerator(cfg, port, clock)
			if err != nil {
				return usageErr(fs, "%v", err)
			}
			g = ag
			if how == "" {
				how = "AF_XDP"
			}
		}
		c := g.Config()
		fmt.Fprintf(stderr, "sending %s of %s frames, %d flows, %s, on %s: %s; TX stamps on %s\n",
			c.Rate, *size, c.Flows, classesString(g.Classes()), *pf.iface, how, clock.Name())

		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		start, last := time.Now(), g.Stats()
		for {
			select {
			case err := <-done:
				st := g.Stats()
				secs := st.Elapsed().Seconds()
				fmt.Fprintf(stdout, "sent %d frames (%d bytes) in %.3f s: %s\n", st.Sent, st.Bytes, secs, rates(st.Sent, st.Bytes, c.Overhead, secs))
				if st.Late > 0 {
					fmt.Fprintf(stdout, "fell behind the schedule by %v in all (stalls beyond --burst): the rate was not kept\n", time.Duration(st.Late))
				}
				if *jsonOut != "" {
					if werr := writeJSON(*jsonOut, genJSON{buildinfo.Read(), st}); werr != nil {
						err = errors.Join(err, werr)
					}
				}
				return err
			case <-tick.C:
				st := g.Stats()
				fmt.Fprintf(stderr, "%6.1fs  tx %s\n", time.Since(start).Seconds(), rates(st.Sent-last.Sent, st.Bytes-last.Bytes, c.Overhead, 1))
				last = st
			}
		}
	})
}

// stampClock is a clock stamps are read on, that loadgen.CheckClocks can
// compare with another.
type stampClock interface {
	Now() int64
	loadgen.StampClock
}

// newSystemClock returns a loadgen.SystemClock as a stampClock.
func newSystemClock() (stampClock, error) {
	c, err := loadgen.NewSystemClock()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// phcClock opens the PTP hardware clock of ifname, in netns, as a stamp
// clock; closePHC closes it.
func phcClock(netns, ifname string) (c stampClock, closePHC func() error, err error) {
	phc, err := bench.InterfacePHC(netns, ifname)
	if err != nil {
		return nil, nil, err
	}
	return loadgen.NewPHCClock(phc), phc.Close, nil
}

// sender is a traffic generator: loadgen.Generator (AF_XDP) or
// loadgen.LiveGenerator (XDP live frames).
type sender interface {
	Run(context.Context) error
	Stats() loadgen.GeneratorStats
	Config() loadgen.GeneratorConfig
	Classes() []loadgen.Class
}

// parseCPUs parses a list of CPUs: "", or "0,1".
func parseCPUs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, f := range strings.Split(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return nil, fmt.Errorf("%q: want CPU numbers separated by commas, such as 0,1", s)
		}
		cpus = append(cpus, c)
	}
	return cpus, nil
}

// classesString describes a generator's classes: "DSCP 0 ECT(0) 50% (8 flows), ...".
func classesString(cs []loadgen.Class) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("DSCP %d %v %.3g%% (%d flows)", c.DSCP, c.ECN, 100*c.Share, len(c.Flows)))
	}
	return strings.Join(parts, ", ")
}

// rates formats frames and bytes over secs as pps and bit/s.
func rates(frames, bytes uint64, overhead int, secs float64) string {
	if secs <= 0 {
		return "-"
	}
	pps := float64(frames) / secs
	bps := float64(bytes+frames*uint64(overhead)) * 8 / secs
	return fmt.Sprintf("%s pps, %s bit/s", si(pps), si(bps))
}

func si(v float64) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= p.f {
			return strconv.FormatFloat(v/p.f, 'f', 3, 64) + " " + p.s
		}
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " "
}

// genJSON and sinkJSON are what bench gen --json and bench sink --json
// write: the counters, with the build and the machine that counted.
type (
	genJSON struct {
		Build buildinfo.Info `json:"build"`
		loadgen.GeneratorStats
	}
	sinkJSON struct {
		Build buildinfo.Info `json:"build"`
		loadgen.Report
	}
)

// writeJSON writes v as indented JSON to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func benchSinkSetup(fs *flag.FlagSet) action {
	pf := addPortFlags(fs)
	mode := fs.String("mode", "auto", "auto, xdp (count in XDP) or afxdp (a socket)")
	jsonOut := fs.String("json", "", "also write the report, with the build and the machine, as JSON to `FILE`")
	duration := durationFlag(fs, "duration", 0, "stop after this long (0: at SIGINT)")
	run := fs.Uint("run", 0, "the generator's --run to count; other runs' frames are counted as stale")
	window := fs.Int("window", loadgen.DefaultWindow, "sequence numbers per flow remembered for duplicate detection (a power of two; xdp: at most 65536)")
	flows := fs.Int("flows", 0, "xdp: flow ids counted, 0 to N−1 (default 1024; higher ones are counted as beyond the flow table)")
	sample := fs.Float64("sample", loadgen.DefaultSample, "xdp: fraction of frames whose one-way latency is recorded")
	l1 := fs.Bool("l1", false, "count preamble and inter-frame gap (20 bytes per frame) in bit rates")
	quiet := fs.Bool("quiet", false, "no progress lines")
	ef := addExtFlags(fs, "sink")
	return benchAction("sink", func(ctx context.Context, e *env) error {
		stdout, stderr := e.stdout, e.stderr
		if *run > 65535 {
			return usageErr(fs, "--run %d: want 0 to 65535", *run)
		}
		if *mode != loadgen.SinkAuto && *mode != loadgen.SinkXDP && *mode != loadgen.SinkAFXDP {
			return usageErr(fs, "--mode %q: want auto, xdp or afxdp", *mode)
		}
		if err := ef.clocks(fs); err != nil {
			return err
		}
		rxPHC := *ef.rxClock == bench.StampPHC
		if rxPHC && *mode == loadgen.SinkXDP {
			return usageErr(fs, "--rx-clock phc needs the AF_XDP sink: the XDP sink stamps on CLOCK_MONOTONIC")
		}
		if *ef.txClock == bench.StampPHC && *ef.gen == "" {
			return usageErr(fs, "--tx-clock phc needs --gen-iface: the generator's PHC, on this machine, to measure against --sink-iface's")
		}
		genIf, _, err := ef.ends(fs, pf, "sink")
		if err != nil {
			return err
		}
		if *pf.iface == "" {
			return usageErr(fs, "--iface is required")
		}
		txClock, err := newSystemClock()
		if err != nil {
			return err
		}
		rxClock := txClock
		if *ef.txClock == bench.StampPHC {
			c, closePHC, err := phcClock(*pf.netns, genIf.Name)
			if err != nil {
				return fmt.Errorf("--tx-clock phc: %w", err)
			}
			defer closePHC()
			txClock = c
		}
		if rxPHC {
			c, closePHC, err := phcClock(*pf.netns, *pf.iface)
			if err != nil {
				return fmt.Errorf("--rx-clock phc: %w", err)
			}
			defer closePHC()
			rxClock = c
		}
		check := func() loadgen.ClockCheck { return loadgen.CheckClocks(txClock, rxClock, *ef.clockLimit) }
		cfg := loadgen.SinkConfig{Run: uint16(*run), Window: *window, Flows: *flows, Sample: *sample}
		if *l1 {
			cfg.Overhead = loadgen.L1Overhead
		}
		if !*quiet {
			cfg.Progress = func(p loadgen.Progress) { fmt.Fprintln(stderr, p) }
		}
		var (
			runSink func(context.Context) error
			report  func() (loadgen.Report, error)
			how     string
		)
		if *mode != loadgen.SinkAFXDP && !rxPHC {
			s, err := openXDPSink(cfg, pf)
			switch {
			case err == nil:
				defer s.Close()
				runSink, report, how = s.Run, s.Report, "counting in XDP"
			case *mode == loadgen.SinkXDP:
				return err
			default:
				how = fmt.Sprintf("AF_XDP (XDP sink unusable: %v)", err)
			}
		}
		if runSink == nil {
			port, err := pf.open(fs, stderr, rxPHC)
			if err != nil {
				return err
			}
			defer port.Close()
			s, err := loadgen.NewSink(cfg, port, rxClock)
			if err != nil {
				return usageErr(fs, "%v", err)
			}
			runSink, report = s.Run, func() (loadgen.Report, error) { return s.Report(), nil }
			if how == "" {
				how = "AF_XDP"
			}
		}
		if *duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *duration)
			defer cancel()
		}
		fmt.Fprintf(stderr, "receiving on %s: %s; stamps: %s; SIGINT ends and reports\n", *pf.iface, how, check())
		err = runSink(ctx)
		rep, rerr := report()
		if rerr != nil {
			return errors.Join(err, rerr)
		}
		rep.Latency = rep.Latency.Checked(check())
		if werr := rep.WriteText(stdout); werr != nil {
			err = errors.Join(err, werr)
		}
		if *jsonOut != "" {
			err = errors.Join(err, writeJSON(*jsonOut, sinkJSON{buildinfo.Read(), rep}))
		}
		return err
	})
}

// openXDPSink attaches the XDP sink to the interface the flags name, in
// the flags' attach mode (auto: native, else generic).
func openXDPSink(cfg loadgen.SinkConfig, pf portFlags) (*loadgen.XDPSink, error) {
	switch *pf.attach {
	case "native", "auto":
		s, err := loadgen.NewXDPSink(cfg, *pf.netns, *pf.iface, false, nil)
		if err == nil || *pf.attach == "native" {
			return s, err
		}
		return loadgen.NewXDPSink(cfg, *pf.netns, *pf.iface, true, nil)
	case "generic":
		return loadgen.NewXDPSink(cfg, *pf.netns, *pf.iface, true, nil)
	}
	return nil, fmt.Errorf("--attach %q: want native, generic or auto", *pf.attach)
}

func benchSwitchSetup(fs *flag.FlagSet) action {
	out := fs.String("out", "bench-report", "write report.md, results.json and the plots into `DIR`")
	sizes := fs.String("sizes", "64,512,1500", "frame sizes with FCS")
	devices := fs.String("devices", "ecnswitch,patch,testpmd,ovs-afxdp,bridge", "devices to compare, in order (testpmd and ovs-afxdp are skipped when not installed)")
	trial := durationFlag(fs, "trial", time.Second, "how long each trial sends (RFC 2544 uses 60s)")
	drain := durationFlag(fs, "drain", 2*time.Second, "longest wait after a trial for frames in flight")
	sweep := fs.String("sweep", "0.1,0.25,0.5,0.75,0.9", "offered loads tried, as fractions of the generator's unpaced rate")
	iterations := fs.Int("iterations", 5, "most binary-search steps for the zero-loss rate (negative: none)")
	resolution := fs.Float64("resolution", 0.01, "stop searching once the bracket is this narrow (fraction of its top)")
	tolerance := fs.Float64("loss-tolerance", 0, "loss ratio a trial may have and still pass (RFC 2544: 0)")
	flows := fs.Int("flows", 16, "flows")
	dscp := fs.String("dscp", "0:50,8:50", "DSCP mix")
	ecn := fs.String("ecn", "ect0", "ECN mix")
	subnet := fs.String("subnet", testbed.DefaultSubnet, "the testbed hosts' IPv4 `PREFIX`, inside 198.18.0.0/15")
	level := logLevelFlag(fs, "warn", "")
	generator := fs.String("generator", bench.GeneratorAuto, "how the generator sends: auto (XDP live frames where the kernel runs them), xdp or afxdp")
	sink := fs.String("sink", loadgen.SinkAuto, "how the sink counts: auto (in XDP where the program attaches), xdp or afxdp")
	ef := addExtFlags(fs, "switch")
	dstMAC := fs.String("dst-mac", "", "external device: the frames' destination MAC (default --sink-iface's; a router's own MAC, for a router)")
	srcIP := fs.String("src-ip", bench.DefaultGenIP.String(), "external device: the frames' source IPv4 address")
	dstIP := fs.String("dst-ip", bench.DefaultSinkIP.String(), "external device: the frames' destination IPv4 address")
	return benchAction("switch", func(ctx context.Context, e *env) error {
		stdout, stderr := e.stdout, e.stderr
		o := bench.SwitchOptions{Trial: *trial, Drain: *drain, Iterations: *iterations, Resolution: *resolution,
			LossTolerance: *tolerance, Flows: *flows, Progress: stderr, Generator: *generator, Sink: *sink}
		if *ef.gen == "" && *ef.sink == "" {
			for _, f := range append(ef.only(), "dst-mac", "src-ip", "dst-ip") {
				if isSet(fs, f) {
					return usageErr(fs, "--%s is for an external device: give --gen-iface and --sink-iface", f)
				}
			}
		} else {
			x, err := ef.external(fs)
			if err != nil {
				return err
			}
			for _, f := range []string{"devices", "subnet"} {
				if isSet(fs, f) {
					return usageErr(fs, "--%s: an external device (--gen-iface, --sink-iface) is measured alone, without a testbed", f)
				}
			}
			if *dstMAC != "" {
				if x.Addresses.DstMAC, err = net.ParseMAC(*dstMAC); err != nil {
					return usageErr(fs, "--dst-mac: %v", err)
				}
			}
			if x.Addresses.SrcIP, err = netip.ParseAddr(*srcIP); err != nil {
				return usageErr(fs, "--src-ip: %v", err)
			}
			if x.Addresses.DstIP, err = netip.ParseAddr(*dstIP); err != nil {
				return usageErr(fs, "--dst-ip: %v", err)
			}
			o.External = x
		}
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return usageErr(fs, "--sizes %q: %q is not an integer", *sizes, s)
			}
			o.Sizes = append(o.Sizes, n)
		}
		o.Sweep = []float64{}
		for _, s := range strings.Split(*sweep, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return usageErr(fs, "--sweep %q: %q is not a number", *sweep, s)
			}
			o.Sweep = append(o.Sweep, f)
		}
		var err error
		if o.External == nil {
			if o.Devices, err = bench.ParseDevices(*devices); err != nil {
				return usageErr(fs, "--devices: %v", err)
			}
		}
		if o.DSCP, err = loadgen.ParseDSCP(*dscp); err != nil {
			return usageErr(fs, "--dscp: %v", err)
		}
		if o.ECN, err = loadgen.ParseECN(*ecn); err != nil {
			return usageErr(fs, "--ecn: %v", err)
		}
		if o.Testbed.Subnet, err = netip.ParsePrefix(*subnet); err != nil {
			return usageErr(fs, "--subnet: %v", err)
		}
		if o.Logger, err = newLogger(*level, stderr); err != nil {
			return usageErr(fs, "%v", err)
		}
		rep, err := node.BenchSwitch(ctx, o)
		if rep != nil && len(rep.Results) > 0 {
			if werr := rep.Write(*out, e.commandLine()); werr != nil {
				err = errors.Join(err, werr)
			} else {
				fmt.Fprintf(stdout, "%s\nreport: %s/report.md\n", tableOnly(rep.Markdown("")), *out)
			}
		}
		return err
	})
}

func benchTCPSetup(fs *flag.FlagSet) action {
	devices := fs.String("devices", "ecnswitch,testpmd,bridge", "devices to measure, in order")
	flows := fs.Int("flows", 5, "TCP flows")
	warmup := durationFlag(fs, "warmup", 2*time.Second, "sent before the measured window")
	duration := durationFlag(fs, "duration", 10*time.Second, "measured window")
	runs := fs.Int("runs", 3, "runs of every device")
	cc := fs.String("cc", "cubic", "the hosts' congestion control")
	neverSleep := fs.Bool("never-sleep", false, "ecnswitch's worker polls without pause, as testpmd's lcore does")
	coalesce := durationFlag(fs, "coalesce", 0, "ecnswitch's batching window (0: the default; negative: none)")
	spin := fs.Int("spin", 0, "ecnswitch's idle passes before its worker sleeps (0: the default)")
	transmit := fs.String("transmit", "auto", "ecnswitch's transmit path: auto, socket or xdp")
	subnet := fs.String("subnet", testbed.DefaultSubnet, "the testbed hosts' IPv4 `PREFIX`, inside 198.18.0.0/15")
	level := logLevelFlag(fs, "warn", "")
	return benchAction("tcp", func(ctx context.Context, e *env) error {
		o := bench.TCPOptions{Devices: strings.Split(*devices, ","), Flows: *flows, Warmup: *warmup, Duration: *duration,
			Runs: *runs, CongestionControl: *cc, Out: e.stderr, NeverSleep: *neverSleep, Coalesce: *coalesce, Spin: *spin}
		switch *transmit {
		case "auto":
		case "socket":
			o.Transmit = afxdp.TxSocket
		case "xdp":
			o.Transmit = afxdp.TxXDP
		default:
			return usageErr(fs, "--transmit %q: want auto, socket or xdp", *transmit)
		}
		var err error
		if o.Subnet, err = netip.ParsePrefix(*subnet); err != nil {
			return usageErr(fs, "--subnet: %v", err)
		}
		if o.Logger, err = newLogger(*level, e.stderr); err != nil {
			return usageErr(fs, "%v", err)
		}
		rep, err := node.BenchTCP(ctx, o)
		if rep != nil && len(rep.Results) > 0 && len(rep.Results[0].Goodput) > 0 {
			fmt.Fprintf(e.stdout, "%s\n%s.\n", rep.Markdown(e.commandLine()), buildinfo.Read())
		}
		return err
	})
}

// benchCacheLine runs `ecnswitch bench cacheline`: count measurements of
// bench.LineMove, one a line.
func benchCacheLineSetup(fs *flag.FlagSet) action {
	cpus := fs.String("cpus", "0,1", "the two CPUs")
	rounds := fs.Int("rounds", 1_000_000, "round trips a measurement")
	count := fs.Int("count", 1, "measurements (0: until interrupted)")
	interval := durationFlag(fs, "interval", time.Second, "time between measurements")
	return benchAction("cacheline", func(ctx context.Context, e *env) error {
		pair, err := parseCPUs(*cpus)
		if err != nil || len(pair) != 2 {
			return usageErr(fs, "--cpus %q: want two CPUs, such as 0,1", *cpus)
		}
		if *rounds <= 0 || *count < 0 || *interval < 0 {
			return usageErr(fs, "--rounds must be positive, --count and --interval not negative")
		}
		for i := 0; *count == 0 || i < *count; i++ {
			if i > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(*interval):
				}
			}
			d, err := bench.LineMove(ctx, pair[0], pair[1], *rounds)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			fmt.Fprintf(e.stdout, "%s  CPU %d <-> %d: %d ns one way\n", time.Now().UTC().Format(time.RFC3339), pair[0], pair[1], d.Nanoseconds())
		}
		return nil
	})
}

// tableOnly returns the results table of a report's markdown.
func tableOnly(md string) string {
	var rows []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "## Plots") {
			break
		}
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		}
	}
	return strings.Join(rows, "\n")
}
