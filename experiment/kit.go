package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// The kit: what every experiment runs through. An experiment declares the
// testbed and switch it needs as demo.Options (classes, K, buffer, rate,
// delays, congestion control, …) and either lets demo.Run measure its
// schemes (Env.demo) or brings its own traffic onto a bed (Env.withBed,
// bed.withSwitch); the kit fills in the env's output, logger and testbed
// names, places the CPUs, and tears everything down, also on an error.
// Env.report starts the report with its header.

// Env is what an experiment runs with. The zero value of every field
// selects its default.
type Env struct {
	// Duration is the measured time of each run, after its warm-up;
	// default the experiment's own (Short: 2 s).
	Duration time.Duration
	// Short makes a quick run: 2 s per run after 500 ms of warm-up.
	Short bool
	// Runs is how many times each configuration runs; default
	// DefaultRuns. Every verdict rests on the runs' median.
	Runs int
	// Command is the command line the report records.
	Command string
	// Now gives the report's date; default time.Now.
	Now func() time.Time

	// Out receives progress lines; nil prints nothing.
	Out io.Writer
	// Logger receives lifecycle events of the testbed, ports and switch.
	Logger *zap.Logger

	// Subnet, ID and StateDir are passed to testbed.Up; zero values select
	// its defaults.
	Subnet   netip.Prefix
	ID       string
	StateDir string
}

// times returns the warm-up and measured time of each run, def being the
// experiment's default measured time.
func (e Env) times(def time.Duration) (warmup, duration time.Duration) {
	warmup, duration = demo.DefaultWarmup, def
	if e.Short {
		warmup, duration = 500*time.Millisecond, 2*time.Second
	}
	if e.Duration > 0 {
		duration = e.Duration
	}
	return warmup, duration
}

// say prints a progress line to the env's output, if it has one.
func (e Env) say(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

// now returns the time the report is dated.
func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// report starts x's report: its name and paper, the title, and the header
// (the command, the date, and the binary, kernel and CPU it ran on).
func (e Env) report(x Experiment, title string) *Report {
	return &Report{Name: x.Name, Title: title, Paper: x.Paper, Command: e.Command, Date: e.now(), Build: buildinfo.Read()}
}

// with returns o with the env's output, logger and testbed names.
func (e Env) with(o demo.Options) demo.Options {
	o.Out, o.Logger = e.Out, e.Logger
	o.Subnet, o.ID, o.StateDir = e.Subnet, e.ID, e.StateDir
	return o
}

// demo runs demo.Run with o: the testbed up, each of o.Schemes measured on
// a switch of its own, the testbed down. The switches run on AF_XDP ports
// with the CPUs placed (node.Demo).
func (e Env) demo(ctx context.Context, o demo.Options) (*demo.Result, error) {
	return node.Demo(ctx, e.with(o))
}

// withBed brings up the testbed o declares, for an experiment that brings
// its own traffic: the demo's hosts, with the CPUs placed as for the demo
// (node.DemoBed). It runs f on it and tears it down whatever f returns,
// and if f panics, joining the teardown's error to f's, and returns the
// options the bed ran with, defaults filled in.
func (e Env) withBed(ctx context.Context, o demo.Options, f func(b *bed) error) (_ demo.Options, err error) {
	if err := ctx.Err(); err != nil {
		return o, err
	}
	b, down, err := e.up(o)
	if err != nil {
		return o, err
	}
	defer func() { err = errors.Join(err, down()) }()
	return b.options(), f(b)
}

// up brings the bed of o up; down tears it down and gives this process's
// threads their CPUs back.
func (e Env) up(o demo.Options) (b *bed, down func() error, err error) {
	db, down, err := node.DemoBed(e.with(o))
	if err != nil {
		return nil, nil, err
	}
	return &bed{db: db}, down, nil
}

// bed is a testbed the kit brought up: demo.Hosts hosts, the last of which
// receives, on whose switch ports one switch runs at a time.
type bed struct {
	db *demo.Bed
}

// options returns the options the bed runs with, defaults filled in.
func (b *bed) options() demo.Options { return b.db.Options() }

// hosts returns the bed's hosts; the last, demo.Bottleneck, receives.
func (b *bed) hosts() []testbed.Host { return b.db.Hosts() }

// ifaces returns the switch's ends of the hosts' links, in the hosts'
// order: a switch config's ports.
func (b *bed) ifaces() []string {
	var s []string
	for _, h := range b.hosts() {
		s = append(s, h.SwitchIf)
	}
	return s
}

// withSwitch starts the demo's switch of scheme on the bed's ports, runs
// f with it, and stops it whatever f returns, joining the stop's error to
// f's. f may stop the switch itself (to read what a tap kept, once the
// workers are quiet); the kit's Stop is then a no-op. Every port carries
// a demo.DropTap, which switchDrops reads.
func (b *bed) withSwitch(scheme string, f func(sw demo.Switch) error) error {
	sw, err := b.db.Start(scheme)
	if err != nil {
		return err
	}
	return b.run(sw, f)
}

// withConfig does as withSwitch with a switch of cfg, whose ports are the
// bed's ifaces in order.
func (b *bed) withConfig(cfg dataplane.Config, f func(sw demo.Switch) error) error {
	sw, err := b.options().Start(cfg, b.ifaces())
	if err != nil {
		return err
	}
	return b.run(sw, f)
}

// run runs f with sw, a drop tap on every port, and stops sw. Before f,
// every host resolves every other's address (primeNeighbours).
func (b *bed) run(sw demo.Switch, f func(sw demo.Switch) error) error {
	t := new(demo.DropTap)
	if tp, ok := sw.(demo.Tapper); ok {
		if err := demo.TapEveryPort(tp, len(b.hosts()), t); err != nil {
			return errors.Join(err, sw.Stop())
		}
	}
	return runSwitch(&tapped{Switch: sw, drops: t}, func(sw demo.Switch) error {
		if err := primeNeighbours(b.hosts()); err != nil {
			return err
		}
		return f(sw)
	})
}

// primeNeighbours has every host send a datagram to every other, until
// each has heard from all, at most primeTimeout: their ARP entries are
// resolved, and the switch has learned their ports, while its queues are
// empty. ARP is Not-ECT, and a marker above its threshold drops it
// (marking.NonECTDrop): a host that first asks for a neighbour once a
// flow has filled the port may lose every request, and its connection
// fails with "no route to host" three seconds later.
func primeNeighbours(hosts []testbed.Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), primeTimeout)
	defer cancel()
	ls := make([]*net.UDPConn, len(hosts))
	heard := make([]atomic.Uint64, len(hosts)) // bit j: host j was heard
	var wg sync.WaitGroup
	defer func() { // closing the listeners ends their readers
		for _, l := range ls {
			if l != nil {
				l.Close()
			}
		}
		wg.Wait()
	}()
	for i, h := range hosts {
		l, err := h.ListenUDP(0)
		if err != nil {
			return err
		}
		ls[i] = l
		wg.Go(func() { // ends when l closes
			b := make([]byte, 8)
			for {
				n, err := l.Read(b)
				if err != nil {
					return
				}
				if n == 1 && int(b[0]) < len(hosts) {
					heard[i].Or(1 << b[0])
				}
			}
		})
	}
	all := uint64(1)<<len(hosts) - 1
	for {
		done := true
		for i, h := range hosts {
			for j, to := range hosts {
				if j == i || heard[j].Load()&(1<<i) != 0 {
					continue
				}
				done = false
				c, err := h.DialUDP(ctx, netip.AddrPortFrom(to.IPv4, udpPort(ls[j])), 0, packet.NotECT)
				if err != nil {
					return fmt.Errorf("prime neighbours: %w", err)
				}
				c.Write([]byte{byte(i)})
				c.Close()
			}
		}
		if done {
			return nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			var missing []string
			for j, h := range hosts {
				if heard[j].Load()|1<<j != all {
					missing = append(missing, h.Name)
				}
			}
			return fmt.Errorf("prime neighbours: %s did not hear from every host in %v", strings.Join(missing, ", "), primeTimeout)
		}
	}
}

