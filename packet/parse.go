package packet

import "encoding/binary"

// EtherTypes and IP protocol numbers Parse understands.
const (
	EtherTypeIPv4 = 0x0800 // IPv4 (RFC 894)
	EtherTypeARP  = 0x0806 // ARP (RFC 826)
	EtherTypeVLAN = 0x8100 // IEEE 802.1Q customer tag (C-tag)
	EtherTypeQinQ = 0x88a8 // IEEE 802.1ad service tag (S-tag)
	EtherTypeIPv6 = 0x86dd // IPv6 (RFC 8200)
	ProtoTCP      = 6      // TCP (RFC 9293)
	ProtoUDP      = 17     // UDP (RFC 768)
)

// Header sizes and field masks.
const (
	ethHeaderLen   = 14     // destination MAC, source MAC, EtherType
	vlanTagLen     = 4      // TCI and the next EtherType
	ipv4MinLen     = 20     // IPv4 header without options
	ipv6HeaderLen  = 40     // IPv6 fixed header
	udpHeaderLen   = 8      // UDP header
	tcpMinLen      = 20     // TCP header without options
	ipv4FragOffset = 0x1fff // mask of the fragment offset in IPv4 bytes 6–7
)

// ParseError is the kind of fault that made Parse reject a frame. It is a
// small integer, so returning it as an error never allocates, and the
// dataplane counts rejected frames per kind in an array of NumParseErrors
// counters indexed by the ParseError:
//
//	if err := packet.Parse(d); err != nil {
//		drops[err.(packet.ParseError)]++
//	}
type ParseError uint8

// Kinds of malformed frame. Each names the first check that failed; Parse
// checks in header order (Ethernet, tags, network header, transport header)
// and, within the IPv4 header, truncation, version, IHL, total length.
const (
	// ErrLen means Len is negative or beyond cap(Buf): a bug of whoever
	// filled the descriptor rather than a malformed frame.
	ErrLen ParseError = iota
	// ErrTruncated means the frame ends inside the Ethernet header, a VLAN
	// tag, the fixed 20 bytes of an IPv4 header or the 40 bytes of an IPv6
	// header.
	ErrTruncated
	// ErrVersion means the IP version nibble disagrees with the EtherType
	// (not 4 under 0x0800, not 6 under 0x86dd).
	ErrVersion
	// ErrIHL means the IPv4 header length is below 5 words, or the header
	// with its options runs past the end of the frame.
	ErrIHL
	// ErrTotalLength means the IPv4 total length is below the header length
	// or beyond the frame, or the IPv6 payload length is beyond the frame.
	ErrTotalLength
	// ErrL4 means the TCP or UDP header does not fit in the IP payload (UDP
	// needs 8 bytes; TCP needs 20 and a data offset of at least 5 words that
	// fits).
	ErrL4

	// NumParseErrors is the number of ParseError kinds; size per-kind
	// counter arrays with it.
	NumParseErrors = int(ErrL4) + 1
)

// Error implements error. It does not allocate.
func (e ParseError) Error() string {
	switch e {
	case ErrLen:
		return "packet: frame length outside the buffer"
	case ErrTruncated:
		return "packet: frame truncated inside a header"
	case ErrVersion:
		return "packet: ip version does not match ethertype"
	case ErrIHL:
		return "packet: bad ipv4 header length"
	case ErrTotalLength:
		return "packet: ip length beyond frame or below header"
	case ErrL4:
		return "packet: truncated or malformed tcp/udp header"
	}
	return "packet: unknown parse error"
}

// Parse parses the headers of d.Frame() in place and fills the header fields
// of d; it neither copies nor modifies the frame and never allocates.
//
// It reads Ethernet II with at most two VLAN tags: an outer 802.1ad
// (0x88a8) or 802.1Q (0x8100) tag, optionally followed by one inner 802.1Q
// tag (QinQ). PCP and VLAN come from the outer tag, Tags counts the tags, and
// EtherType and L3Off describe what follows the last tag. A third tag is not
// parsed: the frame is then L3None with EtherType 0x8100.
//
// IPv4 (options allowed) and IPv6 (fixed header; extension headers are not
// walked, so Proto is the next-header field) set DSCP, ECN and Proto. TCP and
// UDP ports are read when the transport header starts the IP payload: for
// IPv4 only in a packet with fragment offset 0, for IPv6 only when the next
// header is TCP or UDP. Transport headers are bounded by the IP length, not
// the frame, so Ethernet padding is never read as a header. ARP sets L3ARP
// and is not looked into. Any other EtherType sets L3None without error, for
// the switch still forwards such frames at layer 2.
//
// A malformed frame returns a ParseError naming the fault, leaves d's header
// fields reset (as by ResetHeaders), and never panics.
func Parse(d *Desc) error {
	d.ResetHeaders()
	if uint(d.Len) > uint(cap(d.Buf)) {
		return ErrLen
	}
	if e := parse(d, d.Buf[:d.Len]); e != parseOK {
		d.ResetHeaders()
		return e
	}
	return nil
}

