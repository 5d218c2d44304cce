package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Devices of the TCP benchmark.
const (
	TCPSwitch    = "ecnswitch"     // ecnswitch: learning, 8 DWRR queues, 4 MB buffer, no marking, unshaped
	TCPSwitchRED = "ecnswitch-red" // the same with RED on every queue (30–90 KB), as the peer benchmark runs it
	TCPTestpmd   = "testpmd"       // DPDK testpmd io forwarding over two net_af_xdp ports
	TCPBridge    = "bridge"        // a Linux bridge over the same veth ends
)

// TCPOptions configure RunTCP. The zero value of every field selects its
// default.
type TCPOptions struct {
	// Devices are measured in this order in every run. Default ecnswitch,
	// testpmd (when dpdk-testpmd is installed), bridge. ecnswitch marks
	// nothing (testpmd and the bridge do no AQM either, so goodput
	// compares forwarding capacity); ecnswitch-red adds RED, which holds
	// the queue, and with it TCP's window, small.
	Devices []string
	// Flows is the number of TCP flows from h1 to h2; default 5.
	Flows int
	// Warmup is sent before the measured window, Duration is the window.
	// Defaults 2 s and 10 s.
	Warmup, Duration time.Duration
	// Runs is how many times every device is measured, devices taking
	// turns; default 3.
	Runs int
	// CongestionControl of the hosts' sockets; default cubic, with ECN.
	CongestionControl string

	// WorkerCPUs is where ecnswitch's worker and testpmd's forwarding
	// lcore run, HostCPUs where the hosts' TCP and receive processing do
	// (node.BenchTCP fills both from dataplane.Place); empty places nothing.
	WorkerCPUs, HostCPUs []int

	// NeverSleep makes ecnswitch's worker poll without pause (Spin < 0), as
	// testpmd's lcore does; Coalesce and Transmit set its ports' batching
	// window and transmit path (zero values: the defaults).
	NeverSleep bool
	Spin       int // idle passes before the worker sleeps; 0: the default
	Coalesce   time.Duration
	Transmit   afxdp.TxPath

	// Start starts ecnswitch on the switch ends (required).
	Start StartSwitch
	// Testpmd is the dpdk-testpmd binary; default found in PATH.
	Testpmd string
	// Subnet of the testbed; default testbed.DefaultSubnet.
	Subnet netip.Prefix
	// Out receives progress lines; nil prints nothing.
	Out io.Writer
	// Logger receives lifecycle events; default none.
	Logger *zap.Logger
}

// TCPResult is one device's goodput in each run, in bit/s.
type TCPResult struct {
	Device  string
	Goodput []float64
}

// Median returns the median goodput over the runs.
func (r TCPResult) Median() float64 {
	g := slices.Clone(r.Goodput)
	slices.Sort(g)
	if len(g) == 0 {
		return 0
	}
	if len(g)%2 == 1 {
		return g[len(g)/2]
	}
	return (g[len(g)/2-1] + g[len(g)/2]) / 2
}

// TCPReport is what RunTCP measured.
type TCPReport struct {
	Options TCPOptions
	Results []TCPResult
	Skipped map[string]string // device → why it was not measured
}

