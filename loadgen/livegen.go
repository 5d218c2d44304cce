package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/affinity"
	"github.com/ecnswitch/ecnswitch/loadgen/xdpgen"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Live-frames generator limits.
const (
	// MaxCycle is the most frames of a live generator thread's cycle (the
	// table its XDP program sends round and round); a mix whose pattern is
	// longer holds its shares over MaxCycle frames, not exactly.
	MaxCycle = 1 << 16
	// liveRepeat is the frames of one unpaced BPF_PROG_RUN call: one page
	// pool per call, so calls are long; a stop interrupts them.
	liveRepeat = 1 << 30
	// liveBatch is how many frames a run sends between two flushes into
	// the device: a veth peer's ring holds 256, drained 64 at a time.
	liveBatch = 64
)

// LiveConfig places a live-frames generator.
type LiveConfig struct {
	// Netns is the network namespace of Iface ("" the caller's).
	Netns string
	// Iface is the device the frames leave: the program returns XDP_TX,
	// which sends out of it.
	Iface string
	// Redirect, if set, is a device (in Netns) the program redirects the
	// frames to instead.
	Redirect string
	// CPUs lists the CPUs to send from, one thread pinned to each. Default:
	// one thread, unpinned.
	CPUs []int
}

// LiveGenerator sends a GeneratorConfig's frames as XDP live frames
// (package xdpgen): the same frames, flows, sequence numbers, TX times
// (CLOCK_MONOTONIC, as SystemClock) and mixes as Generator, with the
// same schedule, but built by an XDP program of ecnswitch's own that
// BPF_PROG_RUN runs many times per system call, from one thread per CPU.
//
// Thread t sends the flows at positions ≡ t (mod threads) of each class's
// flow list, so every flow's sequence numbers come from one thread; the
// rate is split evenly among the threads, each keeping its own schedule
// (frame k due when the bits of its frames 0..k−1 have had time at
// rate/threads), as Generator does, and giving up what is owed beyond
// Burst after a stall. The schedule is kept by the XDP program itself in
// one long BPF_PROG_RUN call per thread: it reads the clock on every run
// and sends a frame only once it is due, so a paced thread spins on its
// CPU (a DPDK generator's core does the same); short calls, one per batch,
// would each make a page pool, and the kernel releases pools whose frames
// are still in flight too late to keep up with thousands a second.
type LiveGenerator struct {
	cfg     GeneratorConfig
	live    LiveConfig
	gen     *Generator // templates, classes and choices
	prog    *xdpgen.Program
	runners []*xdpgen.Runner
	cycles  [][]xdpgen.Entry
	clock   timestamp.Clock
	ifindex int
	start   atomic.Int64
	last    atomic.Int64
	final   GeneratorStats // the counters when Close unloaded the program
}

