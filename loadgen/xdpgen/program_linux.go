//go:build linux

package xdpgen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// XDP return codes (enum xdp_action).
const (
	xdpDrop = 1
	xdpPass = 2
	xdpTx   = 3
)

// Layout of the BPF_PROG_RUN input's metadata: the magic word, then the
// thread's index. A driver never hands a program metadata, so a frame
// from the wire never takes the generator's path.
const (
	metaLen    = 16
	metaThread = 8
)

// Layout of one element of the state map, a thread's (two cache lines,
// so threads on different CPUs share none).
const (
	statePos     = 0   // u32: next entry of the cycle, 0..stateLen−1
	stateLen     = 4   // u32: entries in the thread's cycle
	stateBase    = 8   // u32: index of its first entry in the table
	stateIfindex = 12  // u32: redirect target; 0 returns XDP_TX
	stateFrames  = 16  // u64: frames sent
	stateBytes   = 24  // u64: their lengths (no FCS)
	stateTime    = 32  // u64: the TX time last read, big-endian; 0 none
	stateDue     = 40  // u64: when the next frame is due, ns << dueShift (paced)
	stateEnd     = 48  // u64: no frame due at or after this is sent, ns; 0 none
	stateLimit   = 56  // u64: frames to send in all; 0 no limit
	stateBurst   = 64  // u64: most schedule caught up after a stall, ns
	stateLate    = 72  // u64: schedule given up after stalls, ns
	stateSize    = 128 //
	dueShift     = 8   // the schedule counts 1/256 ns
)

// Layout of one element of the table map: an Entry and its cost.
const (
	entryLen  = HeadLen     // u16: the frame's length
	entryFlow = HeadLen + 2 // u16: its flow, the index of its sequence number
	entryCost = HeadLen + 4 // u64: its time at the thread's rate, ns << dueShift; 0 unpaced
	entrySize = HeadLen + 12
)

// timeEvery is how many frames share one reading of the clock when
// unpaced: reading it (read_tsc under kvm-clock) took 13% of a thread's
// CPU for every frame. A run sends frames in batches of 64, flushed
// together, so a TX time is anyway up to a batch earlier than the
// frame's departure; a reading shared by 16 frames (~3 µs at 5 Mpps) adds
// less than that. Runner.Run clears the reading before each call, so a
// call never stamps the time of an earlier one. Paced, the program reads
// the clock for every run, to know whether the next frame is due.
const timeEvery = 16

