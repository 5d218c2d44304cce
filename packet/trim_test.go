package packet_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// trimDSCP is the DSCP the tests mark trimmed packets with.
const trimDSCP = 5

// checkTrimmed checks a frame Trim cut from before to want bytes with
// DSCP dscp: gopacket decodes it with valid IPv4 and UDP checksums and
// consistent lengths, Parse takes it with the same offsets, the DSCP is
// dscp and the ECN field unchanged, and every byte Trim had no reason to
// touch is as it was.
func checkTrimmed(t *testing.T, before []byte, d *packet.Desc, dscp uint8, want int) {
	t.Helper()
	f := d.Frame()
	if d.Len != want || !d.Trimmed {
		t.Fatalf("trimmed to %d bytes (Trimmed %v), want %d", d.Len, d.Trimmed, want)
	}
	ref := packettest.Desc(t, append([]byte(nil), before...))
	l3, l4 := int(ref.L3Off), int(ref.L4Off)
	ipEnd := l3 + int(binary.BigEndian.Uint16(before[l3+2:])) // where the IP packet ends, and the UDP datagram
	if ref.L3 == packet.L3IPv6 {
		ipEnd = l4 + int(binary.BigEndian.Uint16(before[l3+4:]))
	}
	ipEnd = min(ipEnd, want) // the frame may go on past it: Ethernet padding
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if u == nil {
		t.Fatal("gopacket found no UDP layer")
	}
	if int(u.Length) != ipEnd-l4 {
		t.Errorf("UDP length %d, want %d", u.Length, ipEnd-l4)
	}
	zeroV4 := false
	switch ip := p.NetworkLayer().(type) {
	case *layers.IPv4:
		if _, v := ip.VerifyChecksum(); !v.Valid {
			t.Errorf("IPv4 checksum %#04x, want %#04x", v.Actual, v.Correct)
		}
		if int(ip.Length) != ipEnd-l3 || ip.TOS>>2 != dscp || packet.ECN(ip.TOS&3) != ref.ECN {
			t.Errorf("IPv4 length %d TOS %#02x; want %d, DSCP %d, %v", ip.Length, ip.TOS, ipEnd-l3, dscp, ref.ECN)
		}
		_ = u.SetNetworkLayerForChecksum(ip)
		zeroV4 = binary.BigEndian.Uint16(before[l4+6:]) == 0
	case *layers.IPv6:
		if int(ip.Length) != ipEnd-l4 || ip.TrafficClass>>2 != dscp || packet.ECN(ip.TrafficClass&3) != ref.ECN {
			t.Errorf("IPv6 payload length %d TC %#02x; want %d, DSCP %d, %v", ip.Length, ip.TrafficClass, ipEnd-l4, dscp, ref.ECN)
		}
		_ = u.SetNetworkLayerForChecksum(ip)
	default:
		t.Fatalf("network layer %T", ip)
	}
	err, v := u.VerifyChecksum()
	switch {
	case err != nil:
		t.Fatal(err)
	case zeroV4 && u.Checksum != 0:
		t.Errorf("an IPv4 datagram sent without a UDP checksum got %#04x", u.Checksum)
	case !zeroV4 && (u.Checksum == 0 || !v.Valid):
		t.Errorf("UDP checksum %#04x, want %#04x", v.Actual, v.Correct)
	}
	var got packet.Desc
	got.Buf, got.Len = f, len(f)
	if err := packet.Parse(&got); err != nil || int(got.L3Off) != l3 || int(got.L4Off) != l4 || got.DSCP != dscp || got.ECN != ref.ECN || d.DSCP != dscp {
		t.Errorf("re-parse: %v, L3 %d L4 %d DSCP %d (desc %d) %v; want %d %d %d %v", err, got.L3Off, got.L4Off, got.DSCP, d.DSCP, got.ECN, l3, l4, dscp, ref.ECN)
	}
	// Only the TOS or traffic class, the IP length, the IPv4 checksum and
	// the UDP length and checksum may change.
	touched := map[int]bool{l4 + 4: true, l4 + 5: true, l4 + 6: true, l4 + 7: true}
	if ref.L3 == packet.L3IPv4 {
		for _, i := range []int{1, 2, 3, 10, 11} {
			touched[l3+i] = true
		}
	} else {
		for _, i := range []int{0, 1, 4, 5} {
			touched[l3+i] = true
		}
	}
	for i := range f {
		if !touched[i] && f[i] != before[i] {
			t.Fatalf("byte %d changed %#02x → %#02x", i, before[i], f[i])
		}
	}
}

