package packet

import "encoding/binary"

// DefaultTrimPayload is what Trim keeps past the transport header when it
// is given no size: the L2–L4 headers plus 64 bytes, room for the header
// of a transport such as NDP's or transport/udp's.
const DefaultTrimPayload = 64

// ipv4MoreFragments is the MF flag in IPv4 bytes 6–7.
const ipv4MoreFragments = 0x2000

// Trim cuts d's frame to size bytes, as a switch does with a packet its
// buffer would drop (packet trimming: SAI's "trim a packet to a
// configured size" on failed admission, NDP's header-only packets), marks
// it trimmed with DSCP dscp, and reports whether it did. d must have been
// parsed. size 0 keeps the L2–L4 headers plus DefaultTrimPayload; a size
// inside the headers keeps the headers whole. A packet no longer than the
// cut keeps its bytes and is only marked.
//
// Only UDP over IPv4 or IPv6 is trimmed: the transports that ask for
// trimming (NDP, EQDS, Ultra Ethernet's) run over UDP. Trim leaves alone,
// and reports false for, a non-IP frame, an IP packet of any other
// protocol, an IPv4 fragment (the UDP header's length and checksum cover
// the whole datagram), and a TCP segment: a cut segment is either corrupt
// (its checksum fails at the receiver, which drops it, having learnt
// nothing) or, with its checksum made whole, a valid shorter segment that
// TCP takes as data and answers as usual — TCP has no notion of a trimmed
// header, so the priority queue would carry it for nothing.
//
// The cut packet is made valid:
//
//   - IPv4: the total length, the DSCP (ECN is kept, a CE mark too) and
//     the header checksum, updated incrementally (RFC 1624 Eq. 3) as
//     SetCE does, so that a header that arrived corrupt stays so;
//   - IPv6: the payload length and the traffic class's DSCP (no header
//     checksum);
//   - UDP: the length, and the checksum recomputed over what is kept.
//     Recomputing costs the kept bytes (about 100), where an incremental
//     update would sum every byte cut (up to 1400); and what is kept is a
//     header, not the data the original checksum protected. The price:
//     a datagram corrupted inside its kept bytes before the switch
//     leaves it with a valid checksum (the NIC has checked the frame's
//     FCS, so only the host's memory could have corrupted it). An IPv4
//     datagram sent without a checksum (0, RFC 768) keeps none; IPv6
//     always gets one (RFC 8200 §8.1).
//
// d.Len and d.DSCP follow, and d.Trimmed is set. Trim never allocates.
func Trim(d *Desc, size int, dscp uint8) bool {
	if d.Proto != ProtoUDP || d.L4Off == 0 || uint(d.Len) > uint(cap(d.Buf)) {
		return false
	}
	f := d.Buf[:d.Len]
	l3, l4 := int(d.L3Off), int(d.L4Off)
	if l4+udpHeaderLen > len(f) {
		return false
	}
	dscp &= 0x3f
	var ipEnd int // where the IP packet ends, by its own length field
	switch d.L3 {
	case L3IPv4:
		if l3+ipv4MinLen > l4 {
			return false
		}
		ip := f[l3:l4]
		if binary.BigEndian.Uint16(ip[6:])&(ipv4MoreFragments|ipv4FragOffset) != 0 {
			return false
		}
		ipEnd = l3 + int(binary.BigEndian.Uint16(ip[2:]))
	case L3IPv6:
		if l3+ipv6HeaderLen != l4 {
			return false
		}
		ipEnd = l4 + int(binary.BigEndian.Uint16(f[l3+4:]))
	default:
		return false
	}
	if ipEnd < l4+udpHeaderLen || ipEnd > len(f) {
		return false
	}
	cut := l4 + udpHeaderLen + DefaultTrimPayload
	if size > 0 {
		cut = max(size, l4+udpHeaderLen)
	}
	end := min(cut, ipEnd)

	ip := f[l3:]
	if d.L3 == L3IPv4 {
		w0, w1 := binary.BigEndian.Uint16(ip[0:]), binary.BigEndian.Uint16(ip[2:])
		ip[1] = dscp<<2 | ip[1]&0x03
		binary.BigEndian.PutUint16(ip[2:], uint16(end-l3))
		n0, n1 := binary.BigEndian.Uint16(ip[0:]), binary.BigEndian.Uint16(ip[2:])
		hc := checksumUpdate(binary.BigEndian.Uint16(ip[10:]), w0, n0)
		binary.BigEndian.PutUint16(ip[10:], checksumUpdate(hc, w1, n1))
	} else {
		// Traffic class = low nibble of byte 0 ‖ high nibble of byte 1;
		// its DSCP is the top six bits (RFC 8200 §3, RFC 2474).
		ip[0] = ip[0]&0xf0 | dscp>>2
		ip[1] = (dscp&0x03)<<6 | ip[1]&0x3f
		binary.BigEndian.PutUint16(ip[4:], uint16(end-l4))
	}
	d.DSCP, d.Trimmed = dscp, true
	if end == ipEnd {
		return true // nothing to cut; the UDP checksum does not cover the DSCP
	}
	u := f[l4:end]
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	if d.L3 == L3IPv4 && binary.BigEndian.Uint16(u[6:]) == 0 {
		d.Len = end
		return true
	}
	u[6], u[7] = 0, 0
	var sum uint64
	if d.L3 == L3IPv4 {
		sum = sum32(f[l3+12 : l3+20]) // source and destination addresses
	} else {
		sum = sum32(f[l3+8 : l3+40])
	}
	sum += uint64(ProtoUDP) + uint64(len(u)) + sum32(u)
	c := ^fold(sum)
	if c == 0 {
		c = 0xffff // 0 means "no checksum" (RFC 768)
	}
	binary.BigEndian.PutUint16(u[6:], c)
	d.Len = end
	return true
}

// sum32 returns the ones' complement sum of b's 16-bit big-endian words,
// unfolded; an odd last byte is padded with zero (RFC 1071). It reads four
// bytes at a time.
func sum32(b []byte) uint64 {
	var s uint64
	for len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// fold folds a sum of 16-bit (or 32-bit) words into 16 bits with
// end-around carry.
func fold(s uint64) uint16 {
	s = s&0xffffffff + s>>32
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}