// parseOK is the internal "no fault" result; it is not an exported kind.
const parseOK ParseError = 0xff

func parse(d *Desc, f []byte) ParseError {
	if len(f) < ethHeaderLen {
		return ErrTruncated
	}
	off := 12
	et := binary.BigEndian.Uint16(f[off:])
	off += 2
	if et == EtherTypeQinQ || et == EtherTypeVLAN {
		if len(f) < off+vlanTagLen {
			return ErrTruncated
		}
		tci := binary.BigEndian.Uint16(f[off:])
		d.PCP = uint8(tci >> 13)
		d.VLAN = tci & 0x0fff
		d.Tags = 1
		et = binary.BigEndian.Uint16(f[off+2:])
		off += vlanTagLen
		if et == EtherTypeVLAN {
			if len(f) < off+vlanTagLen {
				return ErrTruncated
			}
			d.Tags = 2
			et = binary.BigEndian.Uint16(f[off+2:])
			off += vlanTagLen
		}
	}
	d.EtherType = et
	d.L3Off = uint16(off)
	switch et {
	case EtherTypeIPv4:
		return parseIPv4(d, f, off)
	case EtherTypeIPv6:
		return parseIPv6(d, f, off)
	case EtherTypeARP:
		d.L3 = L3ARP
	}
	return parseOK
}

func parseIPv4(d *Desc, f []byte, off int) ParseError {
	ip := f[off:]
	if len(ip) < ipv4MinLen {
		return ErrTruncated
	}
	if ip[0]>>4 != 4 {
		return ErrVersion
	}
	hl := int(ip[0]&0x0f) * 4
	if hl < ipv4MinLen || hl > len(ip) {
		return ErrIHL
	}
	tl := int(binary.BigEndian.Uint16(ip[2:]))
	if tl < hl || tl > len(ip) {
		return ErrTotalLength
	}
	d.L3 = L3IPv4
	d.DSCP = ip[1] >> 2
	d.ECN = ECN(ip[1] & 0x03)
	d.Proto = ip[9]
	if binary.BigEndian.Uint16(ip[6:])&ipv4FragOffset == 0 {
		if e := parseL4(d, ip[hl:tl], off+hl); e != parseOK {
			return e
		}
	}
	return parseOK
}

func parseIPv6(d *Desc, f []byte, off int) ParseError {
	ip := f[off:]
	if len(ip) < ipv6HeaderLen {
		return ErrTruncated
	}
	if ip[0]>>4 != 6 {
		return ErrVersion
	}
	pl := int(binary.BigEndian.Uint16(ip[4:]))
	if pl > len(ip)-ipv6HeaderLen {
		return ErrTotalLength
	}
	tc := ip[0]<<4 | ip[1]>>4
	d.L3 = L3IPv6
	d.DSCP = tc >> 2
	d.ECN = ECN(tc & 0x03)
	d.Proto = ip[6]
	if e := parseL4(d, ip[ipv6HeaderLen:ipv6HeaderLen+pl], off+ipv6HeaderLen); e != parseOK {
		return e
	}
	return parseOK
}

// parseL4 reads the ports of a TCP or UDP header at the start of the IP
// payload p, which sits at frame offset off. Other protocols are skipped.
func parseL4(d *Desc, p []byte, off int) ParseError {
	switch d.Proto {
	case ProtoUDP:
		if len(p) < udpHeaderLen {
			return ErrL4
		}
	case ProtoTCP:
		if len(p) < tcpMinLen {
			return ErrL4
		}
		if doff := int(p[12]>>4) * 4; doff < tcpMinLen || doff > len(p) {
			return ErrL4
		}
	default:
		return parseOK
	}
	d.L4Off = uint16(off)
	d.SrcPort = binary.BigEndian.Uint16(p[0:])
	d.DstPort = binary.BigEndian.Uint16(p[2:])
	return parseOK
}