// NewLiveGenerator loads the generator's XDP program for cfg on
// live.Iface. It fails if the kernel cannot run XDP live frames
// (Linux 5.18+, CAP_BPF and CAP_NET_ADMIN) or the device does not take
// redirected frames (LiveUsable says why).
func NewLiveGenerator(cfg GeneratorConfig, live LiveConfig, clock timestamp.Clock) (_ *LiveGenerator, err error) {
	threads := max(len(live.CPUs), 1)
	seen := map[int]bool{}
	for i, c := range live.CPUs {
		if c < 0 || c >= runtime.NumCPU() || seen[c] {
			return nil, fmt.Errorf("loadgen: live generator: cpus[%d]: %d: want distinct CPUs 0 to %d", i, c, runtime.NumCPU()-1)
		}
		seen[c] = true
	}
	if cfg.Flows == 0 {
		cfg.Flows = max(len(cfg.DSCP), 1) * max(len(cfg.ECN), 1) * threads
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1 // the Generator only lends templates and choices
	}
	gen, err := NewGenerator(cfg, nil, clock)
	if err != nil {
		return nil, err
	}
	cfg = gen.cfg
	for _, c := range gen.classes {
		if len(c.Flows) < threads {
			return nil, fmt.Errorf("loadgen: live generator: flows: %d: want at least %d (one per DSCP×ECN class per thread)",
				cfg.Flows, len(gen.classes)*threads)
		}
	}
	g := &LiveGenerator{cfg: cfg, live: live, gen: gen, clock: gen.clock}

	maxLen := 0
	for _, t := range gen.tpl {
		maxLen = max(maxLen, len(t))
	}
	var template []byte
	for _, t := range gen.tpl {
		if len(t) == maxLen {
			template = t
			break
		}
	}
	g.cycles = make([][]xdpgen.Entry, threads)
	for t := range threads {
		ch := choice{sizePat: gen.choice.sizePat, classPat: gen.choice.classPat, flows: make([][]int, len(gen.classes)),
			next: make([]int, len(gen.classes))}
		for ci, c := range gen.classes {
			for i := t; i < len(c.Flows); i += threads {
				ch.flows[ci] = append(ch.flows[ci], c.Flows[i])
			}
		}
		for len(g.cycles[t]) == 0 || (!ch.atStart() && len(g.cycles[t]) < MaxCycle) {
			f, si := ch.pick()
			tpl := gen.tpl[f*len(cfg.Sizes)+si]
			e := xdpgen.Entry{Len: uint16(len(tpl)), Flow: uint16(f)}
			if gen.rate > 0 {
				// units·threads·1e9·256/rate, rounded: ≤ 1/512 ns off per frame.
				num := gen.units[si] * uint64(threads) * 1_000_000_000 << 8
				e.Cost = max((num+gen.rate/2)/gen.rate, 1)
			}
			copy(e.Head[:], tpl)
			g.cycles[t] = append(g.cycles[t], e)
		}
	}

	err = inNetns(live.Netns, func() error {
		ifi, err := net.InterfaceByName(live.Iface)
		if err != nil {
			return err
		}
		g.ifindex = ifi.Index
		redirect := 0
		if live.Redirect != "" {
			r, err := net.InterfaceByName(live.Redirect)
			if err != nil {
				return fmt.Errorf("redirect: %w", err)
			}
			redirect = r.Index
		}
		if ok, err := LiveUsable(live.Netns, live.Iface); !ok {
			return err
		}
		g.prog, err = xdpgen.Load(xdpgen.Config{
			Template: template, MaxLen: maxLen, Cycles: g.cycles, Flows: cfg.Flows,
			SeqOff: headerOff + 6, TimeOff: headerOff + 10, Redirect: redirect,
		})
		return err
	})
	if err != nil {
		if g.prog != nil {
			g.Close()
		}
		return nil, fmt.Errorf("loadgen: live generator on %s: %w", live.Iface, err)
	}
	for t := range threads {
		g.runners = append(g.runners, g.prog.Runner(t, g.ifindex))
	}
	return g, nil
}

// LiveUsable reports whether live frames can leave through ifname in
// the named namespace: the device takes redirected frames (a veth does
// while its peer has an XDP program or GRO on). When not, the error
// says why.
func LiveUsable(ns, ifname string) (bool, error) {
	var ok bool
	err := inNetns(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		if ok, err = afxdp.TakesRedirects(ifi.Index); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s does not take redirected XDP frames (no ndo-xmit in its xdp-features; "+
				"a veth takes them while its peer has an XDP program or GRO on)", ifname)
		}
		return nil
	})
	return ok && err == nil, err
}

// Classes returns the generator's classes and the flows of each.
func (g *LiveGenerator) Classes() []Class { return g.gen.classes }

// Config returns the configuration with defaults filled in.
func (g *LiveGenerator) Config() GeneratorConfig { return g.cfg }

// Threads returns the number of sending threads.
func (g *LiveGenerator) Threads() int { return len(g.runners) }

// Stats returns the counters (the program's, summed over the threads);
// safe from any goroutine. Sent counts the frames the program handed to
// the kernel: a device that cannot keep up drops some of them (veth:
// its xdp_xmit_errors), as it would a NIC's. Sent is exact; a veth's own
// per-queue counters can fall a few frames short of it when threads on
// several CPUs send into one of its queues, as they lose concurrent
// updates (TestLiveSentExactOnSharedQueue).
func (g *LiveGenerator) Stats() GeneratorStats {
	if g.prog == nil {
		return g.final
	}
	var s GeneratorStats
	for t := range g.runners {
		c := g.prog.Counters(t)
		s.Sent += c.Frames
		s.Bytes += c.Bytes + c.Frames*FCS
		s.Late += int64(c.Late)
	}
	s.First, s.Last = g.start.Load(), g.last.Load()
	if s.Last == 0 && s.First != 0 {
		s.Last = g.clock.Now()
	}
	return s
}

