// Package packettest builds well-formed Ethernet frames for tests of
// ecnswitch packages (dataplane, ports, marking, …) with gopacket's layers:
// IPv4 or IPv6, TCP or UDP, any DSCP/ECN, size, ports, MACs and VLAN tags.
//
// Every builder takes a testing.TB, calls tb.Helper and fails the test on a
// bad option, so a call site is one line:
//
//	f := packettest.UDP4(t, packettest.Options{DSCP: 46, ECN: packet.ECT0, Size: 1500})
//	d := packettest.Desc(t, f) // parsed *packet.Desc
//
// Addresses default to the benchmarking ranges 198.18.0.0/15 (RFC 2544) and
// 2001:2::/48 (RFC 5180), MACs to locally administered unicast addresses.
// Checksums and length fields are always correct.
package packettest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Tag is one VLAN tag.
type Tag struct {
	// TPID is the tag's EtherType: packet.EtherTypeVLAN (802.1Q, the
	// default when zero) or packet.EtherTypeQinQ (802.1ad).
	TPID uint16
	PCP  uint8  // priority code point, 0–7
	VLAN uint16 // VLAN id, 0–4095
}

// Options describe a frame. The zero value is a valid minimum-size frame.
type Options struct {
	DstMAC packet.MAC // zero: 02:00:00:00:00:02
	SrcMAC packet.MAC // zero: 02:00:00:00:00:01
	Tags   []Tag      // VLAN tags, outermost first; none if empty

	// Src and Dst are the IP addresses; zero means 198.18.0.1 → 198.18.0.2
	// for IPv4 and 2001:2::1 → 2001:2::2 for IPv6. They must match the
	// builder's IP version.
	Src, Dst netip.Addr
	SrcPort  uint16     // TCP/UDP source port, as given
	DstPort  uint16     // TCP/UDP destination port, as given
	DSCP     uint8      // 0–63
	ECN      packet.ECN // ECN codepoint
	TTL      uint8      // IPv4 TTL or IPv6 hop limit; zero: 64

	// Size is the frame length without FCS; the transport payload (zeros)
	// fills it. Zero gives the headers padded to Ethernet's 60-byte
	// minimum; a Size below the headers' length fails the test.
	Size int
	// Payload, if set, starts the transport payload; zeros follow it up
	// to Size. A zero Size fits the frame to it; a Size too small for it
	// fails the test.
	Payload []byte
}

// UDP4 returns an Ethernet/IPv4/UDP frame.
func UDP4(tb testing.TB, o Options) []byte {
	tb.Helper()
	return build(tb, o, false, false)
}

// UDP6 returns an Ethernet/IPv6/UDP frame.
func UDP6(tb testing.TB, o Options) []byte {
	tb.Helper()
	return build(tb, o, true, false)
}

// TCP4 returns an Ethernet/IPv4/TCP frame (ACK set, no options).
func TCP4(tb testing.TB, o Options) []byte {
	tb.Helper()
	return build(tb, o, false, true)
}

// TCP6 returns an Ethernet/IPv6/TCP frame (ACK set, no options).
func TCP6(tb testing.TB, o Options) []byte {
	tb.Helper()
	return build(tb, o, true, true)
}

// Desc wraps frame in a descriptor (Buf is frame itself, not a copy) and
// parses it, failing the test if packet.Parse rejects it.
func Desc(tb testing.TB, frame []byte) *packet.Desc {
	tb.Helper()
	d := &packet.Desc{Buf: frame, Len: len(frame)}
	if err := packet.Parse(d); err != nil {
		tb.Fatalf("packettest: parse %d-byte frame: %v", len(frame), err)
	}
	return d
}

