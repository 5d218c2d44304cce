package packet

import "net/netip"

// MAC is a 48-bit Ethernet address, a comparable value that never allocates.
type MAC [6]byte

// IsBroadcast reports whether m is ff:ff:ff:ff:ff:ff.
func (m MAC) IsBroadcast() bool { return m == MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }

// IsMulticast reports whether m is a group address (I/G bit, the least
// significant bit of the first octet, set; IEEE 802 §8.2). Broadcast is a
// multicast address too.
func (m MAC) IsMulticast() bool { return m[0]&0x01 != 0 }

// String formats m as six colon-separated lower-case hex octets. It
// allocates; keep it off the per-packet path.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var b [17]byte
	for i, o := range m {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i], b[3*i+1] = hex[o>>4], hex[o&0x0f]
	}
	return string(b[:])
}

// DstMAC returns the frame's destination MAC, or the zero MAC if the frame is
// shorter than 6 bytes. It does not need Parse.
func (d *Desc) DstMAC() MAC {
	var m MAC
	if d.Len >= 6 && d.Len <= cap(d.Buf) {
		copy(m[:], d.Buf[0:6])
	}
	return m
}

// SrcMAC returns the frame's source MAC, or the zero MAC if the frame is
// shorter than 12 bytes. It does not need Parse.
func (d *Desc) SrcMAC() MAC {
	var m MAC
	if d.Len >= 12 && d.Len <= cap(d.Buf) {
		copy(m[:], d.Buf[6:12])
	}
	return m
}

// SrcAddr returns the IP source address of a parsed IPv4 or IPv6 packet, and
// the zero (invalid) netip.Addr for any other frame. It does not allocate.
func (d *Desc) SrcAddr() netip.Addr { return d.addr(12, 8) }

// DstAddr returns the IP destination address of a parsed IPv4 or IPv6
// packet, and the zero (invalid) netip.Addr for any other frame. It does not
// allocate.
func (d *Desc) DstAddr() netip.Addr { return d.addr(16, 24) }

// addr reads the address at offset off4 of an IPv4 header or off6 of an
// IPv6 header.
func (d *Desc) addr(off4, off6 int) netip.Addr {
	if d.Len < 0 || d.Len > cap(d.Buf) {
		return netip.Addr{}
	}
	f := d.Buf[:d.Len]
	off := int(d.L3Off)
	switch d.L3 {
	case L3IPv4:
		if off+ipv4MinLen <= len(f) {
			return netip.AddrFrom4([4]byte(f[off+off4 : off+off4+4]))
		}
	case L3IPv6:
		if off+ipv6HeaderLen <= len(f) {
			return netip.AddrFrom16([16]byte(f[off+off6 : off+off6+16]))
		}
	}
	return netip.Addr{}
}