func (o *TCPOptions) setDefaults() error {
	o.Flows = cmp.Or(o.Flows, 5)
	o.Warmup = cmp.Or(o.Warmup, 2*time.Second)
	o.Duration = cmp.Or(o.Duration, 10*time.Second)
	o.Runs = cmp.Or(o.Runs, 3)
	o.CongestionControl = cmp.Or(o.CongestionControl, "cubic")
	if o.Testpmd == "" {
		o.Testpmd, _ = exec.LookPath("dpdk-testpmd")
	}
	if len(o.Devices) == 0 {
		o.Devices = []string{TCPSwitch, TCPTestpmd, TCPBridge}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	switch {
	case o.Flows < 1 || o.Flows > 64:
		return fmt.Errorf("bench: tcp: flows %d outside [1, 64]", o.Flows)
	case o.Runs < 1 || o.Runs > 100:
		return fmt.Errorf("bench: tcp: runs %d outside [1, 100]", o.Runs)
	case o.Warmup < 0 || o.Duration < time.Second:
		return fmt.Errorf("bench: tcp: warm-up %v and duration %v: want warm-up ≥ 0 and duration ≥ 1s", o.Warmup, o.Duration)
	case o.Start == nil:
		return errors.New("bench: tcp: Options.Start is nil: run it through node.BenchTCP")
	}
	for _, d := range o.Devices {
		if d != TCPSwitch && d != TCPSwitchRED && d != TCPTestpmd && d != TCPBridge {
			return fmt.Errorf("bench: tcp: device %q is not one of %s, %s, %s, %s", d, TCPSwitch, TCPSwitchRED, TCPTestpmd, TCPBridge)
		}
	}
	return nil
}

// RunTCP measures the goodput of real kernel TCP between two testbed hosts
// through each device: Flows flows of cubic with ECN from h1 to h2, the
// device unshaped, on the same veth pairs, the devices taking turns run
// after run. Issue 8's yardstick: ecnswitch must carry at least what
// testpmd carries.
func RunTCP(ctx context.Context, o TCPOptions) (rep *TCPReport, err error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	rep = &TCPReport{Options: o, Skipped: map[string]string{}}
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	tb, err := testbed.Up(testbed.Options{
		Hosts: 2, Subnet: o.Subnet, HostCPUs: o.HostCPUs, CongestionControl: o.CongestionControl, Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: tcp: %w", err)
	}
	defer func() {
		if derr := tb.Down(); derr != nil {
			err = errors.Join(err, fmt.Errorf("bench: tcp: %w", derr))
		}
	}()
	hosts := tb.Hosts()
	say("testbed %s: h1 → h2, %d %s flows with ECN, %v warm-up, %v measured, %d runs", tb.ID(), o.Flows,
		o.CongestionControl, o.Warmup, o.Duration, o.Runs)
	if len(o.WorkerCPUs) > 0 {
		say("CPUs: ecnswitch's worker and testpmd's forwarding lcore on %s; the hosts' TCP and receive processing on %s",
			dataplane.FormatCPUs(o.WorkerCPUs), dataplane.FormatCPUs(o.HostCPUs))
	}
	for _, d := range o.Devices {
		if d == TCPTestpmd && o.Testpmd == "" {
			rep.Skipped[d] = "dpdk-testpmd not installed (make bench-tcp installs it: apt-get install dpdk-dev librte-net-af-xdp23)"
			continue
		}
		rep.Results = append(rep.Results, TCPResult{Device: d})
	}
	for run := 1; run <= o.Runs; run++ {
		for i := range rep.Results {
			r := &rep.Results[i]
			g, err := tcpTrial(ctx, o, hosts, r.Device)
			if err != nil {
				return rep, fmt.Errorf("bench: tcp: %s, run %d: %w", r.Device, run, err)
			}
			r.Goodput = append(r.Goodput, g)
			say("run %d  %-9s %6.3f Gbit/s", run, r.Device, g/1e9)
		}
	}
	return rep, nil
}

// tcpTrial brings the device up, runs the flows and returns their
// goodput over the measured window.
func tcpTrial(ctx context.Context, o TCPOptions, hosts []testbed.Host, device string) (float64, error) {
	ifaces := []string{hosts[0].SwitchIf, hosts[1].SwitchIf}
	var stop func() error
	switch device {
	case TCPSwitch, TCPSwitchRED:
		cfg := tcpSwitchConfig(ifaces, o.WorkerCPUs, device == TCPSwitchRED)
		cfg.Spin = o.Spin
		if o.NeverSleep {
			cfg.Spin = -1
		}
		for i := range cfg.Ports {
			cfg.Ports[i].Coalesce = o.Coalesce
		}
		po := PortOptions(o.Logger)
		po.Transmit = o.Transmit
		sw, err := o.Start(cfg, ifaces, po, timestamp.NewMonotonic())
		if err != nil {
			return 0, err
		}
		stop = func() error {
			fmt.Fprintf(o.Out, "          ecnswitch: %s\n", switchSummary(sw))
			return sw.Stop()
		}
	case TCPTestpmd:
		var err error
		if stop, err = startTestpmd(o, ifaces); err != nil {
			return 0, err
		}
	case TCPBridge:
		del, _, err := upBridge("ecnswbr"+strconv.Itoa(os.Getpid()%100000), ifaces)
		if err != nil {
			return 0, err
		}
		stop = del
	}
	g, err := tcpFlows(ctx, o, hosts)
	return g, errors.Join(err, stop())
}

// tcpSwitchConfig is ecnswitch unshaped: MAC learning, 8 DWRR queues over
// a 4 MB buffer, and with red RED on every queue (30–90 KB), as the peer
// benchmark runs it.
func tcpSwitchConfig(ifaces []string, cpus []int, red bool) dataplane.Config {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: 4 << 20}}, Workers: 1, CPUs: cpus}
	for _, n := range ifaces {
		qs := make([]buffer.QueueConfig, 8)
		for q := range qs {
			qs[q] = buffer.QueueConfig{Alpha: 1}
		}
		pc := dataplane.PortConfig{
			Name:      n,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 8},
			Queues:    qs,
			Worker:    -1,
		}
		if red {
			pc.Enqueue = []dataplane.MarkerSpec{{Name: marking.SchemeRED, New: func(nq int) (marking.Marker, error) {
				return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(30_000),
					KMax: marking.Bytes(90_000), PMax: 0.1}, marking.Enqueue, nq)
			}}}
		}
		cfg.Ports = append(cfg.Ports, pc)
	}
	return cfg
}

