//go:build linux

package afxdp

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Names of ecnswitch's kernel objects. A program named ProgramName on an
// interface is ecnswitch's; its meta map says which process owns it.
const (
	ProgramName = "ecnsw_redirect"
	xsksName    = "ecnsw_xsks"
	metaName    = "ecnsw_meta"
	txqName     = "ecnsw_txq"
)

// Slots of the meta array map (u32 key, u64 value).
const (
	metaOversize   = 0 // frames the program dropped as larger than the usable frame
	metaOwnerPID   = 1 // pid of the process that loaded the program
	metaOwnerStart = 2 // its start time in clock ticks after boot (/proc/<pid>/stat field 22)
	metaTxDrop     = 3 // transmit descriptors the program refused (bad frame index or length)
	metaNoRoom     = 4 // frames dropped by the stamping program for want of metadata room
	metaEntries    = 5
)

// XDP return codes (enum xdp_action).
const (
	xdpDrop = 1
	xdpPass = 2
	xdpTx   = 3
)

// IFLA_XDP_ATTACHED values.
const (
	attachedNone  = 0
	attachedDrv   = 1
	attachedSKB   = 2
	attachedHW    = 3
	attachedMulti = 4
)

// The transmit queue: one element of the txq array, mmapped by the Port.
// Its first word is the index of the next descriptor the program takes;
// descriptors follow, each a frame index into the UMEM array and a length.
const (
	txqLen       = MaxLiveMin // descriptors, the most one BPF_PROG_RUN call sends (TEST_XDP_MAX_BATCH)
	txqDescs     = 8          // offset of the first descriptor
	txqValueSize = txqDescs + 8*txqLen
	txMetaLen    = 8  // bytes of metadata that mark a BPF_PROG_RUN frame: the program's magic
	txFrameLen   = 60 // length of the template frame BPF_PROG_RUN starts each frame from
	minFrameLen  = 14 // an Ethernet header
)

// program is ecnswitch's XDP program with its maps.
type program struct {
	prog  *ebpf.Program
	xsks  *ebpf.Map // XSKMAP: rx_queue_index → socket
	meta  *ebpf.Map // counters and owner
	txq   *ebpf.Map // the transmit queue (see txqLen)
	id    uint32
	magic uint64 // the metadata word that tells a transmit run from a received frame
}