// TestTrim cuts UDP over IPv4 and IPv6, untagged, 802.1Q and QinQ, to
// the default (headers + 64 B), to a size, and to a size inside the
// headers (which keeps the headers whole); a packet shorter than the cut
// is only marked.
func TestTrim(t *testing.T) {
	qinq := []packettest.Tag{{TPID: packet.EtherTypeQinQ, VLAN: 10}, {VLAN: 20}}
	for _, c := range []struct {
		name string
		f    []byte
		hdr  int // L2–L4 headers
	}{
		{"ipv4", packettest.UDP4(t, packettest.Options{Size: 1514, SrcPort: 7, DstPort: 9, ECN: packet.ECT0, DSCP: 8}), 42},
		{"ipv6", packettest.UDP6(t, packettest.Options{Size: 1514, SrcPort: 7, DstPort: 9, ECN: packet.CE}), 62},
		{"dot1q-ipv4", packettest.UDP4(t, packettest.Options{Size: 1518, Tags: []packettest.Tag{{PCP: 3, VLAN: 5}}}), 46},
		{"qinq-ipv6", packettest.UDP6(t, packettest.Options{Size: 1522, ECN: packet.ECT1, Tags: qinq}), 70},
	} {
		for _, s := range []struct {
			size, want int
		}{
			{0, c.hdr + packet.DefaultTrimPayload},
			{256, 256},
			{257, 257}, // an odd UDP length: the checksum pads with zero
			{10, c.hdr},
			{len(c.f) + 100, len(c.f)}, // nothing to cut: only marked
		} {
			d := desc(c.f)
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			if !packet.Trim(d, s.size, trimDSCP) {
				t.Fatalf("%s: Trim(%d) = false", c.name, s.size)
			}
			checkTrimmed(t, c.f, d, trimDSCP, s.want)
		}
	}
}

// TestTrimRandom cuts 2,000 random UDP datagrams (IPv4 with random
// options, or IPv6; random ports, payload, TOS, size and cut) and checks
// each with gopacket.
func TestTrimRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(2017, 25))
	for range 2000 {
		payload := make([]byte, r.IntN(1400))
		fill(r, payload)
		var f []byte
		tos := uint8(r.Uint32())
		if r.IntN(2) == 0 {
			ip := ipv4(tos, layers.IPProtocolUDP)
			if n := r.IntN(10); n > 0 {
				ip.Options = []layers.IPv4Option{{OptionType: 130, OptionLength: uint8(2 + 4*n), OptionData: make([]byte, 4*n)}}
			}
			f = serialize(t, eth(layers.EthernetTypeIPv4), ip, udp(port(r), port(r), ip), gopacket.Payload(payload))
		} else {
			ip := ipv6(tos, layers.IPProtocolUDP)
			f = serialize(t, eth(layers.EthernetTypeIPv6), ip, udp(port(r), port(r), ip), gopacket.Payload(payload))
		}
		d := desc(f)
		if err := packet.Parse(d); err != nil {
			t.Fatal(err)
		}
		size := r.IntN(len(f) + 20)
		dscp := uint8(r.IntN(64))
		if !packet.Trim(d, size, dscp) {
			t.Fatalf("Trim(%d) of a %d-byte datagram = false", size, len(f))
		}
		hdr := int(d.L4Off) + 8
		ipEnd := int(d.L4Off) + int(binary.BigEndian.Uint16(f[d.L4Off+4:]))
		want := hdr + packet.DefaultTrimPayload
		if size > 0 {
			want = max(size, hdr)
		}
		if want >= ipEnd {
			want = len(f) // nothing to cut, not even gopacket's padding to 60 bytes
		}
		checkTrimmed(t, f, d, dscp, want)
	}
}

// port returns a random dynamic port (RFC 6335), where gopacket decodes
// no application layer (SIP, say) out of the payload.
func port(r *rand.Rand) uint16 { return uint16(49152 + r.IntN(16384)) }