// tapped is a switch with the kit's drop tap on every port.
type tapped struct {
	demo.Switch
	drops *demo.DropTap
}

// AddTap adds a tap to the switch's port, if the switch takes taps.
func (s *tapped) AddTap(port int, t dataplane.Tap) error {
	tp, ok := s.Switch.(tapper)
	if !ok {
		return fmt.Errorf("the switch (%T) takes no tap", s.Switch)
	}
	return tp.AddTap(port, t)
}

// switchDrops returns what the kit's drop tap on sw has counted so far:
// nothing for a switch the kit did not start.
func switchDrops(sw demo.Switch) demo.Drops {
	if s, ok := sw.(*stopOnce); ok {
		sw = s.Switch
	}
	if t, ok := sw.(*tapped); ok {
		return t.drops.Drops()
	}
	return demo.Drops{}
}

// runSwitch runs f with sw and stops sw, also if f panics, joining the
// errors.
func runSwitch(sw demo.Switch, f func(demo.Switch) error) (err error) {
	s := &stopOnce{Switch: sw}
	defer func() { err = errors.Join(err, s.Stop()) }()
	return f(s)
}

// stopOnce is a switch whose second Stop does nothing; it is stopped from
// one goroutine.
type stopOnce struct {
	demo.Switch
	stopped bool
}

// Stop stops the switch the first time it is called.
func (s *stopOnce) Stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	return s.Switch.Stop()
}

// tapper is a switch that takes a tap on a port (node.Switch).
type tapper interface {
	AddTap(port int, t dataplane.Tap) error
}

// AddTap adds a tap to the switch's port, if the switch takes taps.
func (s *stopOnce) AddTap(port int, t dataplane.Tap) error {
	tp, ok := s.Switch.(tapper)
	if !ok {
		return fmt.Errorf("the switch (%T) takes no tap", s.Switch)
	}
	return tp.AddTap(port, t)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitGroup waits for wg, at most d.
func waitGroup(ctx context.Context, wg *sync.WaitGroup, d time.Duration) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New("timed out")
	case <-ctx.Done():
		return ctx.Err()
	}
}