// instructions returns the program. A frame from a driver takes the
// receive path:
//
//	if data + usable < data_end { meta[oversize]++; return XDP_DROP }   // would not fit a frame
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
//
// The XDP_PASS in the flags is the action when the queue has no socket, so
// frames on queues ecnswitch does not drive reach the kernel stack.
//
// A frame that starts with the 8-byte metadata word magic is a transmit
// run: Port.Transmit runs the program with BPF_PROG_RUN in live-frames
// mode, once per frame to send, and a driver never hands a program
// metadata, so no frame from the wire can take this path. It strips the
// metadata, takes the next descriptor of the transmit queue, resizes the
// frame to the descriptor's length, copies the UMEM frame in and returns
// XDP_TX, which BPF_PROG_RUN turns into a redirect out of the Port's
// interface (ndo_xdp_xmit):
//
//	bpf_xdp_adjust_meta(ctx, 8)
//	d = txq.descs[txq.next++ % txqLen]
//	if d.len < 14 || d.len > usable { meta[txdrop]++; return XDP_DROP }
//	f = umem[d.index]                    // bounds-checked by the array
//	bpf_xdp_adjust_tail(ctx, d.len - (data_end - data))
//	bpf_xdp_store_bytes(ctx, 0, f + Headroom, d.len)
//	return XDP_TX
func instructions(usable int, magic uint64, xsks, meta, txq, umem *ebpf.Map) asm.Instructions {
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		// Metadata of at least 8 bytes holding the magic: a transmit run.
		asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // ctx->data_meta
		asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // ctx->data
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, txMetaLen),
		asm.JGT.Reg(asm.R4, asm.R3, "rx"),
		asm.LoadMem(asm.R5, asm.R2, 0, asm.DWord),
		asm.LoadImm(asm.R4, int64(magic), asm.DWord),
		asm.JEq.Reg(asm.R5, asm.R4, "tx"),

		// Receive: redirect to the queue's socket.
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word).WithSymbol("rx"), // ctx->data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),                  // ctx->data_end
		asm.Add.Imm(asm.R2, int32(usable+1)),
		asm.JGT.Reg(asm.R2, asm.R3, "fits"), // data + usable + 1 > data_end ⇔ len ≤ usable
		asm.Ja.Label("oversize"),
		asm.LoadMem(asm.R2, asm.R6, 16, asm.Word).WithSymbol("fits"), // ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),

		// Transmit run.
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("tx"),
		asm.Mov.Imm(asm.R2, txMetaLen),
		asm.FnXdpAdjustMeta.Call(),
		asm.JNE.Imm(asm.R0, 0, "txdrop"),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, txq.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "txdrop"),
		asm.LoadMem(asm.R7, asm.R0, 0, asm.Word), // next
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),
		asm.And.Imm(asm.R7, txqLen-1),
		asm.LSh.Imm(asm.R7, 3),
		asm.Add.Reg(asm.R0, asm.R7),
		asm.LoadMem(asm.R9, asm.R0, txqDescs, asm.Word),   // frame index
		asm.LoadMem(asm.R8, asm.R0, txqDescs+4, asm.Word), // length
		asm.JLT.Imm(asm.R8, minFrameLen, "txdrop"),
		asm.JGT.Imm(asm.R8, int32(usable), "txdrop"),
		asm.StoreMem(asm.RFP, -8, asm.R9, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.LoadMapPtr(asm.R1, umem.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "txdrop"),
		asm.Mov.Reg(asm.R9, asm.R0),              // the frame
		asm.LoadMem(asm.R2, asm.R6, 4, asm.Word), // ctx->data_end
		asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // ctx->data
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.Sub.Reg(asm.R3, asm.R2),
		asm.Mov.Reg(asm.R2, asm.R3), // delta = len − (data_end − data)
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnXdpAdjustTail.Call(),
		asm.JNE.Imm(asm.R0, 0, "txdrop"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, Headroom),
		asm.Mov.Reg(asm.R4, asm.R8),
		asm.FnXdpStoreBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "txdrop"),
		asm.Mov.Imm(asm.R0, xdpTx),
		asm.Return(),
	}
	ins = append(ins, countDrop(meta, metaOversize, "oversize")...)
	return append(ins, countDrop(meta, metaTxDrop, "txdrop")...)
}

// countDrop returns instructions, starting at label, that add 1 to the
// meta map's slot and return XDP_DROP.
func countDrop(meta *ebpf.Map, slot int32, label string) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, int64(slot), asm.Word).WithSymbol(label),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, meta.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, label+"_out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol(label + "_out"),
		asm.Return(),
	}
}

