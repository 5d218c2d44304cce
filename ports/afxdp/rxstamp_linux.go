//go:build linux

package afxdp

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

const (
	// rxTimestampKfunc is the kfunc that gives a frame's hardware receive
	// stamp (Documentation/networking/xdp-rx-metadata.rst).
	rxTimestampKfunc = "bpf_xdp_metadata_rx_timestamp"
	// rxMetaLen is the metadata the stamping program puts in front of
	// every frame: the stamp, a native-endian u64, 0 for none.
	rxMetaLen = 8
	// xdpRxMetadataTimestamp is NETDEV_XDP_RX_METADATA_TIMESTAMP in the
	// netdev family's xdp-rx-metadata-features.
	xdpRxMetadataTimestamp = 1 << 0
	// phcResync is how often Receive measures the PHC's offset from
	// CLOCK_MONOTONIC again; clocks a few ppm apart drift a few µs a second.
	phcResync = 100 * time.Millisecond
)

// deviceBound asks newProgram for the device-bound stamping program.
type deviceBound struct {
	ifindex int
	kfunc   btf.TypeID // bpf_xdp_metadata_rx_timestamp in the kernel's BTF
}

// apply turns spec into the device-bound stamping program.
func (b *deviceBound) apply(spec *ebpf.ProgramSpec, usable int, xsks, meta *ebpf.Map) {
	spec.Ifindex = uint32(b.ifindex)
	spec.Flags = unix.BPF_F_XDP_DEV_BOUND_ONLY
	spec.Instructions = stampInstructions(usable, b.kfunc, xsks, meta)
}

// stampInstructions returns the device-bound receive program:
//
//	if data + usable < data_end { meta[oversize]++; return XDP_DROP }
//	u64 ts = 0
//	if bpf_xdp_metadata_rx_timestamp(ctx, &ts) != 0 { ts = 0 }  // ENODATA, EOPNOTSUPP: none
//	if bpf_xdp_adjust_meta(ctx, -8) != 0 { meta[noroom]++; return XDP_DROP }
//	*(u64 *)data_meta = ts                                        // the kernel copies it in front of the frame
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
//
// It has no transmit path: BPF_PROG_RUN cannot run a device-bound
// program. A driver's headroom (XDP_PACKET_HEADROOM, 256 bytes) always
// has room for 8 bytes of metadata; noroom counts the driver that would
// not, rather than hand Receive a stale stamp.
func stampInstructions(usable int, kfunc btf.TypeID, xsks, meta *ebpf.Map) asm.Instructions {
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // ctx->data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // ctx->data_end
		asm.Add.Imm(asm.R2, int32(usable+1)),
		asm.JGT.Reg(asm.R2, asm.R3, "fits"),
		asm.Ja.Label("oversize"),
		asm.Mov.Imm(asm.R7, 0).WithSymbol("fits"),
		asm.StoreMem(asm.RFP, -8, asm.R7, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(kfunc)},
		asm.JEq.Imm(asm.R0, 0, "meta"),
		asm.StoreMem(asm.RFP, -8, asm.R7, asm.DWord), // R7 survives the call: still 0
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("meta"),
		asm.Mov.Imm(asm.R2, -rxMetaLen),
		asm.FnXdpAdjustMeta.Call(),
		asm.JNE.Imm(asm.R0, 0, "noroom"),
		asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // ctx->data_meta
		asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // ctx->data
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, rxMetaLen),
		asm.JGT.Reg(asm.R4, asm.R3, "noroom"),
		asm.LoadMem(asm.R5, asm.RFP, -8, asm.DWord),
		asm.StoreMem(asm.R2, 0, asm.R5, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, 16, asm.Word), // ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
	ins = append(ins, countDrop(meta, metaOversize, "oversize")...)
	return append(ins, countDrop(meta, metaNoRoom, "noroom")...)
}

