package loadgen

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Frame sizes. A size counts the Ethernet frame with its 4-byte FCS, as RFC
// 2544 §9 does: a 64-byte frame is 60 bytes in a buffer (packet.Desc.Len)
// plus the FCS the NIC appends.
const (
	FCS     = 4    // bytes of frame check sequence counted in a frame size
	MinSize = 64   // smallest frame: Ethernet, IPv4, UDP and the 18-byte Header
	MaxSize = 9022 // largest frame: a 9000-byte IP packet (jumbo), untagged, with FCS

	// L1Overhead is what a frame costs on the wire beyond its size:
	// preamble and start delimiter (8 bytes) and the inter-frame gap (12).
	// Rates count it when Overhead is set to it.
	L1Overhead = 20
)

// Header layout: the UDP payload of every generated frame starts with it.
const (
	// HeaderLen is the size of the encoded Header: magic (2), run (2),
	// flow (2), sequence number (4), TX time (8), big-endian.
	HeaderLen = 18
	// Magic marks a frame as the generator's.
	Magic = 0xEC5B

	ethLen    = 14
	ipv4Len   = 20
	udpLen    = 8
	headerOff = ethLen + ipv4Len + udpLen // 42: the 18-byte Header fills a 60-byte frame exactly
)

// Header is what a generated frame carries in its UDP payload.
type Header struct {
	// Run tells runs apart: a sink counts frames of another run as stale,
	// so late frames of a previous trial never pass for this one's.
	Run uint16
	// Flow is the flow's index, 0 to Flows−1; its 5-tuple differs from
	// every other flow's in the UDP source port.
	Flow uint16
	// Seq is the frame's sequence number in its flow, from 0; sinks extend
	// it to 64 bits, so it may wrap.
	Seq uint32
	// TxTime is when the generator handed the frame to its port, in the
	// nanoseconds of its clock (see SystemClock).
	TxTime int64
}

// putHeader writes h's sequence number and TX time (the only fields that
// change per frame) and, with full, the rest of it into frame.
func putHeader(frame []byte, h Header, full bool) {
	p := frame[headerOff : headerOff+HeaderLen]
	if full {
		binary.BigEndian.PutUint16(p[0:], Magic)
		binary.BigEndian.PutUint16(p[2:], h.Run)
		binary.BigEndian.PutUint16(p[4:], h.Flow)
	}
	binary.BigEndian.PutUint32(p[6:], h.Seq)
	binary.BigEndian.PutUint64(p[10:], uint64(h.TxTime))
}

// ReadHeader returns the Header of a frame packet.Parse has parsed, and
// false unless it is an IPv4 or IPv6 UDP datagram whose payload starts with
// Magic. VLAN tags and IP options are allowed: the Header is found from
// d.L4Off.
func ReadHeader(d *packet.Desc) (Header, bool) {
	if d.Proto != packet.ProtoUDP || d.L4Off == 0 || (d.L3 != packet.L3IPv4 && d.L3 != packet.L3IPv6) {
		return Header{}, false
	}
	off := int(d.L4Off) + udpLen
	if off+HeaderLen > d.Len {
		return Header{}, false
	}
	p := d.Buf[off : off+HeaderLen]
	if binary.BigEndian.Uint16(p[0:]) != Magic {
		return Header{}, false
	}
	return Header{
		Run:    binary.BigEndian.Uint16(p[2:]),
		Flow:   binary.BigEndian.Uint16(p[4:]),
		Seq:    binary.BigEndian.Uint32(p[6:]),
		TxTime: int64(binary.BigEndian.Uint64(p[10:])),
	}, true
}

// Addresses are the L2 and L3 endpoints of a generator's frames.
type Addresses struct {
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   netip.Addr // IPv4
	// SrcPort is flow 0's UDP source port; flow i uses SrcPort+i.
	SrcPort uint16
	// DstPort is every flow's UDP destination port.
	DstPort uint16
}

// buildFrame writes a complete frame of size bytes (FCS included, so
// size−FCS bytes are written) into buf: Ethernet, IPv4 with DSCP, ECN and
// its header checksum, UDP without checksum (0, which IPv4 allows: RFC 768),
// then the Header with h and zero padding. It returns the frame length.
func buildFrame(buf []byte, a *Addresses, size int, dscp uint8, ecn packet.ECN, srcPort uint16, h Header) int {
	n := size - FCS
	f := buf[:n]
	clear(f)
	copy(f[0:6], a.DstMAC)
	copy(f[6:12], a.SrcMAC)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	ip := f[ethLen:]
	ip[0] = 0x45
	ip[1] = dscp<<2 | uint8(ecn)
	binary.BigEndian.PutUint16(ip[2:], uint16(n-ethLen))
	binary.BigEndian.PutUint16(ip[4:], h.Flow)
	ip[6] = 0x40 // DF
	ip[8] = 64
	ip[9] = packet.ProtoUDP
	src, dst := a.SrcIP.As4(), a.DstIP.As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], packet.IPv4Checksum(ip[:ipv4Len]))
	udp := ip[ipv4Len:]
	binary.BigEndian.PutUint16(udp[0:], srcPort)
	binary.BigEndian.PutUint16(udp[2:], a.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-ethLen-ipv4Len))
	putHeader(f, h, true)
	return n
}