// newProgram loads the program for frames up to usable bytes and queues
// below queues, transmitting from umem, recording pid/start as its owner.
// With bound, it loads the device-bound receive-stamping program instead
// (stampInstructions).
func newProgram(usable, queues int, umem *ebpf.Map, pid int, start uint64, bound *deviceBound) (_ *program, err error) {
	p := &program{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	var m [8]byte
	if _, err := rand.Read(m[:]); err != nil {
		return nil, fmt.Errorf("afxdp: draw the transmit magic: %w", err)
	}
	p.magic = binary.LittleEndian.Uint64(m[:])
	p.xsks, err = ebpf.NewMap(&ebpf.MapSpec{
		Name: xsksName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues),
	})
	if err != nil {
		return nil, fmt.Errorf("afxdp: create XSKMAP: %w%s", err, permissionCure(err))
	}
	p.meta, err = ebpf.NewMap(&ebpf.MapSpec{
		Name: metaName, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: metaEntries,
	})
	if err != nil {
		return nil, fmt.Errorf("afxdp: create meta map: %w%s", err, permissionCure(err))
	}
	p.txq, err = ebpf.NewMap(&ebpf.MapSpec{
		Name: txqName, Type: ebpf.Array, KeySize: 4, ValueSize: txqValueSize, MaxEntries: 1,
		Flags: unix.BPF_F_MMAPABLE,
	})
	if err != nil {
		return nil, fmt.Errorf("afxdp: create transmit queue map: %w%s", err, permissionCure(err))
	}
	if err = p.meta.Put(uint32(metaOwnerPID), uint64(pid)); err != nil {
		return nil, fmt.Errorf("afxdp: write owner: %w", err)
	}
	if err = p.meta.Put(uint32(metaOwnerStart), start); err != nil {
		return nil, fmt.Errorf("afxdp: write owner: %w", err)
	}
	spec := &ebpf.ProgramSpec{
		Name:         ProgramName,
		Type:         ebpf.XDP,
		AttachType:   ebpf.AttachXDP,
		Instructions: instructions(usable, p.magic, p.xsks, p.meta, p.txq, umem),
		License:      "Dual BSD/GPL",
	}
	if bound != nil {
		bound.apply(spec, usable, p.xsks, p.meta)
	}
	p.prog, err = ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("afxdp: load XDP program: %w%s", err, permissionCure(err))
	}
	info, err := p.prog.Info()
	if err != nil {
		return nil, fmt.Errorf("afxdp: XDP program info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return nil, fmt.Errorf("afxdp: XDP program has no ID (kernel older than 4.13): %w", ErrNotSupported)
	}
	p.id = uint32(id)
	return p, nil
}

// counter reads one slot of the meta map.
func (p *program) counter(slot uint32) uint64 {
	var v uint64
	if p == nil || p.meta == nil || p.meta.Lookup(slot, &v) != nil {
		return 0
	}
	return v
}

// oversize reads the program's count of frames too large for a frame.
func (p *program) oversize() uint64 { return p.counter(metaOversize) }

// noRoom reads the stamping program's count of frames dropped for want of
// metadata room.
func (p *program) noRoom() uint64 { return p.counter(metaNoRoom) }

func (p *program) close() error {
	var errs []error
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
	}
	if p.xsks != nil {
		errs = append(errs, p.xsks.Close())
	}
	if p.meta != nil {
		errs = append(errs, p.meta.Close())
	}
	if p.txq != nil {
		errs = append(errs, p.txq.Close())
	}
	p.prog, p.xsks, p.meta, p.txq = nil, nil, nil, nil
	return errors.Join(errs...)
}

// processStart returns a process's start time in clock ticks after boot,
// field 22 of /proc/<pid>/stat; with the pid it names one process for the
// lifetime of the system.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// attachedProgram is the XDP program netlink reports on an interface.
type attachedProgram struct {
	mode uint32 // attachedDrv, attachedSKB, ...
	id   uint32
}

func queryXDP(ifindex int) (attachedProgram, error) {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return attachedProgram{}, err
	}
	x := l.Attrs().Xdp
	if x == nil || !x.Attached {
		return attachedProgram{}, nil
	}
	return attachedProgram{mode: x.AttachMode, id: x.ProgId}, nil
}

// modeFlags returns the netlink attach flags for an IFLA_XDP_ATTACHED mode.
func modeFlags(mode uint32) int {
	switch mode {
	case attachedDrv:
		return unix.XDP_FLAGS_DRV_MODE
	case attachedSKB:
		return unix.XDP_FLAGS_SKB_MODE
	case attachedHW:
		return unix.XDP_FLAGS_HW_MODE
	}
	return 0
}

