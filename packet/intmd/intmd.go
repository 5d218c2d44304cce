package intmd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Sizes and limits of the layout (package doc).
const (
	ShimLen     = 4               // the shim header, bytes
	MDLen       = 12              // the INT-MD metadata header, bytes
	HeaderLen   = ShimLen + MDLen // the INT headers before the stack
	MaxLength   = 255             // the shim's Length, words: headers and stack
	MaxHopML    = 31              // words per hop record
	MaxHops     = 255             // Remaining Hop Count
	MaxStackLen = 4*MaxLength - HeaderLen
)

// Type of the shim: INT-MD (§5.6.2; 2 is INT-Destination, 3 INT-MX).
const TypeMD = 1

// Version of the INT-MD metadata header.
const Version = 2

// Next-protocol types of the shim (NPT): what its last two bytes hold.
const (
	NPTPayload = 0 // the UDP payload follows unchanged; bytes 2–3 reserved, with the original DSCP
	NPTPort    = 1 // bytes 2–3: the original UDP destination port
	NPTProto   = 2 // byte 3: the IP protocol
)

// Flags of the INT-MD header's first byte.
const (
	FlagD = 1 << 3 // discard (INT-MD leaves it to the sink)
	FlagE = 1 << 2 // a hop found no remaining hop count
	FlagM = 1 << 1 // a hop found no room below its egress MTU
)

// Instruction bits (§5.7), as their 16-bit bitmap holds them: bit 0 is the
// most significant.
const (
	InstrNodeID     uint16 = 0x8000 >> iota // node ID, 4 bytes
	InstrL1Ports                            // L1 ingress and egress port IDs, 2 + 2
	InstrHopLatency                         // hop latency, 4
	InstrQueue                              // queue ID and occupancy, 1 + 3
	InstrIngressTS                          // ingress timestamp, 8
	InstrEgressTS                           // egress timestamp, 8
	InstrL2Ports                            // L2 ingress and egress port IDs, 4 + 4
	InstrTxUtil                             // egress TX utilisation, 4
	InstrBuffer                             // buffer ID and occupancy, 1 + 3
)

// InstrChecksum is instruction bit 15, the checksum complement.
const InstrChecksum uint16 = 1

// instrReserved are instruction bits 9–14, 4 bytes each.
const instrReserved uint16 = 0x007e

// DomainID is the domain specific ID of ecnswitch's DS instructions.
const DomainID = 0x4543 // "EC"

// DS instruction bits of DomainID, bit 0 the most significant.
const (
	DSTxBytes   uint16 = 0x8000 >> iota // TX bytes of the egress port, 8
	DSLinkRate                          // egress link rate in kbit/s, 4
	DSPortBytes                         // port occupancy in bytes, 4
)

// dsKnown are the DS instructions of DomainID this package knows.
const dsKnown = DSTxBytes | DSLinkRate | DSPortBytes

// HPCC's per-hop fields (package doc): qlen, ts, txBytes and B.
const (
	HPCCInstructions   = InstrQueue | InstrEgressTS
	HPCCDSInstructions = DSTxBytes | DSLinkRate
)

// instrLen are the bytes of each instruction bit's field, bit 0 first:
// 4, but 8 for bits 4–6 (instrLong).
var instrLen = [16]int{4, 4, 4, 4, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4}

// instrLong are the instruction bits whose fields are 8 bytes.
const instrLong = InstrIngressTS | InstrEgressTS | InstrL2Ports

// dsLen are the bytes of DomainID's DS instruction bits, bit 0 first: 4,
// but 8 for TX bytes.
var dsLen = [3]int{8, 4, 4}

// RecordLen returns the bytes of one hop's record for instructions instr
// and, of domain DomainID, DS instructions ds; ds bits this package does
// not know count nothing (a record of another domain sizes them by Hop ML).
func RecordLen(instr, ds uint16) int {
	ds &= dsKnown
	return 4 * (bits.OnesCount16(instr) + bits.OnesCount16(instr&instrLong) + bits.OnesCount16(ds) + bits.OnesCount16(ds&DSTxBytes))
}

// Header is the shim and the INT-MD metadata header.
type Header struct {
	NPT    uint8  // next-protocol type
	Length uint8  // shim, INT-MD header and stack, in 4-byte words
	Next   uint16 // the shim's last two bytes (NPT says what they hold)

	Flags         uint8 // FlagD, FlagE, FlagM
	HopML         uint8 // words per hop record, 1..MaxHopML
	RemainingHops uint8 // hops that may still insert a record
	Instructions  uint16
	Domain        uint16 // domain specific ID
	DSInstr       uint16
	DSFlags       uint16
}