// TestTrimZeroChecksum: an IPv4 datagram sent without a UDP checksum
// keeps none (RFC 768); checkTrimmed holds it to that.
func TestTrimZeroChecksum(t *testing.T) {
	f := packettest.UDP4(t, packettest.Options{Size: 1000})
	d := packettest.Desc(t, append([]byte(nil), f...))
	f[d.L4Off+6], f[d.L4Off+7] = 0, 0
	d = desc(f)
	if err := packet.Parse(d); err != nil {
		t.Fatal(err)
	}
	if !packet.Trim(d, 0, trimDSCP) {
		t.Fatal("Trim = false")
	}
	checkTrimmed(t, f, d, trimDSCP, 42+packet.DefaultTrimPayload)
}

// TestTrimLeavesAlone: what Trim does not trim it leaves byte for byte,
// length and all: TCP over IPv4 and IPv6, ARP and other non-IP frames,
// IPv4 fragments (first with MF, and later ones), ICMP, an unparsed
// descriptor.
func TestTrimLeavesAlone(t *testing.T) {
	frag := func(flags uint16) []byte {
		f := packettest.UDP4(t, packettest.Options{Size: 1000})
		binary.BigEndian.PutUint16(f[14+6:], flags)
		f[14+10], f[14+11] = 0, 0
		binary.BigEndian.PutUint16(f[14+10:], ipv4Checksum(f[14:34]))
		return f
	}
	icmp := packettest.UDP4(t, packettest.Options{Size: 1000})
	icmp[14+9] = 1
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], packet.EtherTypeARP)
	other := make([]byte, 1000)
	binary.BigEndian.PutUint16(other[12:], 0x88b5) // local experimental
	for name, f := range map[string][]byte{
		"tcp4":       packettest.TCP4(t, packettest.Options{Size: 1500}),
		"tcp6":       packettest.TCP6(t, packettest.Options{Size: 1500}),
		"arp":        arp,
		"non-ip":     other,
		"first-frag": frag(0x2000),
		"later-frag": frag(0x0010),
		"icmp":       icmp,
	} {
		d := desc(f)
		if err := packet.Parse(d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dscp := d.DSCP
		if packet.Trim(d, 0, trimDSCP) || d.Len != len(f) || !bytes.Equal(d.Frame(), f) || d.DSCP != dscp || d.Trimmed {
			t.Errorf("%s: trimmed, or changed (len %d of %d, DSCP %d)", name, d.Len, len(f), d.DSCP)
		}
	}
	d := desc(packettest.UDP4(t, packettest.Options{Size: 1000})) // not parsed
	if packet.Trim(d, 0, trimDSCP) || d.Len != 1000 {
		t.Error("Trim cut an unparsed descriptor")
	}
}

func BenchmarkTrim(b *testing.B) {
	for _, c := range []struct {
		name string
		f    []byte
	}{
		{"ipv4", packettest.UDP4(b, packettest.Options{Size: 1514})},
		{"ipv6", packettest.UDP6(b, packettest.Options{Size: 1514})},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := desc(c.f)
			orig := append([]byte(nil), c.f...)
			b.ReportAllocs()
			for b.Loop() {
				copy(d.Buf, orig[:128]) // the fields Trim changed, all in the first 128 bytes
				d.Len = len(orig)
				if err := packet.Parse(d); err != nil || !packet.Trim(d, 0, trimDSCP) {
					b.Fatal("not trimmed")
				}
			}
		})
	}
}

// TestTrimNoAllocs: Trim allocates nothing (DESIGN "Rules of the hot
// path").
func TestTrimNoAllocs(t *testing.T) {
	orig := packettest.UDP6(t, packettest.Options{Size: 1514})
	d := desc(orig)
	if n := testing.AllocsPerRun(1000, func() {
		copy(d.Buf, orig)
		d.Len = len(orig)
		if err := packet.Parse(d); err != nil || !packet.Trim(d, 0, trimDSCP) {
			t.Fatal("not trimmed")
		}
	}); n != 0 {
		t.Errorf("Trim allocates %v times per run", n)
	}
}
