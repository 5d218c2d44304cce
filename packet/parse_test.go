package packet_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// want is every header field Parse sets, plus what the accessors return.
type want struct {
	l3               packet.L3
	etherType        uint16
	l3Off, l4Off     uint16
	dscp             uint8
	ecn              packet.ECN
	proto            uint8
	pcp              uint8
	vlan             uint16
	tags             uint8
	srcPort, dstPort uint16
	src, dst         netip.Addr
}

func got(d *packet.Desc) want {
	return want{
		l3: d.L3, etherType: d.EtherType, l3Off: d.L3Off, l4Off: d.L4Off,
		dscp: d.DSCP, ecn: d.ECN, proto: d.Proto, pcp: d.PCP, vlan: d.VLAN, tags: d.Tags,
		srcPort: d.SrcPort, dstPort: d.DstPort, src: d.SrcAddr(), dst: d.DstAddr(),
	}
}

var (
	ip4A = netip.MustParseAddr("198.18.1.10")
	ip4B = netip.MustParseAddr("198.19.200.3")
	ip6A = netip.MustParseAddr("2001:2::a")
	ip6B = netip.MustParseAddr("2001:2:0:ffff::b")
)

func ipv4(tos uint8, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, TOS: tos, TTL: 64, Protocol: proto, Id: 0x1234,
		SrcIP: net.IP(ip4A.AsSlice()), DstIP: net.IP(ip4B.AsSlice())}
}

func ipv6(tc uint8, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, TrafficClass: tc, FlowLabel: 0xabcde, NextHeader: next, HopLimit: 64,
		SrcIP: net.IP(ip6A.AsSlice()), DstIP: net.IP(ip6B.AsSlice())}
}

func udp(sp, dp uint16, nl gopacket.NetworkLayer) *layers.UDP {
	u := &layers.UDP{SrcPort: layers.UDPPort(sp), DstPort: layers.UDPPort(dp)}
	_ = u.SetNetworkLayerForChecksum(nl)
	return u
}

func tcp(sp, dp uint16, nl gopacket.NetworkLayer, opts ...layers.TCPOption) *layers.TCP {
	t := &layers.TCP{SrcPort: layers.TCPPort(sp), DstPort: layers.TCPPort(dp), Seq: 7, ACK: true,
		Window: 1000, Options: opts}
	_ = t.SetNetworkLayerForChecksum(nl)
	return t
}