// kfuncID finds a kfunc's BTF ID in the running kernel's BTF.
func kfuncID(name string) (btf.TypeID, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("kernel BTF: %w", err)
	}
	var fn *btf.Func
	if err := spec.TypeByName(name, &fn); err != nil {
		return 0, fmt.Errorf("kfunc %s: %w", name, err)
	}
	return spec.TypeID(fn)
}

// phcIndex returns the device's PTP hardware clock index (ethtool -T),
// -1 when it has none.
func phcIndex(ifname string) int {
	idx := -1
	_ = withIoctlSocket(func(fd int) error {
		info, err := unix.IoctlGetEthtoolTsInfo(fd, ifname)
		if err == nil {
			idx = int(info.Phc_index)
		}
		return err
	})
	return idx
}

// stampPlan is what Open decided about hardware receive stamps.
type stampPlan struct {
	bound *deviceBound // nil: the plain program
	phc   int          // the device's PHC, -1 for none
	raw   bool         // Options.RxStampRaw: stamps stay on the PHC
}

// planStamps decides, before the program is loaded, whether the Port
// loads the device-bound stamping program (see RxStampMode). It logs why
// not where RxStampAuto declines, and fails only for RxStampOn.
func planStamps(o *Options, ifname string, ifindex int, log *zap.Logger) (stampPlan, error) {
	plan := stampPlan{phc: phcIndex(ifname), raw: o.RxStampRaw}
	if o.RxStamp == RxStampOff || o.Attach == AttachGeneric {
		return plan, nil
	}
	on := o.RxStamp == RxStampOn
	decline := func(why string, err error) (stampPlan, error) {
		if on {
			if err == nil {
				err = ErrNotSupported
			}
			return plan, fmt.Errorf("afxdp: %s: RxStamp = on: %s: %w", ifname, why, err)
		}
		log.Debug("no hardware receive stamps; the dataplane stamps frames as it receives them", zap.String("why", why))
		return plan, nil
	}
	if plan.phc < 0 && !on {
		return decline("the device has no PTP hardware clock to read stamps against (ethtool -T)", nil)
	}
	if o.Transmit == TxXDP {
		return decline("Transmit = xdp needs BPF_PROG_RUN, which cannot run a device-bound program", nil)
	}
	f, err := deviceFeatures(ifindex)
	if err != nil {
		return decline("netdev netlink", err)
	}
	if f.rxMetadata&xdpRxMetadataTimestamp == 0 {
		return decline("the driver reports no XDP RX-metadata timestamp (netdev xdp-rx-metadata-features)", nil)
	}
	id, err := kfuncID(rxTimestampKfunc)
	if err != nil {
		return decline("the kernel's BTF", err)
	}
	plan.bound = &deviceBound{ifindex: ifindex, kfunc: id}
	return plan, nil
}

// rxStamps converts the hardware stamps Receive found, in the PHC's time,
// to CLOCK_MONOTONIC, or with raw leaves them on the PHC.
type rxStamps struct {
	phc    *timestamp.PHC // nil: stamps cannot be read against a clock, so none are used
	raw    bool           // Options.RxStampRaw: no conversion
	offset int64          // PHC − CLOCK_MONOTONIC
	resync time.Time      // when to measure offset again
	synced bool

	stamped  atomic.Uint64 // frames given a hardware stamp
	unstamp  atomic.Uint64 // frames the device gave none (0), or no PHC to read it against
	syncErrs atomic.Uint64 // failed offset measurements (stamps then wait for the next)
}

// convert turns ds' raw stamps into CLOCK_MONOTONIC ns (with raw, leaves
// them on the PHC), zeroing those it cannot use, and counts both.
func (r *rxStamps) convert(ds []*packet.Desc) {
	if r.raw {
		r.synced, r.offset = true, 0
	} else if r.phc != nil {
		if now := time.Now(); now.After(r.resync) {
			r.resync = now.Add(phcResync)
			if off, _, err := r.phc.Offset(); err == nil {
				r.offset, r.synced = off, true
			} else {
				r.syncErrs.Add(1)
			}
		}
	}
	var stamped, unstamped uint64
	for _, d := range ds {
		if d.RxTime == 0 || r.phc == nil || !r.synced {
			d.RxTime = 0
			unstamped++
			continue
		}
		d.RxTime -= r.offset
		stamped++
	}
	if stamped > 0 {
		r.stamped.Add(stamped)
	}
	if unstamped > 0 {
		r.unstamp.Add(unstamped)
	}
}

