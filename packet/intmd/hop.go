package intmd

import (
	"encoding/binary"
	"math/bits"
)

// Hop is one hop's record, decoded: the fields its instructions asked for
// (Instructions, DSInstr say which are set). Occupancies are in bytes,
// times in ns of the hop's clock.
type Hop struct {
	Instructions, DSInstr uint16 // the fields present

	NodeID            uint32
	InPort, OutPort   uint32 // L1 (16-bit) or L2 (32-bit) port IDs; L2's when both are present
	HopLatency        uint32
	QueueID           uint8
	QueueBytes        uint32 // 24 bits
	IngressTS         uint64
	EgressTS          uint64
	TxUtil            uint32
	BufferID          uint8
	BufferBytes       uint32 // 24 bits
	TxBytes           uint64
	LinkRateKbps      uint32
	PortBytes         uint32
	Unknown, Reserved int // bytes of fields this package does not decode: another domain's, reserved bits
}

// LinkRate returns the link's rate in bit/s.
func (h *Hop) LinkRate() int64 { return int64(h.LinkRateKbps) * 1000 }

// Hop decodes record i of stack (0 is the newest, the last hop's), which
// Parse returned with h; ok is false when i is outside the stack.
func (h *Header) Hop(stack []byte, i int) (hop Hop, ok bool) {
	n := h.RecordLen()
	if n == 0 || i < 0 || (i+1)*n > len(stack) {
		return Hop{}, false
	}
	r := stack[i*n : (i+1)*n]
	hop.Instructions = h.Instructions
	at := 0
	// field returns the next k bytes of the record, or nil past its end
	// (a record of another domain, shorter than the standard fields: Check
	// rules that out, but the decoder does not rely on it).
	field := func(k int) []byte {
		if at+k > len(r) {
			at = len(r)
			return nil
		}
		f := r[at : at+k]
		at += k
		return f
	}
	for bit := range 16 {
		m := uint16(0x8000) >> bit
		if h.Instructions&m == 0 {
			continue
		}
		f := field(instrLen[bit])
		if f == nil {
			continue
		}
		switch m {
		case InstrNodeID:
			hop.NodeID = binary.BigEndian.Uint32(f)
		case InstrL1Ports:
			hop.InPort, hop.OutPort = uint32(binary.BigEndian.Uint16(f)), uint32(binary.BigEndian.Uint16(f[2:]))
		case InstrHopLatency:
			hop.HopLatency = binary.BigEndian.Uint32(f)
		case InstrQueue:
			hop.QueueID, hop.QueueBytes = f[0], uint32(f[1])<<16|uint32(f[2])<<8|uint32(f[3])
		case InstrIngressTS:
			hop.IngressTS = binary.BigEndian.Uint64(f)
		case InstrEgressTS:
			hop.EgressTS = binary.BigEndian.Uint64(f)
		case InstrL2Ports:
			hop.InPort, hop.OutPort = binary.BigEndian.Uint32(f), binary.BigEndian.Uint32(f[4:])
		case InstrTxUtil:
			hop.TxUtil = binary.BigEndian.Uint32(f)
		case InstrBuffer:
			hop.BufferID, hop.BufferBytes = f[0], uint32(f[1])<<16|uint32(f[2])<<8|uint32(f[3])
		default:
			hop.Reserved += len(f)
		}
	}
	if h.Domain == DomainID {
		hop.DSInstr = h.DSInstr
		for bit := range dsLen {
			m := uint16(0x8000) >> bit
			if h.DSInstr&m == 0 {
				continue
			}
			f := field(dsLen[bit])
			if f == nil {
				continue
			}
			switch m {
			case DSTxBytes:
				hop.TxBytes = binary.BigEndian.Uint64(f)
			case DSLinkRate:
				hop.LinkRateKbps = binary.BigEndian.Uint32(f)
			case DSPortBytes:
				hop.PortBytes = binary.BigEndian.Uint32(f)
			}
		}
	}
	hop.Unknown = len(r) - at
	return hop, true
}

// Metadata is what a transit hop knows of a packet as it leaves: the
// values its record may carry. Push writes the ones the packet's
// instructions ask for.
type Metadata struct {
	NodeID      uint32
	InPort      uint32 // ingress port ID
	OutPort     uint32 // egress port ID
	QueueID     uint8
	QueueBytes  int64 // the packet's queue after it left, bytes
	IngressTS   int64 // ns
	EgressTS    int64 // ns
	BufferID    uint8
	BufferBytes int64  // the buffer (pool) after the packet left, bytes
	TxBytes     uint64 // the port's bytes sent before this packet
	LinkRate    int64  // bit/s
	PortBytes   int64  // the port's queues after the packet left, bytes
}

// put writes m's record for header h into r, which is h.RecordLen() bytes.
func (m *Metadata) put(h *Header, r []byte) {
	at := 0
	for x := h.Instructions; x != 0; { // the set bits, bit 0 (the most significant) first
		bit := bits.LeadingZeros16(x)
		mask := uint16(0x8000) >> bit
		x &^= mask
		f := r[at : at+instrLen[bit]]
		at += instrLen[bit]
		switch mask {
		case InstrNodeID:
			binary.BigEndian.PutUint32(f, m.NodeID)
		case InstrL1Ports:
			binary.BigEndian.PutUint16(f, uint16(min(m.InPort, 0xffff)))
			binary.BigEndian.PutUint16(f[2:], uint16(min(m.OutPort, 0xffff)))
		case InstrHopLatency:
			binary.BigEndian.PutUint32(f, sat32(m.EgressTS-m.IngressTS))
		case InstrQueue:
			binary.BigEndian.PutUint32(f, uint32(m.QueueID)<<24|sat24(m.QueueBytes))
		case InstrIngressTS:
			binary.BigEndian.PutUint64(f, uint64(m.IngressTS))
		case InstrEgressTS:
			binary.BigEndian.PutUint64(f, uint64(m.EgressTS))
		case InstrL2Ports:
			binary.BigEndian.PutUint32(f, m.InPort)
			binary.BigEndian.PutUint32(f[4:], m.OutPort)
		case InstrBuffer:
			binary.BigEndian.PutUint32(f, uint32(m.BufferID)<<24|sat24(m.BufferBytes))
		default: // TX utilisation, reserved, checksum complement: not kept
			binary.BigEndian.PutUint32(f, 0xffffffff)
		}
	}
	if h.Domain == DomainID {
		for x := h.DSInstr & dsKnown; x != 0; {
			bit := bits.LeadingZeros16(x)
			mask := uint16(0x8000) >> bit
			x &^= mask
			f := r[at : at+dsLen[bit]]
			at += dsLen[bit]
			switch mask {
			case DSTxBytes:
				binary.BigEndian.PutUint64(f, m.TxBytes)
			case DSLinkRate:
				binary.BigEndian.PutUint32(f, sat32(m.LinkRate/1000))
			case DSPortBytes:
				binary.BigEndian.PutUint32(f, sat32(m.PortBytes))
			}
		}
	}
	for i := at; i < len(r); i++ {
		r[i] = 0xff // another domain's DS fields
	}
}

// sat24 returns v clamped to [0, 2²⁴ − 1].
func sat24(v int64) uint32 { return uint32(min(max(v, 0), 1<<24-1)) }

// sat32 returns v clamped to [0, 2³² − 1].
func sat32(v int64) uint32 { return uint32(min(max(v, 0), 1<<32-1)) }