func build(tb testing.TB, o Options, v6, tcp bool) []byte {
	tb.Helper()
	if o.DSCP > 63 {
		tb.Fatalf("packettest: DSCP %d out of range 0–63", o.DSCP)
	}
	if o.ECN > packet.CE {
		tb.Fatalf("packettest: ECN %d out of range 0–3", o.ECN)
	}
	if o.DstMAC == (packet.MAC{}) {
		o.DstMAC = packet.MAC{0x02, 0, 0, 0, 0, 0x02}
	}
	if o.SrcMAC == (packet.MAC{}) {
		o.SrcMAC = packet.MAC{0x02, 0, 0, 0, 0, 0x01}
	}
	if o.TTL == 0 {
		o.TTL = 64
	}
	tos := o.DSCP<<2 | uint8(o.ECN)

	var net3 gopacket.NetworkLayer
	var l3 gopacket.SerializableLayer
	et := layers.EthernetTypeIPv4
	proto := layers.IPProtocolUDP
	if tcp {
		proto = layers.IPProtocolTCP
	}
	hdr := 14 + 4*len(o.Tags)
	if v6 {
		src, dst := addrs(tb, o, "2001:2::1", "2001:2::2", false)
		ip := &layers.IPv6{Version: 6, TrafficClass: tos, NextHeader: proto, HopLimit: o.TTL,
			SrcIP: src, DstIP: dst}
		net3, l3, et = ip, ip, layers.EthernetTypeIPv6
		hdr += 40
	} else {
		src, dst := addrs(tb, o, "198.18.0.1", "198.18.0.2", true)
		ip := &layers.IPv4{Version: 4, IHL: 5, TOS: tos, TTL: o.TTL, Protocol: proto,
			Flags: layers.IPv4DontFragment, SrcIP: src, DstIP: dst}
		net3, l3 = ip, ip
		hdr += 20
	}

	var l4 gopacket.SerializableLayer
	if tcp {
		t := &layers.TCP{SrcPort: layers.TCPPort(o.SrcPort), DstPort: layers.TCPPort(o.DstPort),
			Seq: 1, Ack: 1, ACK: true, Window: 65535}
		if err := t.SetNetworkLayerForChecksum(net3); err != nil {
			tb.Fatalf("packettest: %v", err)
		}
		l4 = t
		hdr += 20
	} else {
		u := &layers.UDP{SrcPort: layers.UDPPort(o.SrcPort), DstPort: layers.UDPPort(o.DstPort)}
		if err := u.SetNetworkLayerForChecksum(net3); err != nil {
			tb.Fatalf("packettest: %v", err)
		}
		l4 = u
		hdr += 8
	}
	if o.Size != 0 && o.Size < hdr {
		tb.Fatalf("packettest: Size %d below the %d bytes of headers", o.Size, hdr)
	}
	if o.Size == 0 && len(o.Payload) > 0 {
		o.Size = hdr + len(o.Payload)
	}
	if o.Size != 0 && o.Size < hdr+len(o.Payload) {
		tb.Fatalf("packettest: Size %d below the %d bytes of headers and payload", o.Size, hdr+len(o.Payload))
	}

	ls := make([]gopacket.SerializableLayer, 0, 4+len(o.Tags))
	eth := &layers.Ethernet{DstMAC: net.HardwareAddr(o.DstMAC[:]), SrcMAC: net.HardwareAddr(o.SrcMAC[:])}
	ls = append(ls, eth)
	typ := &eth.EthernetType
	for _, t := range o.Tags {
		tpid := t.TPID
		if tpid == 0 {
			tpid = packet.EtherTypeVLAN
		}
		if t.PCP > 7 {
			tb.Fatalf("packettest: PCP %d out of range 0–7", t.PCP)
		}
		*typ = layers.EthernetType(tpid)
		q := &layers.Dot1Q{Priority: t.PCP, VLANIdentifier: t.VLAN}
		typ = &q.Type
		ls = append(ls, q)
	}
	*typ = et
	ls = append(ls, l3, l4)
	if o.Size > hdr {
		p := make([]byte, o.Size-hdr)
		copy(p, o.Payload)
		ls = append(ls, gopacket.Payload(p))
	}

	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		tb.Fatalf("packettest: serialize: %v", err)
	}
	f := buf.Bytes()
	if o.Size != 0 {
		f = f[:o.Size] // drop gopacket's padding to 60 bytes; it lies past the IP length
	}
	return f
}

// addrs returns o's addresses, or the defaults, checked against the version.
func addrs(tb testing.TB, o Options, defSrc, defDst string, v4 bool) (net.IP, net.IP) {
	tb.Helper()
	src, dst := o.Src, o.Dst
	if !src.IsValid() {
		src = netip.MustParseAddr(defSrc)
	}
	if !dst.IsValid() {
		dst = netip.MustParseAddr(defDst)
	}
	if src.Is4() != v4 || dst.Is4() != v4 {
		tb.Fatalf("packettest: addresses %v → %v do not match the builder's IP version", src, dst)
	}
	return net.IP(src.AsSlice()), net.IP(dst.AsSlice())
}
