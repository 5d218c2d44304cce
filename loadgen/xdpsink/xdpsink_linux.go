//go:build linux

package xdpsink

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// ProgramName is the name of the sink's XDP program.
const ProgramName = "ecnsw_sink"

// Action is what the program returned for a frame.
type Action uint32

// The program's actions.
const (
	Drop Action = xdpDrop // a generator's frame, counted
	Pass Action = xdpPass // any other frame, passed to the kernel
)

// Program is the sink's XDP program and maps, loaded for one Config.
type Program struct {
	cfg    Config
	cpus   int
	prog   *ebpf.Program
	m      maps
	config []byte // the config map, mmapped
	ring   *ringbuf.Reader
	rec    ringbuf.Record
	zero   struct {
		flows   []flowValue
		windows [][]byte
		global  []globalValue
	}
}

// globalValue and flowValue are a CPU's element of the global and flows
// maps, in their layouts.
type globalValue struct {
	Packets, Bytes, Foreign, Malformed, Stale, Unknown, Sampled, SamplesLost, First, Last, Rand uint64
}

type flowValue struct {
	Received, Unique, Dup, Reordered, Late, CE, Bytes, Top, DSCP uint64
}

// Load loads the program and creates its maps for cfg; it counts run 0
// until SetRun.
func Load(cfg Config) (_ *Program, err error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("xdpsink: %w", err)
	}
	if err := cfg.setDefaults(cpus); err != nil {
		return nil, fmt.Errorf("xdpsink: %w", err)
	}
	p := &Program{cfg: cfg, cpus: cpus}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for _, s := range []struct {
		m    **ebpf.Map
		spec ebpf.MapSpec
	}{
		{&p.m.global, ebpf.MapSpec{Name: "ecnsw_sink_glob", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: globalSize, MaxEntries: 1}},
		{&p.m.config, ebpf.MapSpec{Name: "ecnsw_sink_conf", Type: ebpf.Array, KeySize: 4, ValueSize: configSize, MaxEntries: 1,
			Flags: unix.BPF_F_MMAPABLE}},
		{&p.m.flows, ebpf.MapSpec{Name: "ecnsw_sink_flow", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: flowSize,
			MaxEntries: uint32(cfg.Flows)}},
		{&p.m.windows, ebpf.MapSpec{Name: "ecnsw_sink_win", Type: ebpf.PerCPUArray, KeySize: 4,
			ValueSize: uint32(cfg.blocks() * blockSize), MaxEntries: uint32(cfg.Flows)}},
		{&p.m.ring, ebpf.MapSpec{Name: "ecnsw_sink_ring", Type: ebpf.RingBuf, MaxEntries: uint32(cfg.RingSize)}},
	} {
		if *s.m, err = ebpf.NewMap(&s.spec); err != nil {
			return nil, fmt.Errorf("xdpsink: create map %s: %w", s.spec.Name, err)
		}
	}
	if p.config, err = unix.Mmap(p.m.config.FD(), 0, configSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("xdpsink: mmap config: %w", err)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: ProgramName, Type: ebpf.XDP, AttachType: ebpf.AttachXDP, License: "Dual BSD/GPL",
		Instructions: instructions(&p.cfg, p.m),
	})
	if err != nil {
		return nil, fmt.Errorf("xdpsink: load XDP program: %w", err)
	}
	if p.ring, err = ringbuf.NewReader(p.m.ring); err != nil {
		return nil, fmt.Errorf("xdpsink: sample ring: %w", err)
	}
	p.zero.flows = make([]flowValue, cpus)
	p.zero.global = make([]globalValue, cpus)
	if err := p.resetGlobal(); err != nil {
		return nil, err
	}
	p.zero.windows = make([][]byte, cpus)
	for i := range p.zero.windows {
		p.zero.windows[i] = make([]byte, cfg.blocks()*blockSize)
	}
	return p, nil
}

// Config returns the configuration with defaults filled in.
func (p *Program) Config() Config { return p.cfg }

