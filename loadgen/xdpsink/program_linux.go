//go:build linux

package xdpsink

import (
	"math/bits"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ringNoWakeup is BPF_RB_NO_WAKEUP: a sample wakes no reader (a wake-up
// per sample costs the receiving CPU an interrupt); ReadSamples polls.
const ringNoWakeup = 1

// XDP return codes (enum xdp_action).
const (
	xdpDrop = 1
	xdpPass = 2
)

// Layout of the global map's one element, per CPU.
const (
	globalPackets     = 0  // u64: every frame the program saw
	globalBytes       = 8  // u64: their lengths plus FCS
	globalForeign     = 16 // u64: frames passed, not a generator's
	globalMalformed   = 24 // u64: of those, frames with headers cut short or invalid
	globalStale       = 32 // u64: generator frames of another run
	globalUnknown     = 40 // u64: frames of the run with flow ≥ Flows
	globalSampled     = 48 // u64: samples written to the ring
	globalSamplesLost = 56 // u64: samples the full ring refused
	globalFirst       = 64 // u64: receive time of the first counted frame, ns; 0 none
	globalLast        = 72 // u64: of the last sampled
	globalRand        = 80 // u64: xorshift64 state for sampling, never 0
	globalSize        = 88
)

// Layout of one element of the flows map (a flow's counters), per CPU.
const (
	flowReceived  = 0  // u64: frames, duplicates included
	flowUnique    = 8  // u64: distinct sequence numbers (late frames count)
	flowDup       = 16 // u64
	flowReordered = 24 // u64
	flowLate      = 32 // u64
	flowCE        = 40 // u64
	flowBytes     = 48 // u64: lengths plus FCS
	flowTop       = 56 // u64: highest sequence number seen + 1; 0 none
	flowDSCP      = 64 // u64: the DSCP of the last frame
	flowSize      = 72
)

// The config map's one element: the run counted (u32).
const configSize = 8

// A window block (one per 64 sequence numbers in the ring): the block
// number of the sequence numbers it holds plus one (0: empty), and a bit
// per sequence number seen.
const (
	blockTag  = 0
	blockBits = 8
	blockSize = 16
)

// Frame layout.
const (
	ethLen      = 14
	vlanLen     = 4
	ipv4Len     = 20
	ipv6Len     = 40
	udpLen      = 8
	headerLen   = 18
	protoUDP    = 17
	etherIPv4   = 0x0800
	etherIPv6   = 0x86dd
	etherVLAN   = 0x8100
	etherQinQ   = 0x88a8
	headerRun   = 2
	headerFlow  = 4
	headerSeq   = 6
	headerTime  = 10
	ipv4FragOff = 6 // flags (3 bits) and fragment offset: MF and the offset mark a fragment
)

// Stack slots.
const (
	stackKey   = -4  // u32: 0, the global and config maps' key
	stackFlow  = -8  // u32: the flow id, the flow maps' key
	stackLen   = -16 // u64: frame bytes, FCS included
	stackTOS   = -24 // u64: the DSCP/ECN byte
	stackRun   = -32 // u64: the frame's run id
	stackRec   = -56 // Sample: flow u32, seq u32, tx u64, rx u64
	recFlow    = stackRec
	recSeq     = stackRec + 4
	recTx      = stackRec + 8
	recRx      = stackRec + 16
	sampleSize = 24
)

// be16 is v as a little-endian load of its big-endian bytes reads it.
func be16(v uint16) int32 { return int32(bits.ReverseBytes16(v)) }

// maps are the program's maps.
type maps struct {
	global, config, flows, windows, ring *ebpf.Map
}

// instructions returns the sink's XDP program for cfg:
//
//	g = global[cpu]; g.packets++; g.bytes += len + 4
//	parse Ethernet (0–2 tags), IPv4/IPv6, UDP      // short: malformed, pass
//	if not UDP or the payload lacks the magic: g.foreign++; return XDP_PASS
//	if header.run != config.run: g.stale++; return XDP_DROP
//	if header.flow >= Flows: g.unknown++; return XDP_DROP
//	f = flows[flow][cpu]; w = windows[flow][cpu]
//	g.first = g.first ?: bpf_ktime_get_ns()
//	f.received++; f.bytes += len + 4; f.dscp = tos >> 2; if tos&3 == CE: f.ce++
//	q = f.top == 0 ? seq : top + (int32)(seq − (u32)top)   // top = f.top − 1
//	if f.top == 0 || q > top:  f.top = q + 1; f.unique++; set(q)
//	elif q < 0 || top − q >= Window: f.late++; f.reordered++; f.unique++
//	elif seen(q): f.dup++
//	else: set(q); f.reordered++; f.unique++
//	if xorshift64(g.rand) < Sample·2^64: now = g.last = bpf_ktime_get_ns()
//		ringbuf_output({flow, seq, tx, now}) ? g.samplesLost++ : g.sampled++
//	return XDP_DROP
//
// where block b = q/64 lives at w[b mod 2·Window/64] with tag b+1, and
// set(q) first empties a block of another tag.
func instructions(cfg *Config, m maps) asm.Instructions {
	// inc adds one to the u64 at off of base.
	inc := func(base asm.Register, off int16) asm.Instructions {
		return asm.Instructions{
			asm.LoadMem(asm.R1, base, off, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(base, off, asm.R1, asm.DWord),
		}
	}
	// incAt is inc, labelled.
	incAt := func(label string, base asm.Register, off int16) asm.Instructions {
		is := inc(base, off)
		is[0] = is[0].WithSymbol(label)
		return is
	}
	lookup := func(mp *ebpf.Map, key int16) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, int32(key)),
			asm.LoadMapPtr(asm.R1, mp.FD()),
			asm.FnMapLookupElem.Call(),
		}
	}
	var ins asm.Instructions
	add := func(is ...asm.Instruction) { ins = append(ins, is...) }
	addAll := func(iss ...asm.Instructions) {
		for _, is := range iss {
			ins = append(ins, is...)
		}
	}

	// The global counters: every frame.
	add(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, stackKey, 0, asm.Word),
	)
	addAll(lookup(m.global, stackKey))
	add(
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word), // ctx->data
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word), // ctx->data_end
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Sub.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 4), // the FCS
		asm.StoreMem(asm.RFP, stackLen, asm.R1, asm.DWord),
		asm.LoadMem(asm.R2, asm.R9, globalBytes, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R9, globalBytes, asm.R2, asm.DWord),
	)
	addAll(inc(asm.R9, globalPackets))

	// Ethernet and up to two VLAN tags; R3 = the L3 header, R1 its type.
	add(
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, ethLen),
		asm.JGT.Reg(asm.R3, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R7, 12, asm.Half),
		asm.JEq.Imm(asm.R1, be16(etherVLAN), "vlan1"),
		asm.JNE.Imm(asm.R1, be16(etherQinQ), "l3"),
		asm.Mov.Reg(asm.R3, asm.R7).WithSymbol("vlan1"),
		asm.Add.Imm(asm.R3, ethLen+vlanLen),
		asm.JGT.Reg(asm.R3, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R7, ethLen+2, asm.Half),
		asm.JEq.Imm(asm.R1, be16(etherVLAN), "vlan2"),
		asm.JNE.Imm(asm.R1, be16(etherQinQ), "l3"),
		asm.Mov.Reg(asm.R3, asm.R7).WithSymbol("vlan2"),
		asm.Add.Imm(asm.R3, ethLen+2*vlanLen),
		asm.JGT.Reg(asm.R3, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R7, ethLen+vlanLen+2, asm.Half),
		asm.JEq.Imm(asm.R1, be16(etherIPv4), "ipv4").WithSymbol("l3"),
		asm.JEq.Imm(asm.R1, be16(etherIPv6), "ipv6"),
		asm.Ja.Label("foreign"),

		// IPv4: R4 = the UDP header.
		asm.Mov.Reg(asm.R4, asm.R3).WithSymbol("ipv4"),
		asm.Add.Imm(asm.R4, ipv4Len),
		asm.JGT.Reg(asm.R4, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R3, 0, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 4),
		asm.JNE.Imm(asm.R2, 4, "malformed"),
		asm.And.Imm(asm.R1, 0xf),
		asm.LSh.Imm(asm.R1, 2),
		asm.JLT.Imm(asm.R1, ipv4Len, "malformed"),
		asm.LoadMem(asm.R2, asm.R3, 9, asm.Byte),
		asm.JNE.Imm(asm.R2, protoUDP, "foreign"),
		asm.LoadMem(asm.R2, asm.R3, ipv4FragOff, asm.Half),
		asm.And.Imm(asm.R2, be16(0x3fff)),
		asm.JNE.Imm(asm.R2, 0, "foreign"),
		asm.LoadMem(asm.R2, asm.R3, 1, asm.Byte),
		asm.StoreMem(asm.RFP, stackTOS, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.R3),
		asm.Add.Reg(asm.R4, asm.R1),
		asm.Ja.Label("udp"),

		// IPv6: UDP as the next header.
		asm.Mov.Reg(asm.R4, asm.R3).WithSymbol("ipv6"),
		asm.Add.Imm(asm.R4, ipv6Len),
		asm.JGT.Reg(asm.R4, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R3, 0, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 4),
		asm.JNE.Imm(asm.R2, 6, "malformed"),
		asm.LoadMem(asm.R2, asm.R3, 6, asm.Byte),
		asm.JNE.Imm(asm.R2, protoUDP, "foreign"),
		asm.And.Imm(asm.R1, 0xf),
		asm.LSh.Imm(asm.R1, 4),
		asm.LoadMem(asm.R2, asm.R3, 1, asm.Byte),
		asm.RSh.Imm(asm.R2, 4),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.RFP, stackTOS, asm.R1, asm.DWord),

		// UDP and the generator's header, at R4+8.
		asm.Mov.Reg(asm.R5, asm.R4).WithSymbol("udp"),
		asm.Add.Imm(asm.R5, udpLen),
		asm.JGT.Reg(asm.R5, asm.R8, "malformed"),
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.Add.Imm(asm.R5, udpLen+2),
		asm.JGT.Reg(asm.R5, asm.R8, "foreign"),
		asm.LoadMem(asm.R1, asm.R4, udpLen, asm.Half),
		asm.JNE.Imm(asm.R1, be16(cfg.Magic), "foreign"),
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.Add.Imm(asm.R5, udpLen+headerLen),
		asm.JGT.Reg(asm.R5, asm.R8, "malformed"),
		asm.LoadMem(asm.R1, asm.R4, udpLen+headerRun, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.RFP, stackRun, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R4, udpLen+headerFlow, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.RFP, stackFlow, asm.R1, asm.Word),
		asm.StoreMem(asm.RFP, recFlow, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R4, udpLen+headerSeq, asm.Word),
		asm.HostTo(asm.BE, asm.R1, asm.Word),
		asm.StoreMem(asm.RFP, recSeq, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R4, udpLen+headerTime, asm.DWord),
		asm.HostTo(asm.BE, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, recTx, asm.R1, asm.DWord),
	)

	// Its run and flow.
	addAll(lookup(m.config, stackKey))
	add(
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, stackRun, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "stale"),
		asm.LoadMem(asm.R1, asm.RFP, stackFlow, asm.Word),
		asm.JGE.Imm(asm.R1, int32(cfg.Flows), "unknown"),
	)
	addAll(lookup(m.flows, stackFlow))
	add(
		asm.JEq.Imm(asm.R0, 0, "unknown"),
		asm.Mov.Reg(asm.R7, asm.R0),
	)
	addAll(lookup(m.windows, stackFlow))
	add(
		asm.JEq.Imm(asm.R0, 0, "unknown"),
		asm.Mov.Reg(asm.R8, asm.R0),

		// The receive time of the first frame. Others read no clock:
		// a helper call costs 30–40 ns here (kvm-clock, return-thunk
		// mitigations), more than the rest of the program.
		asm.LoadMem(asm.R1, asm.R9, globalFirst, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, "counters"),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R9, globalFirst, asm.R0, asm.DWord),
	)

	// The flow's counters.
	addAll(incAt("counters", asm.R7, flowReceived))
	add(
		asm.LoadMem(asm.R1, asm.RFP, stackLen, asm.DWord),
		asm.LoadMem(asm.R2, asm.R7, flowBytes, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R7, flowBytes, asm.R2, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stackTOS, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 2),
		asm.StoreMem(asm.R7, flowDSCP, asm.R2, asm.DWord),
		asm.And.Imm(asm.R1, 3),
		asm.JNE.Imm(asm.R1, 3, "seq"),
	)
	addAll(inc(asm.R7, flowCE))

	// The sequence number: R3 = q, R2 = top.
	w := int32(cfg.Window)
	add(
		asm.LoadMem(asm.R1, asm.RFP, recSeq, asm.Word).WithSymbol("seq"),
		asm.LoadMem(asm.R2, asm.R7, flowTop, asm.DWord),
		asm.Mov.Reg(asm.R3, asm.R1),
		asm.JEq.Imm(asm.R2, 0, "advance"),
		asm.Sub.Imm(asm.R2, 1),
		asm.Sub.Reg(asm.R3, asm.R2),
		asm.LSh.Imm(asm.R3, 32),
		asm.ArSh.Imm(asm.R3, 32),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.JSGT.Reg(asm.R3, asm.R2, "advance"),
		asm.JSLT.Imm(asm.R3, 0, "late"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Sub.Reg(asm.R4, asm.R3),
		asm.JGE.Imm(asm.R4, w, "late"),
	)
	// block: R5 = its slot in the window, R4 = its tag, R1 = q's bit.
	block := func(label string) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R4, asm.R3).WithSymbol(label),
			asm.RSh.Imm(asm.R4, 6),
			asm.Mov.Reg(asm.R5, asm.R4),
			asm.And.Imm(asm.R5, int32(cfg.blocks()-1)),
			asm.LSh.Imm(asm.R5, 4),
			asm.Add.Reg(asm.R5, asm.R8),
			asm.Add.Imm(asm.R4, 1),
			asm.Mov.Imm(asm.R1, 1),
			asm.Mov.Reg(asm.R2, asm.R3),
			asm.And.Imm(asm.R2, 63),
			asm.LSh.Reg(asm.R1, asm.R2),
		}
	}
	// In the window: seen?
	addAll(block("window"))
	add(
		asm.LoadMem(asm.R0, asm.R5, blockTag, asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R4, "reordered_new"),
		asm.LoadMem(asm.R0, asm.R5, blockBits, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.And.Reg(asm.R2, asm.R1),
		asm.JNE.Imm(asm.R2, 0, "dup"),
		asm.Or.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R5, blockBits, asm.R0, asm.DWord),
		asm.Ja.Label("reordered"),
		asm.StoreMem(asm.R5, blockTag, asm.R4, asm.DWord).WithSymbol("reordered_new"),
		asm.StoreMem(asm.R5, blockBits, asm.R1, asm.DWord),
	)
	addAll(incAt("reordered", asm.R7, flowReordered))
	addAll(inc(asm.R7, flowUnique))
	add(asm.Ja.Label("sample"))

	addAll(incAt("dup", asm.R7, flowDup))
	add(asm.Ja.Label("sample"))

	addAll(incAt("late", asm.R7, flowLate))
	addAll(inc(asm.R7, flowReordered), inc(asm.R7, flowUnique))
	add(asm.Ja.Label("sample"))

	// Above top (or the first): R3 = q becomes top.
	add(
		asm.Mov.Reg(asm.R1, asm.R3).WithSymbol("advance"),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, flowTop, asm.R1, asm.DWord),
	)
	addAll(inc(asm.R7, flowUnique), block("set"))
	add(
		asm.LoadMem(asm.R0, asm.R5, blockTag, asm.DWord),
		asm.JEq.Reg(asm.R0, asm.R4, "setbit"),
		asm.StoreMem(asm.R5, blockTag, asm.R4, asm.DWord),
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.Ja.Label("setbits"),
		asm.LoadMem(asm.R0, asm.R5, blockBits, asm.DWord).WithSymbol("setbit"),
		asm.Or.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R5, blockBits, asm.R0, asm.DWord).WithSymbol("setbits"),
	)

	// Sample the latency.
	switch {
	case cfg.Sample == 0:
		add(asm.Ja.Label("drop").WithSymbol("sample"))
	case cfg.Sample < 1:
		// xorshift64 (Marsaglia 2003) on the CPU's own state, seeded by
		// user space: no helper call.
		add(
			asm.LoadMem(asm.R1, asm.R9, globalRand, asm.DWord).WithSymbol("sample"),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.LSh.Imm(asm.R2, 13),
			asm.Xor.Reg(asm.R1, asm.R2),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.RSh.Imm(asm.R2, 7),
			asm.Xor.Reg(asm.R1, asm.R2),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.LSh.Imm(asm.R2, 17),
			asm.Xor.Reg(asm.R1, asm.R2),
			asm.StoreMem(asm.R9, globalRand, asm.R1, asm.DWord),
			asm.RSh.Imm(asm.R1, 32),
			asm.LoadImm(asm.R2, int64(cfg.threshold()), asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R2, "drop"),
		)
	}
	if cfg.Sample > 0 {
		add(
			asm.FnKtimeGetNs.Call(),
			asm.StoreMem(asm.RFP, recRx, asm.R0, asm.DWord),
			asm.StoreMem(asm.R9, globalLast, asm.R0, asm.DWord),
			asm.LoadMapPtr(asm.R1, m.ring.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, stackRec),
			asm.Mov.Imm(asm.R3, sampleSize),
			asm.Mov.Imm(asm.R4, ringNoWakeup),
			asm.FnRingbufOutput.Call(),
			asm.JEq.Imm(asm.R0, 0, "sampled"),
		)
		if cfg.Sample == 1 {
			ins[len(ins)-10] = ins[len(ins)-10].WithSymbol("sample")
		}
		addAll(inc(asm.R9, globalSamplesLost))
		add(asm.Ja.Label("drop"))
		addAll(incAt("sampled", asm.R9, globalSampled))
		add(asm.Ja.Label("drop"))
	}

	// Exits.
	addAll(incAt("stale", asm.R9, globalStale))
	add(asm.Ja.Label("drop"))
	addAll(incAt("unknown", asm.R9, globalUnknown))
	add(asm.Ja.Label("drop"))
	addAll(incAt("malformed", asm.R9, globalMalformed))
	addAll(incAt("foreign", asm.R9, globalForeign))
	add(
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("drop"),
		asm.Return(),
	)
	return ins
}