// readStamp reads the stamp the stamping program put in front of the
// frame at addr.
func readStamp(mem []byte, addr uint64) int64 {
	return int64(binary.NativeEndian.Uint64(mem[addr-rxMetaLen : addr]))
}

// load loads and attaches the Port's program: the device-bound stamping
// program when plan says so (natively, and the Port then transmits
// through its sockets), else the plain one. Where the stamping program
// fails to load or attach under RxStampAuto, the plain one takes its place.
func (p *Port) load(o *Options, plan stampPlan, usable, queues, pid int, start uint64) (AttachMode, error) {
	if plan.bound != nil {
		mode, err := p.loadBound(plan, usable, queues, pid, start)
		if err == nil {
			if o.Transmit != TxSocket {
				p.log.Info("transmitting through the socket: the device-bound program that reads hardware receive stamps "+
					"cannot be run by BPF_PROG_RUN, so live frames are off", zap.Stringer("transmit", o.Transmit))
				o.Transmit = TxSocket
			}
			return mode, nil
		}
		if o.RxStamp == RxStampOn {
			return 0, fmt.Errorf("afxdp: %s: RxStamp = on: %w", p.name, err)
		}
		p.log.Info("no hardware receive stamps: the device-bound program did not load or attach; "+
			"the dataplane stamps frames as it receives them", zap.Error(err))
	}
	var err error
	if p.prog, err = newProgram(usable, queues, p.umem.frames, pid, start, nil); err != nil {
		return 0, err
	}
	mode, xdp, err := attach(p.name, p.ifindex, p.prog, o.Attach, p.log)
	p.xdp = xdp
	return mode, err
}

func (p *Port) loadBound(plan stampPlan, usable, queues, pid int, start uint64) (AttachMode, error) {
	prog, err := newProgram(usable, queues, p.umem.frames, pid, start, plan.bound)
	if err != nil {
		return 0, err
	}
	mode, xdp, err := attach(p.name, p.ifindex, prog, AttachNative, p.log)
	if err != nil {
		prog.close()
		return 0, err
	}
	p.prog, p.xdp = prog, xdp
	p.stamps = &rxStamps{raw: plan.raw}
	if plan.phc >= 0 {
		if p.stamps.phc, err = timestamp.OpenPHC(plan.phc); err != nil {
			p.log.Warn("hardware receive stamps unused: cannot open the device's PHC", zap.Error(err))
		}
	}
	return mode, nil
}

// RxClock names the clock of Receive's hardware stamps: "phcN", or ""
// when the Port has none and leaves RxTime zero (ports.RxStamper). The
// stamps are on CLOCK_MONOTONIC, or with Options.RxStampRaw on the PHC
// itself.
func (p *Port) RxClock() string {
	if p.stamps == nil || p.stamps.phc == nil {
		return ""
	}
	return p.stamps.phc.Name()
}

// rxStampNote completes the start-up report's rxStamps.
func (p *Port) rxStampNote() string {
	switch {
	case p.stamps == nil:
		return "none: the dataplane stamps at receive"
	case p.stamps.phc == nil:
		return "none: the device-bound program runs, but the device has no PHC to read its stamps against; the dataplane stamps at receive"
	}
	return " (hardware, device-bound program; frames without a stamp get the dataplane's)"
}

// RxStamps returns the Port's hardware-stamp counters; all zero without
// the device-bound program.
func (p *Port) RxStamps() RxStampStats {
	if p.stamps == nil {
		return RxStampStats{}
	}
	return RxStampStats{
		Hardware: p.stamps.stamped.Load(),
		None:     p.stamps.unstamp.Load(),
		NoRoom:   p.prog.noRoom(),
		SyncErrs: p.stamps.syncErrs.Load(),
	}
}