// Close unloads the program; Stats keeps its last counters.
func (g *LiveGenerator) Close() error {
	if g.prog == nil {
		return nil
	}
	g.final = g.Stats()
	err := inNetns(g.live.Netns, g.prog.Close)
	g.prog = nil
	return err
}

// Run sends until Duration or Count is reached or ctx is done, from one
// thread per CPU, each pinned to its CPU and in the device's network
// namespace, each in long BPF_PROG_RUN calls (paced, the program keeps the
// schedule and the thread spins on its CPU), and returns the first error.
func (g *LiveGenerator) Run(ctx context.Context) error {
	var ns netns.NsHandle = -1
	if g.live.Netns != "" {
		h, err := netns.GetFromName(g.live.Netns)
		if err != nil {
			return fmt.Errorf("loadgen: live generator: netns %s: %w", g.live.Netns, err)
		}
		defer h.Close()
		ns = h
	}
	threads := len(g.runners)
	start := g.clock.Now()
	end := int64(0)
	if g.cfg.Duration > 0 {
		end = start + int64(g.cfg.Duration)
	}
	counts := make([]uint64, threads)
	for t := range threads {
		counts[t] = g.cfg.Count / uint64(threads)
		if uint64(t) < g.cfg.Count%uint64(threads) {
			counts[t]++
		}
		limit := counts[t]
		if g.cfg.Count > 0 && limit == 0 {
			continue // more threads than frames: this one sends none
		}
		g.prog.Schedule(t, start, end, int64(g.cfg.Burst), limit)
	}
	g.start.Store(start)
	g.last.Store(0)
	var stop atomic.Bool
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := range threads {
		if g.cfg.Count > 0 && counts[t] == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The thread is never unlocked: it leaves the process with its
			// namespace and affinity when the goroutine ends.
			runtime.LockOSThread()
			if ns != -1 {
				if err := netns.Set(ns); err != nil {
					errs[t] = fmt.Errorf("loadgen: live generator: enter netns %s: %w", g.live.Netns, err)
					return
				}
			}
			if len(g.live.CPUs) > 0 {
				if err := affinity.Pin(g.live.CPUs[t]); err != nil {
					errs[t] = fmt.Errorf("loadgen: live generator: pin to CPU %d: %w", g.live.CPUs[t], err)
					return
				}
			}
			for !stop.Load() && (counts[t] == 0 || g.prog.Counters(t).Frames < counts[t]) {
				if err := g.runners[t].Run(liveRepeat, liveBatch); err != nil && !errors.Is(err, unix.EINTR) {
					errs[t] = fmt.Errorf("loadgen: live generator: bpf(BPF_PROG_RUN): %w", err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	finished := func() bool {
		if end != 0 && g.clock.Now() >= end {
			return true
		}
		if g.cfg.Count == 0 {
			return false
		}
		for t := range threads {
			if g.prog.Counters(t).Frames < counts[t] {
				return false
			}
		}
		return true
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick.C:
			if finished() {
				break wait
			}
		}
	}
	stop.Store(true)
	for {
		for _, r := range g.runners {
			_ = r.Interrupt()
		}
		select {
		case <-done:
			g.last.Store(g.clock.Now())
			return errors.Join(errs...)
		case <-time.After(time.Millisecond):
		}
	}
}

// ProbeLive reports whether this kernel loads the live-frames
// generator's program (XDP, CAP_BPF): it loads it for cfg, sending
// nothing, and unloads it.
func ProbeLive(cfg GeneratorConfig, clock timestamp.Clock) error {
	cfg.Batch = 1
	gen, err := NewGenerator(cfg, nil, clock)
	if err != nil {
		return err
	}
	e := xdpgen.Entry{Len: uint16(len(gen.tpl[0]))}
	copy(e.Head[:], gen.tpl[0])
	p, err := xdpgen.Load(xdpgen.Config{Template: gen.tpl[0], MaxLen: len(gen.tpl[0]), Cycles: [][]xdpgen.Entry{{e}},
		Flows: 1, SeqOff: headerOff + 6, TimeOff: headerOff + 10})
	if err != nil {
		return err
	}
	return p.Close()
}