func TestParseFields(t *testing.T) {
	payload := gopacket.Payload(bytes.Repeat([]byte{0xee}, 100))
	// DSCP 46 (EF) with ECT(0): TOS 0xba. DSCP 10 (AF11) with ECT(1): 0x29.
	cases := []struct {
		name  string
		frame func(t *testing.T) []byte
		want  want
	}{
		{"ipv4-udp", func(t *testing.T) []byte {
			ip := ipv4(0xba, layers.IPProtocolUDP)
			return serialize(t, eth(layers.EthernetTypeIPv4), ip, udp(5001, 53, ip), payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, l4Off: 34, dscp: 46, ecn: packet.ECT0,
			proto: 17, srcPort: 5001, dstPort: 53, src: ip4A, dst: ip4B}},

		{"ipv4-options-tcp-options", func(t *testing.T) []byte {
			ip := ipv4(0x29, layers.IPProtocolTCP)
			// Router Alert (4 bytes) + a 7-byte record-route + padding: IHL 8.
			ip.Options = []layers.IPv4Option{
				{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}},
				{OptionType: 7, OptionLength: 7, OptionData: []byte{4, 0, 0, 0, 0}},
			}
			mss := layers.TCPOption{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{0x05, 0xb4}}
			return serialize(t, eth(layers.EthernetTypeIPv4), ip, tcp(443, 40000, ip, mss), payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, l4Off: 14 + 32, dscp: 10, ecn: packet.ECT1,
			proto: 6, srcPort: 443, dstPort: 40000, src: ip4A, dst: ip4B}},

		{"ipv4-icmp", func(t *testing.T) []byte {
			ip := ipv4(0x03, layers.IPProtocolICMPv4)
			icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 1}
			return serialize(t, eth(layers.EthernetTypeIPv4), ip, icmp, payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, ecn: packet.CE, proto: 1, src: ip4A, dst: ip4B}},

		{"ipv4-later-fragment-no-ports", func(t *testing.T) []byte {
			ip := ipv4(0, layers.IPProtocolUDP)
			ip.FragOffset = 185 // 1480 bytes in; the payload is not a UDP header
			return serialize(t, eth(layers.EthernetTypeIPv4), ip, gopacket.Payload{1, 2, 3})
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, proto: 17, src: ip4A, dst: ip4B}},

		{"ipv4-first-fragment-has-ports", func(t *testing.T) []byte {
			ip := ipv4(0, layers.IPProtocolUDP)
			ip.Flags = layers.IPv4MoreFragments
			return serialize(t, eth(layers.EthernetTypeIPv4), ip, udp(7, 9, ip), payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, l4Off: 34, proto: 17,
			srcPort: 7, dstPort: 9, src: ip4A, dst: ip4B}},

		{"ipv4-ethernet-padding", func(t *testing.T) []byte {
			// 14+20+8 = 42 bytes; gopacket pads the frame to 60.
			ip := ipv4(0xb8, layers.IPProtocolUDP)
			f := serialize(t, eth(layers.EthernetTypeIPv4), ip, udp(1, 2, ip))
			if len(f) != 60 {
				t.Fatalf("frame is %d bytes, want 60 (padded)", len(f))
			}
			return f
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 14, l4Off: 34, dscp: 46, proto: 17,
			srcPort: 1, dstPort: 2, src: ip4A, dst: ip4B}},

		{"ipv6-udp", func(t *testing.T) []byte {
			ip := ipv6(0xba, layers.IPProtocolUDP)
			return serialize(t, eth(layers.EthernetTypeIPv6), ip, udp(1234, 4791, ip), payload)
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 14, l4Off: 54, dscp: 46, ecn: packet.ECT0,
			proto: 17, srcPort: 1234, dstPort: 4791, src: ip6A, dst: ip6B}},

		{"ipv6-tcp", func(t *testing.T) []byte {
			ip := ipv6(0xff, layers.IPProtocolTCP)
			return serialize(t, eth(layers.EthernetTypeIPv6), ip, tcp(22, 65535, ip), payload)
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 14, l4Off: 54, dscp: 63, ecn: packet.CE,
			proto: 6, srcPort: 22, dstPort: 65535, src: ip6A, dst: ip6B}},

		{"ipv6-icmpv6", func(t *testing.T) []byte {
			ip := ipv6(0x01, layers.IPProtocolICMPv6)
			icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
			_ = icmp.SetNetworkLayerForChecksum(ip)
			return serialize(t, eth(layers.EthernetTypeIPv6), ip, icmp, payload)
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 14, ecn: packet.ECT1, proto: 58, src: ip6A, dst: ip6B}},

		{"ipv6-hop-by-hop-not-walked", func(t *testing.T) []byte {
			ip := ipv6(0, layers.IPProtocolIPv6HopByHop)
			hbh := []byte{17, 0, 1, 4, 0, 0, 0, 0, 0x13, 0x88, 0x00, 0x35, 0, 8, 0, 0}
			return serialize(t, eth(layers.EthernetTypeIPv6), ip, gopacket.Payload(hbh))
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 14, proto: 0, src: ip6A, dst: ip6B}},

		{"dot1q-ipv4-udp", func(t *testing.T) []byte {
			ip := ipv4(0x88, layers.IPProtocolUDP)
			q := &layers.Dot1Q{Priority: 5, VLANIdentifier: 100, Type: layers.EthernetTypeIPv4}
			return serialize(t, eth(layers.EthernetTypeDot1Q), q, ip, udp(10, 20, ip), payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 18, l4Off: 38, dscp: 34, proto: 17,
			pcp: 5, vlan: 100, tags: 1, srcPort: 10, dstPort: 20, src: ip4A, dst: ip4B}},

		{"dot1ad-ipv6-tcp", func(t *testing.T) []byte {
			ip := ipv6(0x02, layers.IPProtocolTCP)
			q := &layers.Dot1Q{Priority: 7, DropEligible: true, VLANIdentifier: 4095, Type: layers.EthernetTypeIPv6}
			return serialize(t, eth(layers.EthernetTypeQinQ), q, ip, tcp(80, 8080, ip), payload)
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 18, l4Off: 58, ecn: packet.ECT0, proto: 6,
			pcp: 7, vlan: 4095, tags: 1, srcPort: 80, dstPort: 8080, src: ip6A, dst: ip6B}},

		{"qinq-ipv4-tcp", func(t *testing.T) []byte {
			ip := ipv4(0x60, layers.IPProtocolTCP)
			s := &layers.Dot1Q{Priority: 3, VLANIdentifier: 2000, Type: layers.EthernetTypeDot1Q}
			c := &layers.Dot1Q{Priority: 6, VLANIdentifier: 12, Type: layers.EthernetTypeIPv4}
			return serialize(t, eth(layers.EthernetTypeQinQ), s, c, ip, tcp(1, 2, ip), payload)
		}, want{l3: packet.L3IPv4, etherType: 0x0800, l3Off: 22, l4Off: 42, dscp: 24, proto: 6,
			pcp: 3, vlan: 2000, tags: 2, srcPort: 1, dstPort: 2, src: ip4A, dst: ip4B}},

		{"double-dot1q-ipv6-udp", func(t *testing.T) []byte {
			ip := ipv6(0x01, layers.IPProtocolUDP)
			s := &layers.Dot1Q{Priority: 1, VLANIdentifier: 1, Type: layers.EthernetTypeDot1Q}
			c := &layers.Dot1Q{Priority: 2, VLANIdentifier: 2, Type: layers.EthernetTypeIPv6}
			return serialize(t, eth(layers.EthernetTypeDot1Q), s, c, ip, udp(3, 4, ip), payload)
		}, want{l3: packet.L3IPv6, etherType: 0x86dd, l3Off: 22, l4Off: 62, ecn: packet.ECT1, proto: 17,
			pcp: 1, vlan: 1, tags: 2, srcPort: 3, dstPort: 4, src: ip6A, dst: ip6B}},

		{"three-tags-stop-at-l2", func(t *testing.T) []byte {
			a := &layers.Dot1Q{Priority: 4, VLANIdentifier: 10, Type: layers.EthernetTypeDot1Q}
			b := &layers.Dot1Q{VLANIdentifier: 20, Type: layers.EthernetTypeDot1Q}
			c := &layers.Dot1Q{VLANIdentifier: 30, Type: layers.EthernetTypeIPv4}
			ip := ipv4(0, layers.IPProtocolUDP)
			return serialize(t, eth(layers.EthernetTypeQinQ), a, b, c, ip, udp(1, 2, ip))
		}, want{l3: packet.L3None, etherType: 0x8100, l3Off: 22, pcp: 4, vlan: 10, tags: 2}},

		{"arp", func(t *testing.T) []byte {
			arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
				HwAddressSize: 6, ProtAddressSize: 4, Operation: layers.ARPRequest,
				SourceHwAddress: macA, SourceProtAddress: ip4A.AsSlice(),
				DstHwAddress: make([]byte, 6), DstProtAddress: ip4B.AsSlice()}
			return serialize(t, eth(layers.EthernetTypeARP), arp)
		}, want{l3: packet.L3ARP, etherType: 0x0806, l3Off: 14}},

		{"dot1q-arp", func(t *testing.T) []byte {
			q := &layers.Dot1Q{Priority: 2, VLANIdentifier: 7, Type: layers.EthernetTypeARP}
			return serialize(t, eth(layers.EthernetTypeDot1Q), q, gopacket.Payload(make([]byte, 28)))
		}, want{l3: packet.L3ARP, etherType: 0x0806, l3Off: 18, pcp: 2, vlan: 7, tags: 1}},

		{"unknown-ethertype-lldp", func(t *testing.T) []byte {
			return serialize(t, eth(layers.EthernetTypeLinkLayerDiscovery), gopacket.Payload(make([]byte, 46)))
		}, want{l3: packet.L3None, etherType: 0x88cc, l3Off: 14}},

		{"ethernet-header-only", func(t *testing.T) []byte {
			return append(append(append([]byte(nil), macB...), macA...), 0x12, 0x34)
		}, want{l3: packet.L3None, etherType: 0x1234, l3Off: 14}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.frame(t)
			orig := append([]byte(nil), f...)
			d := desc(f)
			d.InPort, d.OutPort, d.Queue, d.RxTime = 3, 4, 5, 99
			if err := packet.Parse(d); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if g := got(d); g != c.want {
				t.Errorf("Parse fields:\n got %+v\nwant %+v", g, c.want)
			}
			if d.SrcMAC() != packet.MAC(macA) || d.DstMAC() != packet.MAC(macB) {
				t.Errorf("MACs %v → %v, want %v → %v", d.SrcMAC(), d.DstMAC(), macA, macB)
			}
			if !bytes.Equal(d.Frame(), orig) {
				t.Error("Parse modified the frame")
			}
			if d.InPort != 3 || d.OutPort != 4 || d.Queue != 5 || d.RxTime != 99 || d.Len != len(orig) {
				t.Errorf("Parse touched non-header fields: %+v", d)
			}
		})
	}
}

// TestParseResetsStaleFields parses a TCP/VLAN frame and then an ARP frame
// into the same descriptor: nothing of the first may survive.
func TestParseResetsStaleFields(t *testing.T) {
	tcp4 := packettest.TCP4(t, packettest.Options{SrcPort: 1, DstPort: 2, DSCP: 46, ECN: packet.ECT0, Size: 100,
		Tags: []packettest.Tag{{PCP: 5, VLAN: 9}}})
	d := desc(tcp4)
	if err := packet.Parse(d); err != nil {
		t.Fatal(err)
	}
	arp := serialize(t, eth(layers.EthernetTypeARP), gopacket.Payload(make([]byte, 28)))
	copy(d.Buf[:cap(d.Buf)], arp)
	d.Len = len(arp)
	if err := packet.Parse(d); err != nil {
		t.Fatal(err)
	}
	w := want{l3: packet.L3ARP, etherType: 0x0806, l3Off: 14}
	if g := got(d); g != w {
		t.Errorf("after re-parse:\n got %+v\nwant %+v", g, w)
	}
	// A malformed frame leaves every header field reset, not half-parsed.
	d = desc(tcp4[:len(tcp4)-1])
	if err := packet.Parse(d); !errors.Is(err, packet.ErrTotalLength) {
		t.Fatalf("truncated frame: err %v, want %v", err, packet.ErrTotalLength)
	}
	if g := got(d); g != (want{}) {
		t.Errorf("after error: %+v, want all zero", g)
	}
}

// TestParseRandomBuilt parses thousands of frames built by packettest with
// random fields and checks every field against what was asked for.
func TestParseRandomBuilt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var o packettest.Options
		fill(r, o.SrcMAC[:])
		fill(r, o.DstMAC[:])
		o.SrcPort, o.DstPort = uint16(r.Uint32()), uint16(r.Uint32())
		o.DSCP, o.ECN = uint8(r.IntN(64)), packet.ECN(r.IntN(4))
		o.TTL = uint8(1 + r.IntN(255))
		var tags uint8
		switch n := r.IntN(3); n {
		case 2:
			o.Tags = []packettest.Tag{{TPID: packet.EtherTypeQinQ, PCP: uint8(r.IntN(8)), VLAN: uint16(r.IntN(4096))}, {VLAN: 5}}
			tags = 2
		case 1:
			o.Tags = []packettest.Tag{{PCP: uint8(r.IntN(8)), VLAN: uint16(r.IntN(4096))}}
			tags = 1
		}
		v6, isTCP := r.IntN(2) == 1, r.IntN(2) == 1
		var a4, b4 [4]byte
		var a6, b6 [16]byte
		fill(r, a4[:])
		fill(r, b4[:])
		fill(r, a6[:])
		fill(r, b6[:])
		var build func(testing.TB, packettest.Options) []byte
		l3, et, iplen, proto := packet.L3IPv4, uint16(0x0800), 20, uint8(17)
		if v6 {
			o.Src, o.Dst = netip.AddrFrom16(a6), netip.AddrFrom16(b6)
			l3, et, iplen = packet.L3IPv6, 0x86dd, 40
		} else {
			o.Src, o.Dst = netip.AddrFrom4(a4), netip.AddrFrom4(b4)
		}
		if isTCP {
			proto = 6
		}
		switch {
		case v6 && isTCP:
			build = packettest.TCP6
		case v6:
			build = packettest.UDP6
		case isTCP:
			build = packettest.TCP4
		default:
			build = packettest.UDP4
		}
		o.Size = 100 + r.IntN(1400)
		f := build(t, o)
		if len(f) != o.Size {
			t.Fatalf("case %d: built %d bytes, asked %d", i, len(f), o.Size)
		}
		d := desc(f)
		if err := packet.Parse(d); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		l3Off := uint16(14 + 4*int(tags))
		w := want{l3: l3, etherType: et, l3Off: l3Off, l4Off: l3Off + uint16(iplen), dscp: o.DSCP, ecn: o.ECN,
			proto: proto, tags: tags, srcPort: o.SrcPort, dstPort: o.DstPort, src: o.Src, dst: o.Dst}
		if tags > 0 {
			w.pcp, w.vlan = o.Tags[0].PCP, o.Tags[0].VLAN
		}
		if g := got(d); g != w {
			t.Fatalf("case %d:\n got %+v\nwant %+v", i, g, w)
		}
		if d.SrcMAC() != o.SrcMAC || d.DstMAC() != o.DstMAC {
			t.Fatalf("case %d: MACs %v → %v, want %v → %v", i, d.SrcMAC(), d.DstMAC(), o.SrcMAC, o.DstMAC)
		}
	}
}