func modeName(mode uint32) string {
	switch mode {
	case attachedDrv:
		return "native (xdpdrv)"
	case attachedSKB:
		return "generic (xdpgeneric)"
	case attachedHW:
		return "offloaded (xdpoffload)"
	case attachedMulti:
		return "several modes"
	}
	return "none"
}

// detachMode removes whatever program is attached in mode. Passing the
// mode matters: a flagless detach leaves a generic-mode program in place
// on a native-capable device (notes/afxdp.md §1.3).
func detachMode(ifindex int, mode uint32) error {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return err
	}
	return netlink.LinkSetXdpFdWithFlags(l, -1, modeFlags(mode))
}

// owner returns the pid and start time an ecnswitch program records.
func owner(progID uint32) (pid, start uint64, err error) {
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(progID))
	if err != nil {
		return 0, 0, err
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return 0, 0, err
	}
	ids, _ := info.MapIDs()
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		mi, err := m.Info()
		if err == nil && mi.Name == metaName && mi.Type == ebpf.Array && mi.ValueSize == 8 && mi.MaxEntries >= metaEntries {
			err1 := m.Lookup(uint32(metaOwnerPID), &pid)
			err2 := m.Lookup(uint32(metaOwnerStart), &start)
			m.Close()
			return pid, start, errors.Join(err1, err2)
		}
		m.Close()
	}
	return 0, 0, nil
}

// programName returns the name of the loaded program with this ID.
func programName(id uint32) (string, error) {
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return "", err
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return "", err
	}
	return info.Name, nil
}

// clearInterface makes the interface free for our program: it removes an
// ecnswitch program whose owner is gone (left behind by a crash of a
// version that attached through netlink, which outlives its process), refuses one whose owner is
// alive (ErrInUse), and refuses anyone else's unless force.
func clearInterface(ifname string, ifindex int, force bool, log *zap.Logger) error {
	cur, err := queryXDP(ifindex)
	if err != nil {
		return fmt.Errorf("afxdp: query XDP program on %s: %w", ifname, err)
	}
	if cur.mode == attachedNone {
		return nil
	}
	if cur.mode == attachedMulti || cur.id == 0 {
		if !force {
			return fmt.Errorf("afxdp: %s has XDP programs attached in several modes: %w: remove them "+
				"(ip link set dev %s xdp off; ip link set dev %s xdpgeneric off) or set Options.Force",
				ifname, ErrForeignProgram, ifname, ifname)
		}
		for _, m := range []uint32{attachedDrv, attachedSKB, attachedHW} {
			_ = detachMode(ifindex, m) // some modes hold nothing; what remains is checked below
		}
		return verifyClear(ifname, ifindex)
	}
	name, err := programName(cur.id)
	if err != nil {
		return fmt.Errorf("afxdp: inspect XDP program %d on %s: %w%s", cur.id, ifname, err, permissionCure(err))
	}
	switch {
	case name == ProgramName:
		pid, start, err := owner(cur.id)
		if err != nil {
			return fmt.Errorf("afxdp: read owner of %s program %d on %s: %w", ProgramName, cur.id, ifname, err)
		}
		if pid != 0 {
			if st, err := processStart(int(pid)); err == nil && st == start {
				return fmt.Errorf("afxdp: %s: %w (pid %d, program %d): close that Port or stop that process first",
					ifname, ErrInUse, pid, cur.id)
			}
		}
		log.Info("removing XDP program left behind by an ecnswitch that is gone",
			zap.Uint32("program", cur.id), zap.Uint64("pid", pid), zap.String("mode", modeName(cur.mode)))
	case !force:
		return fmt.Errorf("afxdp: %s has XDP program %q (id %d) attached in %s mode: %w: ecnswitch will not replace it; "+
			"detach it (ip link set dev %s xdp off, or xdpgeneric off) or set Options.Force",
			ifname, name, cur.id, modeName(cur.mode), ErrForeignProgram, ifname)
	default:
		log.Warn("replacing foreign XDP program (Options.Force)",
			zap.String("name", name), zap.Uint32("program", cur.id), zap.String("mode", modeName(cur.mode)))
	}
	if err := detachMode(ifindex, cur.mode); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("afxdp: detach XDP program %d from %s: %w: it is attached through a bpf_link; "+
				"remove the link (bpftool link detach) first", cur.id, ifname, err)
		}
		return fmt.Errorf("afxdp: detach XDP program %d from %s: %w%s", cur.id, ifname, err, permissionCure(err))
	}
	return verifyClear(ifname, ifindex)
}

