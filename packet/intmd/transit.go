package intmd

import (
	"encoding/binary"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Result is what a transit hop did with a packet's INT headers.
type Result uint8

// Results of Transit.Push.
const (
	Added    Result = iota // the hop's record is on top of the stack
	NoRoom                 // the record would grow the packet past the limit (or the shim's Length): M set, no record
	HopLimit               // the remaining hop count was 0: E set, no record
	NumResults
)

var resultNames = [NumResults]string{"added", "no_room", "hop_limit"}

// String returns the result's name as telemetry labels it.
func (r Result) String() string {
	if r < NumResults {
		return resultNames[r]
	}
	return "unknown"
}

// Transit is a parsed packet's INT headers, as a transit hop opens them
// to add its record.
type Transit struct {
	Header
	shim int // frame offset of the shim
}

// Open parses the INT headers of d, a parsed UDP packet (IPv4 or IPv6)
// whose UDP payload starts with them, for Push. The UDP length must agree
// with the IP length, so that the lengths Push fixes stay consistent. It
// does not allocate.
func Open(d *packet.Desc) (Transit, error) {
	if d.Proto != packet.ProtoUDP || d.L4Off == 0 || (d.L3 != packet.L3IPv4 && d.L3 != packet.L3IPv6) || uint(d.Len) > uint(cap(d.Buf)) {
		return Transit{}, ErrShort
	}
	f := d.Buf[:d.Len]
	l4 := int(d.L4Off)
	ipEnd := ipEnd(d, f)
	if l4+8 > ipEnd || ipEnd > len(f) {
		return Transit{}, ErrShort
	}
	if int(binary.BigEndian.Uint16(f[l4+4:])) != ipEnd-l4 {
		return Transit{}, ErrLength
	}
	h, _, err := Parse(f[l4+8 : ipEnd])
	if err != nil {
		return Transit{}, err
	}
	return Transit{Header: h, shim: l4 + 8}, nil
}

// ipEnd returns the frame offset where d's IP packet ends by its own
// length field (Parse checked that it fits the frame).
func ipEnd(d *packet.Desc, f []byte) int {
	l3 := int(d.L3Off)
	if d.L3 == packet.L3IPv4 {
		return l3 + int(binary.BigEndian.Uint16(f[l3+2:]))
	}
	return l3 + 40 + int(binary.BigEndian.Uint16(f[l3+4:]))
}

// Push adds this hop's record, made from m, on top of the stack of d,
// whose INT headers t opened, and fixes the lengths and checksums (package
// doc). It grows d.Len by the record's length unless that would exceed
// limit bytes (or d.Buf): then, or when the remaining hop count is 0, it
// sets the header's M (or E) flag instead and reports why. It does not
// allocate.
func (t *Transit) Push(d *packet.Desc, m *Metadata, limit int) Result {
	f := d.Buf[:d.Len]
	n := t.RecordLen()
	md := t.shim + ShimLen
	if t.RemainingHops == 0 {
		t.setFlag(d, f, FlagE)
		return HopLimit
	}
	limit = min(limit, cap(d.Buf))
	if d.Len+n > limit || int(t.Length)+int(t.HopML) > MaxLength || ipEnd(d, f)-int(d.L3Off)+n > 0xffff {
		t.setFlag(d, f, FlagM)
		return NoRoom
	}
	top := t.shim + HeaderLen
	f = d.Buf[:d.Len+n]
	copy(f[top+n:], f[top:d.Len]) // the stack grows on top: the rest moves up
	r := f[top : top+n]
	m.put(&t.Header, r)
	d.Len += n

	// Ones' complement sum of the changes the UDP checksum covers: the
	// record's words, the shim's length word, the remaining hop count's
	// word, and the UDP length in both the pseudo-header and the header.
	// The rest of the datagram moved by a multiple of 4 bytes, so its
	// words, and the zero pad of an odd last byte, sum as before.
	l4 := int(d.L4Off)
	sum := sum32(r) // n is a multiple of 4
	w0 := binary.BigEndian.Uint16(f[t.shim:])
	t.Length += t.HopML
	f[t.shim+1] = t.Length
	sum += uint32(^w0) + uint32(binary.BigEndian.Uint16(f[t.shim:]))
	w1 := binary.BigEndian.Uint16(f[md+2:])
	t.RemainingHops--
	f[md+3] = t.RemainingHops
	sum += uint32(^w1) + uint32(binary.BigEndian.Uint16(f[md+2:]))
	ul := binary.BigEndian.Uint16(f[l4+4:])
	binary.BigEndian.PutUint16(f[l4+4:], ul+uint16(n))
	sum += 2 * (uint32(^ul) + uint32(ul+uint16(n)))
	updateUDP(d, f, sum)

	l3 := int(d.L3Off)
	if d.L3 == packet.L3IPv4 {
		tl := binary.BigEndian.Uint16(f[l3+2:])
		binary.BigEndian.PutUint16(f[l3+2:], tl+uint16(n))
		hc := binary.BigEndian.Uint16(f[l3+10:])
		binary.BigEndian.PutUint16(f[l3+10:], update(hc, uint32(^tl)+uint32(tl+uint16(n))))
	} else {
		pl := binary.BigEndian.Uint16(f[l3+4:])
		binary.BigEndian.PutUint16(f[l3+4:], pl+uint16(n))
	}
	return Added
}

// sum32 returns the ones' complement sum of the 16-bit words of b, whose
// length is a multiple of 4, folded to 32 bits (words added 32 bits at a
// time: the carries fold back in at the end).
func sum32(b []byte) uint32 {
	var s uint64
	for ; len(b) >= 4; b = b[4:] {
		s += uint64(binary.BigEndian.Uint32(b))
	}
	s = s&0xffffffff + s>>32
	s = s&0xffffffff + s>>32
	return uint32(s>>16) + uint32(s&0xffff)
}

// setFlag sets flag in the INT-MD header of d's frame f, with the UDP
// checksum.
func (t *Transit) setFlag(d *packet.Desc, f []byte, flag uint8) {
	md := t.shim + ShimLen
	if f[md]&flag != 0 {
		return
	}
	w := binary.BigEndian.Uint16(f[md:])
	f[md] |= flag
	t.Flags |= flag
	updateUDP(d, f, uint32(^w)+uint32(binary.BigEndian.Uint16(f[md:])))
}

// updateUDP adds sum, a ones' complement sum of changes, to the UDP
// checksum of d's frame f: none over IPv4 stays none, and a result of 0 is
// sent as 0xffff (RFC 768).
func updateUDP(d *packet.Desc, f []byte, sum uint32) {
	at := int(d.L4Off) + 6
	hc := binary.BigEndian.Uint16(f[at:])
	if hc == 0 && d.L3 == packet.L3IPv4 {
		return
	}
	c := update(hc, sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(f[at:], c)
}

// update returns checksum hc after changes whose ones' complement sum is
// sum (each change adds ~old + new, RFC 1624 Eq. 3).
func update(hc uint16, sum uint32) uint16 {
	s := uint64(^hc) + uint64(sum)
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