func TestMAC(t *testing.T) {
	cases := []struct {
		m         packet.MAC
		bcast, mc bool
		str       string
	}{
		{packet.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true, true, "ff:ff:ff:ff:ff:ff"},
		{packet.MAC{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}, false, true, "01:00:5e:00:00:fb"},
		{packet.MAC{0x33, 0x33, 0, 0, 0, 1}, false, true, "33:33:00:00:00:01"},
		{packet.MAC{0x02, 0xab, 0xcd, 0xef, 0x01, 0x23}, false, false, "02:ab:cd:ef:01:23"},
		{packet.MAC{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff}, false, false, "fe:ff:ff:ff:ff:ff"},
	}
	for _, c := range cases {
		if c.m.IsBroadcast() != c.bcast || c.m.IsMulticast() != c.mc {
			t.Errorf("%v: broadcast %v multicast %v, want %v %v", c.m, c.m.IsBroadcast(), c.m.IsMulticast(), c.bcast, c.mc)
		}
		if s := c.m.String(); s != c.str || s != net.HardwareAddr(c.m[:]).String() {
			t.Errorf("String %q, want %q", s, c.str)
		}
	}
	// Short frames: the accessors return zero values instead of panicking.
	d := &packet.Desc{Buf: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Len: 8}
	if d.DstMAC() != (packet.MAC{1, 2, 3, 4, 5, 6}) || d.SrcMAC() != (packet.MAC{}) {
		t.Errorf("8-byte frame: dst %v src %v", d.DstMAC(), d.SrcMAC())
	}
	if d.SrcAddr().IsValid() || d.DstAddr().IsValid() {
		t.Error("non-IP descriptor returned a valid address")
	}
}