// Close detaches nothing (see Attach) and releases the program and its
// maps.
func (p *Program) Close() error {
	var errs []error
	if p.ring != nil {
		errs = append(errs, p.ring.Close())
		p.ring = nil
	}
	if p.config != nil {
		errs = append(errs, unix.Munmap(p.config))
		p.config = nil
	}
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
		p.prog = nil
	}
	for _, m := range []**ebpf.Map{&p.m.global, &p.m.config, &p.m.flows, &p.m.windows, &p.m.ring} {
		if *m != nil {
			errs = append(errs, (*m).Close())
			*m = nil
		}
	}
	return errors.Join(errs...)
}

// Attach attaches the program to the device ifindex through a BPF link
// (so nothing stays attached if the process dies), in driver (native)
// mode or, with generic, in generic (skb) mode. The calling thread must
// be in the device's network namespace; Close the link to detach.
func (p *Program) Attach(ifindex int, generic bool) (link.Link, error) {
	flags := link.XDPDriverMode
	if generic {
		flags = link.XDPGenericMode
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: ifindex, Flags: flags})
	if err != nil {
		return nil, fmt.Errorf("xdpsink: attach to ifindex %d: %w", ifindex, err)
	}
	return l, nil
}

// SetRun makes the program count run's frames; frames of any other run
// are stale from then on. Safe while frames arrive.
func (p *Program) SetRun(run uint16) {
	binary.NativeEndian.PutUint32(p.config, uint32(run))
}

// Reset zeroes every counter and forgets every flow's sequence numbers,
// and discards the samples not yet read. Frames that arrive meanwhile
// may be counted before or after the reset.
func (p *Program) Reset() error {
	for k := range uint32(p.cfg.Flows) {
		if err := p.m.flows.Update(k, p.zero.flows, ebpf.UpdateExist); err != nil {
			return fmt.Errorf("xdpsink: reset flow %d: %w", k, err)
		}
		if err := p.m.windows.Update(k, p.zero.windows, ebpf.UpdateExist); err != nil {
			return fmt.Errorf("xdpsink: reset flow %d's window: %w", k, err)
		}
	}
	if err := p.resetGlobal(); err != nil {
		return err
	}
	for {
		if _, err := p.ReadSamples(time.Time{}, nil); err != nil {
			return err
		}
		if p.ring.AvailableBytes() == 0 {
			return nil
		}
	}
}

// resetGlobal zeroes the global counters and seeds each CPU's sampling
// state.
func (p *Program) resetGlobal() error {
	var seed [8]byte
	for i := range p.zero.global {
		if _, err := rand.Read(seed[:]); err != nil {
			return fmt.Errorf("xdpsink: seed: %w", err)
		}
		p.zero.global[i] = globalValue{Rand: binary.NativeEndian.Uint64(seed[:]) | 1}
	}
	if err := p.m.global.Update(uint32(0), p.zero.global, ebpf.UpdateExist); err != nil {
		return fmt.Errorf("xdpsink: reset counters: %w", err)
	}
	return nil
}

// Global are the program's frame counts, summed over CPUs.
type Global struct {
	Packets     uint64 // every frame the program saw
	Bytes       uint64 // their lengths plus FCS
	Foreign     uint64 // frames passed to the kernel: not a generator's
	Malformed   uint64 // of those, frames whose headers are cut short or invalid
	Stale       uint64 // generator frames of another run, dropped
	Unknown     uint64 // frames of the run of a flow ≥ Config.Flows, dropped
	Sampled     uint64 // latency samples written to the ring
	SamplesLost uint64 // samples the full ring refused (their frames were counted)
	// First is the receive time of the first counted frame
	// (CLOCK_MONOTONIC ns; 0 none), and Last that of the last sampled
	// one (First if none was): reading the clock for every frame would
	// cost more than all the rest of the program.
	First, Last int64
}

// Global reads the global counters; safe while frames arrive.
func (p *Program) Global() (Global, error) {
	vs := make([]globalValue, p.cpus)
	if err := p.m.global.Lookup(uint32(0), vs); err != nil {
		return Global{}, fmt.Errorf("xdpsink: read counters: %w", err)
	}
	var g Global
	for _, v := range vs {
		g.Packets += v.Packets
		g.Bytes += v.Bytes
		g.Foreign += v.Foreign
		g.Malformed += v.Malformed
		g.Stale += v.Stale
		g.Unknown += v.Unknown
		g.Sampled += v.Sampled
		g.SamplesLost += v.SamplesLost
		if f := int64(v.First); f != 0 && (g.First == 0 || f < g.First) {
			g.First = f
		}
		g.Last = max(g.Last, int64(v.Last))
	}
	if g.First != 0 {
		g.Last = max(g.Last, g.First)
	}
	return g, nil
}