// instructions returns the generator's XDP program. A frame whose
// metadata holds magic is a generator run of thread t:
//
//	s = state[t]
//	if s.limit != 0 && s.frames >= s.limit { return XDP_DROP }     // Count reached
//	e = table[s.base + s.pos]
//	if e.cost != 0 {                                               // paced
//		now = bpf_ktime_get_ns(); due = s.due >> 8
//		if s.end != 0 && due >= s.end || due > now { return XDP_DROP } // not (or no longer) due
//		if now − due > s.burst { s.late += now − due − s.burst; s.due = (now − s.burst) << 8 }
//		s.due += e.cost; stamp = now
//	} else {
//		if s.time == 0 || s.frames % timeEvery == 0 { s.time = bpf_ktime_get_ns() }
//		stamp = s.time
//	}
//	s.pos = (s.pos+1) % s.len
//	q = seqs[e.flow]++
//	bpf_xdp_adjust_meta(ctx, 16)                       // strip the metadata
//	bpf_xdp_adjust_tail(ctx, e.len − (data_end − data))
//	frame[0:60] = e.head; frame[seqOff:] = htonl(q); frame[timeOff:] = htobe64(stamp)
//	s.frames++; s.bytes += e.len
//	return s.ifindex ? bpf_redirect(s.ifindex, 0) : XDP_TX
//
// A paced thread thus runs the program in one long call that spins,
// dropping (not sending) the runs before each frame is due: one page pool
// for the whole run. Any other frame (one from the wire) passes to the
// kernel stack.
func instructions(magic uint64, seqOff, timeOff int16, state, table, seqs *ebpf.Map) asm.Instructions {
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // ctx->data_meta
		asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // ctx->data
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, metaLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 0, asm.DWord),
		asm.LoadImm(asm.R4, int64(magic), asm.DWord),
		asm.JNE.Reg(asm.R5, asm.R4, "pass"),

		// The thread's state.
		asm.LoadMem(asm.R1, asm.R2, metaThread, asm.Word),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, state.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Reg(asm.R7, asm.R0),

		// Count reached?
		asm.LoadMem(asm.R1, asm.R7, stateLimit, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "entry"),
		asm.LoadMem(asm.R2, asm.R7, stateFrames, asm.DWord),
		asm.JGE.Reg(asm.R2, asm.R1, "drop"),

		// The next entry of its cycle.
		asm.LoadMem(asm.R1, asm.R7, statePos, asm.Word).WithSymbol("entry"),
		asm.LoadMem(asm.R3, asm.R7, stateBase, asm.Word),
		asm.Add.Reg(asm.R1, asm.R3),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.LoadMapPtr(asm.R1, table.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Reg(asm.R8, asm.R0),

		// Paced: is it due?
		asm.LoadMem(asm.R1, asm.R8, entryCost, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "unpaced"),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0), // now
		asm.LoadMem(asm.R1, asm.R7, stateDue, asm.DWord),
		asm.RSh.Imm(asm.R1, dueShift), // due
		asm.LoadMem(asm.R2, asm.R7, stateEnd, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, "noend"),
		asm.JGE.Reg(asm.R1, asm.R2, "drop"),
		asm.JGT.Reg(asm.R1, asm.R9, "drop").WithSymbol("noend"),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Sub.Reg(asm.R2, asm.R1), // lag
		asm.LoadMem(asm.R3, asm.R7, stateBurst, asm.DWord),
		asm.JLE.Reg(asm.R2, asm.R3, "ontime"),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.LoadMem(asm.R4, asm.R7, stateLate, asm.DWord),
		asm.Add.Reg(asm.R4, asm.R2),
		asm.StoreMem(asm.R7, stateLate, asm.R4, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Sub.Reg(asm.R1, asm.R3),
		asm.LSh.Imm(asm.R1, dueShift),
		asm.StoreMem(asm.R7, stateDue, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, stateDue, asm.DWord).WithSymbol("ontime"),
		asm.LoadMem(asm.R2, asm.R8, entryCost, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R7, stateDue, asm.R1, asm.DWord),
		asm.HostTo(asm.BE, asm.R9, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R9, asm.DWord),
		asm.Ja.Label("advance"),

		// Unpaced: the clock, every timeEvery frames.
		asm.LoadMem(asm.R1, asm.R7, stateTime, asm.DWord).WithSymbol("unpaced"),
		asm.JEq.Imm(asm.R1, 0, "clock"),
		asm.LoadMem(asm.R2, asm.R7, stateFrames, asm.DWord),
		asm.And.Imm(asm.R2, timeEvery-1),
		asm.JNE.Imm(asm.R2, 0, "stamp"),
		asm.FnKtimeGetNs.Call().WithSymbol("clock"),
		asm.HostTo(asm.BE, asm.R0, asm.DWord),
		asm.StoreMem(asm.R7, stateTime, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord).WithSymbol("stamp"),

		// Advance the cycle.
		asm.LoadMem(asm.R1, asm.R7, statePos, asm.Word).WithSymbol("advance"),
		asm.Add.Imm(asm.R1, 1),
		asm.LoadMem(asm.R3, asm.R7, stateLen, asm.Word),
		asm.JLT.Reg(asm.R1, asm.R3, "keep"),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R7, statePos, asm.R1, asm.Word).WithSymbol("keep"),

		// Its flow's sequence number.
		asm.LoadMem(asm.R1, asm.R8, entryFlow, asm.Half),
		asm.StoreMem(asm.RFP, -12, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -12),
		asm.LoadMapPtr(asm.R1, seqs.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R9, asm.R0, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),

		// Strip the metadata, size the frame.
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, metaLen),
		asm.FnXdpAdjustMeta.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R2, asm.R8, entryLen, asm.Half),
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // ctx->data_end
		asm.LoadMem(asm.R4, asm.R6, 0, asm.Word), // ctx->data
		asm.Sub.Reg(asm.R3, asm.R4),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.JEq.Imm(asm.R2, 0, "sized"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnXdpAdjustTail.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),

		// Write the frame's head.
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word).WithSymbol("sized"), // ctx->data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),                     // ctx->data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, HeadLen),
		asm.JGT.Reg(asm.R4, asm.R3, "drop"),
	}
	for off := int16(0); off+8 <= HeadLen; off += 8 {
		ins = append(ins,
			asm.LoadMem(asm.R4, asm.R8, off, asm.DWord),
			asm.StoreMem(asm.R2, off, asm.R4, asm.DWord))
	}
	ins = append(ins,
		asm.LoadMem(asm.R4, asm.R8, HeadLen-4, asm.Word),
		asm.StoreMem(asm.R2, HeadLen-4, asm.R4, asm.Word),
		asm.HostTo(asm.BE, asm.R9, asm.Word),
		asm.StoreMem(asm.R2, seqOff, asm.R9, asm.Word),
		asm.LoadMem(asm.R4, asm.RFP, -24, asm.DWord),
		asm.StoreMem(asm.R2, timeOff, asm.R4, asm.DWord),

		// Count it (the state is the thread's alone: no atomics).
		asm.LoadMem(asm.R1, asm.R7, stateFrames, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, stateFrames, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R8, entryLen, asm.Half),
		asm.LoadMem(asm.R2, asm.R7, stateBytes, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R7, stateBytes, asm.R2, asm.DWord),

		asm.LoadMem(asm.R1, asm.R7, stateIfindex, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "tx"),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpTx).WithSymbol("tx"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("drop"),
		asm.Return(),
	)
	return ins
}