// startTestpmd runs dpdk-testpmd as ../shared/bench-peers/bench.sh does:
// io forwarding between two net_af_xdp ports, its forwarding lcore on the
// worker CPU, its main lcore (which only sleeps) on another.
func startTestpmd(o TCPOptions, ifaces []string) (stop func() error, err error) {
	fwd, main := 1, 0
	if len(o.WorkerCPUs) > 0 && len(o.HostCPUs) > 0 {
		fwd, main = o.WorkerCPUs[0], o.HostCPUs[0]
	}
	prefix := fmt.Sprintf("ecnsw-tcp-%d", os.Getpid())
	args := []string{"-l", fmt.Sprintf("%d,%d", main, fwd), "--main-lcore", strconv.Itoa(main),
		"--no-pci", "--no-huge", "-m", "512", "--no-shconf", "--no-telemetry", "--file-prefix", prefix}
	for i, ifc := range ifaces {
		args = append(args, "--vdev", fmt.Sprintf("net_af_xdp%d,iface=%s,start_queue=0,queue_count=1", i, ifc))
	}
	args = append(args, "--", "--forward-mode=io", "--nb-cores=1", "--total-num-mbufs=16384", "--stats-period", "10")
	cmd := exec.Command(o.Testpmd, args...)
	log, err := os.CreateTemp("", "ecnswitch-testpmd-*.log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		os.Remove(log.Name())
		return nil, fmt.Errorf("start %s: %w", o.Testpmd, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() error {
		cmd.Process.Signal(syscall.SIGINT)
		var err error
		select {
		case err = <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			err = <-exited
		}
		os.RemoveAll("/var/run/dpdk/" + prefix)
		log.Close()
		os.Remove(log.Name())
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			err = nil // it stops on our signal
		}
		return err
	}
	// testpmd is ready when it prints its forwarding configuration.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(log.Name())
			os.Remove(log.Name())
			return nil, fmt.Errorf("%s exited (%v): %s", o.Testpmd, err, lastLines(string(b), 5))
		default:
		}
		if b, _ := os.ReadFile(log.Name()); strings.Contains(string(b), "io packet forwarding") {
			return stop, nil
		}
	}
	b, _ := os.ReadFile(log.Name())
	return nil, errors.Join(fmt.Errorf("%s did not start forwarding in 20 s: %s", o.Testpmd, lastLines(string(b), 5)), stop())
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], " | ")
}