func verifyClear(ifname string, ifindex int) error {
	cur, err := queryXDP(ifindex)
	if err != nil {
		return fmt.Errorf("afxdp: query XDP program on %s: %w", ifname, err)
	}
	if cur.mode != attachedNone {
		return fmt.Errorf("afxdp: %s still has XDP program %d attached in %s mode after detach",
			ifname, cur.id, modeName(cur.mode))
	}
	return nil
}

// attach attaches p in the requested mode (auto: native, else generic)
// through a BPF link, then verifies through netlink that p is what the
// interface runs and in which mode. The kernel removes a linked program
// when the link's last descriptor closes: when the Port closes, and when
// the process dies however it dies (SIGKILL, a crash), so nothing is left
// behind; a link never replaces a program attached by someone else. A
// fallback to generic mode is logged as a warning: generic mode runs
// after the kernel has built an skb for every frame (slower, and GRO
// aggregates reach the program whole).
func attach(ifname string, ifindex int, p *program, mode AttachMode, log *zap.Logger) (AttachMode, link.Link, error) {
	try := func(m AttachMode) (link.Link, error) {
		flags := link.XDPDriverMode
		if m == AttachGeneric {
			flags = link.XDPGenericMode
		}
		return link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: ifindex, Flags: flags})
	}
	got := mode
	var l link.Link
	var err error
	switch mode {
	case AttachNative, AttachGeneric:
		l, err = try(mode)
	default:
		got = AttachNative
		if l, err = try(AttachNative); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EBUSY) &&
			!errors.Is(err, unix.EEXIST) && !errors.Is(err, ebpf.ErrNotSupported) {
			log.Warn("native XDP attach failed; attached in generic mode, which is slower and sees GRO aggregates whole: "+
				"use a driver with native XDP (on veth, a peer MTU that fits a page), or set attach: generic to choose it",
				zap.String("interface", ifname), zap.Error(err))
			got = AttachGeneric
			l, err = try(AttachGeneric)
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
			return 0, nil, fmt.Errorf("afxdp: attach XDP program to %s in %s mode: %w: another program was attached meanwhile",
				ifname, got, err)
		case errors.Is(err, ebpf.ErrNotSupported):
			return 0, nil, fmt.Errorf("afxdp: attach XDP program to %s through a BPF link: %w (%w): it needs Linux 5.9 or later",
				ifname, err, ErrNotSupported)
		case got == AttachNative && mode == AttachNative && errors.Is(err, unix.EOPNOTSUPP):
			return 0, nil, fmt.Errorf("afxdp: attach XDP program to %s in native mode: %w (%w): the driver has no native XDP; "+
				"use AttachAuto or AttachGeneric", ifname, err, ErrNotSupported)
		}
		return 0, nil, fmt.Errorf("afxdp: attach XDP program to %s in %s mode: %w%s", ifname, got, err, permissionCure(err))
	}
	cur, err := queryXDP(ifindex)
	want := uint32(attachedDrv)
	if got == AttachGeneric {
		want = attachedSKB
	}
	if err == nil && (cur.id != p.id || cur.mode != want) {
		err = fmt.Errorf("netlink reports program %d in %s mode, want %d in %s mode", cur.id, modeName(cur.mode), p.id, modeName(want))
	}
	if err != nil {
		l.Close()
		return 0, nil, fmt.Errorf("afxdp: verify XDP attach on %s: %w", ifname, err)
	}
	return got, l, nil
}
