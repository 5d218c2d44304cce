//go:build linux

package xdpgen

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ProgramName is the name of the generator's XDP program.
const ProgramName = "ecnsw_gen"

// Program is the generator's XDP program and maps, loaded for one
// configuration.
type Program struct {
	cfg      Config
	prog     *ebpf.Program
	state    *ebpf.Map // by thread: stateSize bytes, mmapped
	table    *ebpf.Map // the threads' cycles, one after the other
	seqs     *ebpf.Map // by flow: the next sequence number
	stateMem []byte
	magic    uint64
}

// Load loads the program and fills its maps from cfg.
func Load(cfg Config) (_ *Program, err error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("xdpgen: %w", err)
	}
	p := &Program{cfg: cfg}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	var m [8]byte
	if _, err := rand.Read(m[:]); err != nil {
		return nil, fmt.Errorf("xdpgen: draw the magic: %w", err)
	}
	p.magic = binary.LittleEndian.Uint64(m[:])
	entries := 0
	for _, c := range cfg.Cycles {
		entries += len(c)
	}
	if p.state, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ecnsw_gen_state", Type: ebpf.Array, KeySize: 4,
		ValueSize: stateSize, MaxEntries: uint32(len(cfg.Cycles)), Flags: unix.BPF_F_MMAPABLE}); err != nil {
		return nil, fmt.Errorf("xdpgen: create state map: %w", err)
	}
	if p.table, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ecnsw_gen_table", Type: ebpf.Array, KeySize: 4,
		ValueSize: entrySize, MaxEntries: uint32(entries)}); err != nil {
		return nil, fmt.Errorf("xdpgen: create table map: %w", err)
	}
	if p.seqs, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ecnsw_gen_seqs", Type: ebpf.Array, KeySize: 4,
		ValueSize: 4, MaxEntries: uint32(cfg.Flows)}); err != nil {
		return nil, fmt.Errorf("xdpgen: create sequence map: %w", err)
	}
	keys := make([]uint32, 0, entries)
	vals := make([]byte, 0, entries*entrySize)
	for _, c := range cfg.Cycles {
		for _, e := range c {
			keys = append(keys, uint32(len(keys)))
			vals = append(vals, e.Head[:]...)
			vals = binary.NativeEndian.AppendUint16(vals, e.Len)
			vals = binary.NativeEndian.AppendUint16(vals, e.Flow)
			vals = binary.NativeEndian.AppendUint64(vals, e.Cost)
		}
	}
	if _, err := p.table.BatchUpdate(keys, vals, nil); err != nil {
		for i, k := range keys { // kernels without batch updates
			if err = p.table.Put(k, vals[i*entrySize:(i+1)*entrySize]); err != nil {
				return nil, fmt.Errorf("xdpgen: write table: %w", err)
			}
		}
	}
	if p.stateMem, err = unix.Mmap(p.state.FD(), 0, stateSize*len(cfg.Cycles), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("xdpgen: mmap state: %w", err)
	}
	base := 0
	for t, c := range cfg.Cycles {
		s := p.stateMem[t*stateSize:]
		binary.NativeEndian.PutUint32(s[stateLen:], uint32(len(c)))
		binary.NativeEndian.PutUint32(s[stateBase:], uint32(base))
		binary.NativeEndian.PutUint32(s[stateIfindex:], uint32(cfg.Redirect))
		base += len(c)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: ProgramName, Type: ebpf.XDP, AttachType: ebpf.AttachXDP, License: "Dual BSD/GPL",
		Instructions: instructions(p.magic, int16(cfg.SeqOff), int16(cfg.TimeOff), p.state, p.table, p.seqs),
	})
	if err != nil {
		return nil, fmt.Errorf("xdpgen: load XDP program: %w", err)
	}
	return p, nil
}

// Close releases the program.
func (p *Program) Close() error {
	var errs []error
	if p.stateMem != nil {
		errs = append(errs, unix.Munmap(p.stateMem))
		p.stateMem = nil
	}
	for _, c := range []interface{ Close() error }{p.prog, p.state, p.table, p.seqs} {
		if c != nil && !isNilPtr(c) {
			errs = append(errs, c.Close())
		}
	}
	p.prog, p.state, p.table, p.seqs = nil, nil, nil, nil
	return errors.Join(errs...)
}

func isNilPtr(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case *ebpf.Program:
		return v == nil
	case *ebpf.Map:
		return v == nil
	}
	return false
}

// Counters are what one thread's runs have sent.
type Counters struct {
	Frames uint64 // frames the program returned to be sent
	Bytes  uint64 // their lengths, FCS not included
	Late   uint64 // ns of schedule given up after stalls beyond the burst (paced)
}

// state64 is the u64 at off of thread t's state.
func (p *Program) state64(t, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&p.stateMem[t*stateSize+off]))
}