// tcpFlows runs o.Flows flows from hosts[0] to hosts[1] for the warm-up
// and the window, and returns the goodput over the window in bit/s.
func tcpFlows(ctx context.Context, o TCPOptions, hosts []testbed.Host) (float64, error) {
	ln, err := hosts[1].ListenTCP(0)
	if err != nil {
		return 0, err
	}
	rcv := bulk.Serve(ln)
	defer rcv.Close()
	dst := netip.AddrPortFrom(hosts[1].IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))
	// The device may need a moment: ARP crosses it like everything else.
	dial := func(ctx context.Context) (net.Conn, error) {
		var c net.Conn
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			c, err = hosts[0].DialTCP(dctx, dst, 0)
			cancel()
			if err == nil {
				return c, setCC(c, o.CongestionControl)
			}
		}
		return nil, err
	}
	s := bulk.Sender{Dial: dial, Flows: o.Flows, Duration: o.Warmup + o.Duration + time.Second}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := s.Run(sctx); done <- err }()
	select {
	case <-time.After(o.Warmup):
	case err := <-done:
		return 0, fmt.Errorf("flows ended in the warm-up: %v", err)
	}
	t0, b0 := time.Now(), rcv.Bytes()
	select {
	case <-time.After(o.Duration):
	case err := <-done:
		return 0, fmt.Errorf("flows ended early: %v", err)
	}
	t1, b1 := time.Now(), rcv.Bytes()
	cancel()
	<-done
	return float64(b1-b0) * 8 / t1.Sub(t0).Seconds(), nil
}

// setCC sets a TCP connection's congestion control (root may choose any).
func setCC(c net.Conn, cc string) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, cc)
	})
	return errors.Join(err, serr)
}

// Markdown returns the report as a table: each device's goodput per run
// and median, and its ratio to testpmd's median.
func (r *TCPReport) Markdown(command string) string {
	var b strings.Builder
	o := r.Options
	fmt.Fprintf(&b, "Real kernel TCP between two testbed hosts: %d %s flows with ECN, h1 → h2, each device unshaped; %v warm-up, %v measured, %d runs, devices taking turns. ecnswitch marks nothing (nor do testpmd and the bridge); ecnswitch-red runs RED on every queue.\n\n",
		o.Flows, o.CongestionControl, o.Warmup, o.Duration, o.Runs)
	if command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n\n", command)
	}
	var base float64
	for _, res := range r.Results {
		if res.Device == TCPTestpmd {
			base = res.Median()
		}
	}
	b.WriteString("| device | goodput per run (Gbit/s) | median | ÷ testpmd |\n|---|---|---:|---:|\n")
	for _, res := range r.Results {
		runs := make([]string, len(res.Goodput))
		for i, g := range res.Goodput {
			runs[i] = fmt.Sprintf("%.3f", g/1e9)
		}
		ratio := "–"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f", res.Median()/base)
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %s |\n", res.Device, strings.Join(runs, " "), res.Median()/1e9, ratio)
	}
	for d, why := range r.Skipped {
		fmt.Fprintf(&b, "\n%s not measured: %s\n", d, why)
	}
	return b.String()
}

// switchSummary says where ecnswitch's worker spent its time and what it
// and the kernel dropped.
func switchSummary(sw Switch) string {
	st := sw.Stats()
	var b strings.Builder
	for _, w := range st.Workers {
		if total := float64(w.Busy + w.Spin + w.Sleep); total > 0 {
			fmt.Fprintf(&b, "worker busy %.0f%%, spinning %.0f%%, asleep %.0f%%; ", 100*float64(w.Busy)/total,
				100*float64(w.Spin)/total, 100*float64(w.Sleep)/total)
		}
	}
	drops := map[string]uint64{}
	var ringFull, fillEmpty uint64
	for _, p := range st.Ports {
		for k, v := range p.Drops {
			drops[k] += v
		}
		if p.Device != nil {
			ringFull += p.Device.RxRingFull
			fillEmpty += p.Device.RxFillEmpty
		}
	}
	fmt.Fprintf(&b, "drops %v, kernel drops %d (RX ring full %d; fill ring found empty %d times)", drops, sw.KernelDrops(), ringFull, fillEmpty)
	return b.String()
}