// NewHeader returns the headers an INT source writes for a packet that
// carries no record yet: INT-MD asking every hop, up to hops of them, for
// instructions instr and DomainID's ds.
func NewHeader(instr, ds uint16, hops int) (Header, error) {
	n := RecordLen(instr, ds)
	if ds&^dsKnown != 0 {
		return Header{}, fmt.Errorf("intmd: DS instructions %#04x: this package knows %#04x", ds, dsKnown)
	}
	if n == 0 || n > 4*MaxHopML {
		return Header{}, fmt.Errorf("intmd: instructions %#04x, DS %#04x: a record of %d bytes, want 4..%d", instr, ds, n, 4*MaxHopML)
	}
	if hops < 1 || hops > MaxHops {
		return Header{}, fmt.Errorf("intmd: %d hops: want 1..%d", hops, MaxHops)
	}
	h := Header{Length: HeaderLen / 4, HopML: uint8(n / 4), RemainingHops: uint8(hops), Instructions: instr}
	if ds != 0 {
		h.Domain, h.DSInstr = DomainID, ds
	}
	return h, nil
}

// RecordLen returns the bytes of one hop's record.
func (h *Header) RecordLen() int { return 4 * int(h.HopML) }

// StackLen returns the bytes of the metadata stack the shim's Length
// leaves after the headers.
func (h *Header) StackLen() int { return 4*int(h.Length) - HeaderLen }

// Hops returns how many records the stack holds.
func (h *Header) Hops() int {
	if h.HopML == 0 {
		return 0
	}
	return h.StackLen() / h.RecordLen()
}

// Room returns how many bytes a source must leave in a packet whose INT
// headers are h, so that every hop h allows can add its record.
func (h *Header) Room() int { return int(h.RemainingHops) * h.RecordLen() }

// Errors of Parse.
var (
	ErrShort   = errors.New("intmd: shorter than the INT headers")
	ErrType    = errors.New("intmd: the shim is not INT-MD")
	ErrVersion = errors.New("intmd: not INT-MD version 2")
	ErrLength  = errors.New("intmd: the shim's length disagrees with the headers or the packet")
	ErrHopML   = errors.New("intmd: hop ML disagrees with the instructions")
)

// Parse decodes the INT headers at the start of b, a UDP payload, and
// returns them with their metadata stack (newest record first), a slice of
// b. The stack must hold whole records of Hop ML words, and Hop ML must
// fit the instructions (Check). It does not allocate.
func Parse(b []byte) (Header, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, ErrShort
	}
	if t := b[0] >> 4; t != TypeMD {
		return Header{}, nil, ErrType
	}
	if v := b[4] >> 4; v != Version {
		return Header{}, nil, ErrVersion
	}
	h := Header{
		NPT:           b[0] >> 2 & 3,
		Length:        b[1],
		Next:          binary.BigEndian.Uint16(b[2:]),
		Flags:         b[4] & 0x0e,
		HopML:         b[6] & 0x1f,
		RemainingHops: b[7],
		Instructions:  binary.BigEndian.Uint16(b[8:]),
		Domain:        binary.BigEndian.Uint16(b[10:]),
		DSInstr:       binary.BigEndian.Uint16(b[12:]),
		DSFlags:       binary.BigEndian.Uint16(b[14:]),
	}
	if err := h.Check(); err != nil {
		return Header{}, nil, err
	}
	n := 4 * int(h.Length)
	if n < HeaderLen || n > len(b) || (n-HeaderLen)%h.RecordLen() != 0 {
		return Header{}, nil, ErrLength
	}
	return h, b[HeaderLen:n], nil
}

// Check reports whether Hop ML fits the instructions: at least 1 word, and
// exactly their fields when the domain is DomainID, else at least the
// standard fields (the other domain's DS fields take the rest).
func (h *Header) Check() error {
	if h.HopML == 0 {
		return ErrHopML
	}
	std := RecordLen(h.Instructions, 0)
	switch n := h.RecordLen(); {
	case h.Domain == DomainID && (h.DSInstr&^dsKnown != 0 || n != std+RecordLen(0, h.DSInstr)):
		return ErrHopML
	case n < std:
		return ErrHopML
	}
	return nil
}

// Put writes h's 16 bytes of headers at the start of b, which must be at
// least that long; the reserved bits are 0.
func (h *Header) Put(b []byte) {
	_ = b[HeaderLen-1]
	b[0] = TypeMD<<4 | h.NPT&3<<2
	b[1] = h.Length
	binary.BigEndian.PutUint16(b[2:], h.Next)
	b[4] = Version<<4 | h.Flags&0x0e
	b[5] = 0
	b[6] = h.HopML & 0x1f
	b[7] = h.RemainingHops
	binary.BigEndian.PutUint16(b[8:], h.Instructions)
	binary.BigEndian.PutUint16(b[10:], h.Domain)
	binary.BigEndian.PutUint16(b[12:], h.DSInstr)
	binary.BigEndian.PutUint16(b[14:], h.DSFlags)
}