// Counters reads thread t's counters; safe while the thread runs.
func (p *Program) Counters(t int) Counters {
	return Counters{
		Frames: atomic.LoadUint64(p.state64(t, stateFrames)),
		Bytes:  atomic.LoadUint64(p.state64(t, stateBytes)),
		Late:   atomic.LoadUint64(p.state64(t, stateLate)),
	}
}

// Schedule sets thread t's limits before its runs: with paced entries,
// the first frame is due at start (CLOCK_MONOTONIC ns), none due at or
// after end is sent (0: no end), and after a stall at most burst ns of the
// schedule is caught up at once; paced or not, the thread sends at most
// limit frames in all (0: no limit). Runs then drop, not send, every frame
// not yet due or over a limit.
func (p *Program) Schedule(t int, start, end, burst int64, limit uint64) {
	atomic.StoreUint64(p.state64(t, stateDue), uint64(start)<<dueShift)
	atomic.StoreUint64(p.state64(t, stateEnd), uint64(end))
	atomic.StoreUint64(p.state64(t, stateBurst), uint64(burst))
	atomic.StoreUint64(p.state64(t, stateLimit), limit)
}

// Runner runs the program for one thread. Its methods are called from
// that thread (Interrupt from any).
type Runner struct {
	p      *Program
	thread int
	data   []byte // metadata, then the template frame
	ctx    xdpMD
	attr   testRunAttr
	tid    atomic.Int32
}

// Runner returns thread t's runner, whose frames leave through ifindex
// (the ingress device of the run: XDP_TX sends out of it).
func (p *Program) Runner(t, ifindex int) *Runner {
	r := &Runner{p: p, thread: t, data: make([]byte, metaLen+p.cfg.MaxLen)}
	binary.LittleEndian.PutUint64(r.data, p.magic)
	binary.NativeEndian.PutUint32(r.data[metaThread:], uint32(t))
	copy(r.data[metaLen:], p.cfg.Template)
	r.ctx = xdpMD{data: metaLen, dataEnd: uint32(len(r.data)), ingressIfindex: uint32(ifindex)}
	r.attr = testRunAttr{progFD: uint32(p.prog.FD()), flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES}
	r.attr.setInput(r.data, &r.ctx)
	return r
}

// Run runs the program repeat times in live-frames mode, flushing every
// batch frames (at most 256), on the calling thread, which must be in
// the device's network namespace. It returns unix.EINTR if Interrupt (or
// any signal) ended it early: the thread's Counters say how far it got.
func (r *Runner) Run(repeat, batch uint32) error {
	r.tid.Store(int32(unix.Gettid()))
	atomic.StoreUint64(r.p.state64(r.thread, stateTime), 0)
	r.attr.repeat, r.attr.batch = repeat, min(batch, MaxBatch)
	if e := testRun(&r.attr); e != 0 {
		return e
	}
	return nil
}

// Interrupt ends the thread's Run in progress early, with a SIGURG to the
// thread: the signal the Go runtime sends for preemption and handles for
// itself. A signal that arrives between two Runs is lost, so a caller
// tells its thread to stop first and interrupts until the thread has.
func (r *Runner) Interrupt() error {
	tid := int(r.tid.Load())
	if tid == 0 {
		return nil
	}
	return unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
}

// AttachPass attaches a program that passes every frame on (XDP_PASS) to
// the device ifindex, in native mode and only if it has none: a veth
// whose peer sends live frames takes them only while it has an XDP
// program (or GRO on), and a kernel forwarder (a bridge) behind it then
// sees every frame as before. It returns the function that detaches it.
// The calling thread must be in the device's network namespace.
func AttachPass(ifindex int) (detach func() error, err error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "ecnsw_gen_pass", Type: ebpf.XDP, AttachType: ebpf.AttachXDP, License: "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()},
	})
	if err != nil {
		return nil, fmt.Errorf("xdpgen: load pass program: %w", err)
	}
	defer prog.Close() // the attachment holds its own reference
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("xdpgen: attach pass program: %w", err)
	}
	if err := netlink.LinkSetXdpFdWithFlags(l, prog.FD(), unix.XDP_FLAGS_UPDATE_IF_NOEXIST|unix.XDP_FLAGS_DRV_MODE); err != nil {
		return nil, fmt.Errorf("xdpgen: attach pass program to %s: %w", l.Attrs().Name, err)
	}
	info, _ := prog.Info()
	id, _ := info.ID()
	return func() error {
		l, err := netlink.LinkByIndex(ifindex)
		if err != nil {
			return nil // the device is gone, and the program with it
		}
		if x := l.Attrs().Xdp; x == nil || !x.Attached || x.ProgId != uint32(id) {
			return nil // not ours any more
		}
		return netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
	}, nil
}