func TestParseErrorValues(t *testing.T) {
	seen := map[string]bool{}
	for k := range packet.NumParseErrors {
		e := packet.ParseError(k)
		s := e.Error()
		if !strings.HasPrefix(s, "packet: ") || s != strings.ToLower(s) || seen[s] {
			t.Errorf("ParseError(%d).Error() = %q: want a distinct lowercase \"packet: \" message", k, s)
		}
		seen[s] = true
	}
	var err error = packet.ErrIHL
	var pe packet.ParseError
	if !errors.As(err, &pe) || pe != packet.ErrIHL {
		t.Errorf("errors.As(%v) = %v", err, pe)
	}
	// Len beyond the buffer is a caller bug; Parse reports it, never panics.
	for _, n := range []int{-1, 65} {
		d := &packet.Desc{Buf: make([]byte, 60, 64), Len: n}
		if err := packet.Parse(d); err != packet.ErrLen {
			t.Errorf("Len %d: err %v, want %v", n, err, packet.ErrLen)
		}
		if packet.SetCE(d) || d.SrcAddr().IsValid() || d.SrcMAC() != (packet.MAC{}) {
			t.Errorf("Len %d: accessors or SetCE acted on a bad descriptor", n)
		}
	}
	// Len up to cap(Buf) is allowed, as Frame allows it.
	d := &packet.Desc{Buf: make([]byte, 0, 64), Len: 64}
	binary.BigEndian.PutUint16(d.Buf[12:14], 0x88b5)
	if err := packet.Parse(d); err != nil || d.EtherType != 0x88b5 {
		t.Errorf("Len == cap: err %v, EtherType %#x", err, d.EtherType)
	}
}
