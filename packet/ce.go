package packet

import "encoding/binary"

// SetCE marks d's frame Congestion Experienced (RFC 3168 §5) in place and
// reports whether the packet now carries CE. d must have been parsed.
//
// An ECT(0) or ECT(1) packet has both ECN bits set: for IPv4 in the TOS byte,
// with the header checksum updated incrementally by RFC 1624 Eq. 3,
//
//	HC' = ~(~HC + ~m + m')
//
// where m and m' are the 16-bit header word holding the TOS byte before and
// after, in ones' complement arithmetic; for IPv6 in the traffic class, which
// no checksum covers. d.ECN becomes CE. Nothing else in the frame changes.
//
// A packet already carrying CE is left alone and reports true. A Not-ECT
// packet, a non-IP frame, or a descriptor whose L3Off does not fit the frame
// is left alone and reports false: RFC 3168 §5 forbids marking Not-ECT, and
// the caller decides whether to drop it instead.
func SetCE(d *Desc) bool {
	if uint(d.Len) > uint(cap(d.Buf)) {
		return false
	}
	f := d.Buf[:d.Len]
	off := int(d.L3Off)
	switch d.L3 {
	case L3IPv4:
		if off+ipv4MinLen > len(f) {
			return false
		}
		ip := f[off : off+ipv4MinLen]
		switch ECN(ip[1] & 0x03) {
		case NotECT:
			return false
		case ECT0, ECT1:
			m := binary.BigEndian.Uint16(ip[0:2])
			ip[1] |= byte(CE)
			m2 := binary.BigEndian.Uint16(ip[0:2])
			hc := binary.BigEndian.Uint16(ip[10:12])
			binary.BigEndian.PutUint16(ip[10:12], checksumUpdate(hc, m, m2))
		}
	case L3IPv6:
		if off+ipv6HeaderLen > len(f) {
			return false
		}
		// Traffic class = low nibble of byte 0 ‖ high nibble of byte 1, so
		// its two ECN bits are bits 5–4 of byte 1 (RFC 8200 §3, RFC 3168 §5).
		ip := f[off : off+2]
		switch ECN(ip[1] >> 4 & 0x03) {
		case NotECT:
			return false
		case ECT0, ECT1:
			ip[1] |= byte(CE) << 4
		}
	default:
		return false
	}
	d.ECN = CE
	return true
}

// checksumUpdate returns the Internet checksum hc of a header after one of
// its 16-bit words changed from m to m2, by RFC 1624 Eq. 3:
// HC' = ~(~HC + ~m + m'). Unlike Eq. 2 it never yields 0xffff (−0) for a
// header whose words are not all zero, so it matches a full recomputation
// (RFC 1624 §3–§4).
func checksumUpdate(hc, m, m2 uint16) uint16 {
	sum := uint32(^hc) + uint32(^m) + uint32(m2)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}