// Flow is one flow's counts, merged over CPUs (see the package doc).
type Flow struct {
	ID         int
	Received   uint64 // frames, duplicates included
	Unique     uint64 // distinct sequence numbers received (late frames count)
	Duplicated uint64
	Reordered  uint64 // late frames included
	Late       uint64 // arrived Window or more below the highest
	CE         uint64
	Bytes      uint64 // lengths plus FCS
	Top        int64  // the highest sequence number, extended to 64 bits
	DSCP       uint8  // of the last frame, on the CPU that received most
	CPUs       int    // CPUs the flow's frames arrived on
}

// Lost is the number of sequence numbers from 0 to Top never received.
func (f Flow) Lost() uint64 {
	if uint64(f.Top+1) <= f.Unique {
		return 0
	}
	return uint64(f.Top+1) - f.Unique
}

// Flows reads the counts of every flow that received a frame, by ID;
// safe while frames arrive (each CPU's counters are then of a moment of
// their own).
func (p *Program) Flows() ([]Flow, error) {
	vs := make([]flowValue, p.cpus)
	var out []Flow
	for k := range uint32(p.cfg.Flows) {
		if err := p.m.flows.Lookup(k, vs); err != nil {
			return nil, fmt.Errorf("xdpsink: read flow %d: %w", k, err)
		}
		f := Flow{ID: int(k), Top: -1}
		most := uint64(0)
		for _, v := range vs {
			if v.Received == 0 {
				continue
			}
			f.CPUs++
			f.Received += v.Received
			f.Unique += v.Unique
			f.Duplicated += v.Dup
			f.Reordered += v.Reordered
			f.Late += v.Late
			f.CE += v.CE
			f.Bytes += v.Bytes
			f.Top = max(f.Top, int64(v.Top)-1)
			if v.Received > most {
				most, f.DSCP = v.Received, uint8(v.DSCP)
			}
		}
		if f.CPUs > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}

// Sample is one sampled frame.
type Sample struct {
	Flow   uint16
	Seq    uint32 // its sequence number as on the wire
	TxTime int64  // the generator's stamp, ns
	RxTime int64  // when the program saw it, CLOCK_MONOTONIC ns
}

// ReadSamples calls fn (if not nil) for each sample in the ring, waiting
// until deadline (the zero time: not at all) and then reading what is
// there (the program wakes no reader: a wake-up per sample would cost the
// receiving CPU an interrupt), and returns how many it read. It is for
// one goroutine at a time.
func (p *Program) ReadSamples(deadline time.Time, fn func(Sample)) (int, error) {
	if !deadline.IsZero() {
		time.Sleep(time.Until(deadline))
	}
	p.ring.SetDeadline(time.Unix(0, 1)) // in the past: read what is there
	n := 0
	for {
		err := p.ring.ReadInto(&p.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("xdpsink: read samples: %w", err)
		}
		if len(p.rec.RawSample) < sampleSize {
			continue
		}
		n++
		if fn != nil {
			b := p.rec.RawSample
			fn(Sample{
				Flow:   uint16(binary.NativeEndian.Uint32(b[0:])),
				Seq:    binary.NativeEndian.Uint32(b[4:]),
				TxTime: int64(binary.NativeEndian.Uint64(b[8:])),
				RxTime: int64(binary.NativeEndian.Uint64(b[16:])),
			})
		}
	}
}

// Inject runs the program once on frame with BPF_PROG_RUN, on the
// calling thread's CPU, as if the device had received it: it is counted
// (or passed) as any other. It returns the program's action.
func (p *Program) Inject(frame []byte) (Action, error) {
	ret, err := p.prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return 0, fmt.Errorf("xdpsink: run on a %d-byte frame: %w", len(frame), err)
	}
	return Action(ret), nil
}
