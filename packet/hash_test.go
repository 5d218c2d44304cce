package packet_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

func hashOf(t *testing.T, f []byte) uint32 {
	t.Helper()
	return packettest.Desc(t, f).FlowHash()
}

// TestHashFlowIdentity: the hash depends on the 5-tuple alone, not on DSCP,
// ECN, TTL, size, VLAN tags or MACs, and it survives SetCE.
func TestHashFlowIdentity(t *testing.T) {
	for _, build := range []func(testing.TB, packettest.Options) []byte{
		packettest.UDP4, packettest.TCP4, packettest.UDP6, packettest.TCP6,
	} {
		base := packettest.Options{SrcPort: 40000, DstPort: 5201, ECN: packet.ECT0}
		h := hashOf(t, build(t, base))
		same := []packettest.Options{
			{SrcPort: 40000, DstPort: 5201, DSCP: 46, ECN: packet.CE, TTL: 3, Size: 1500},
			{SrcPort: 40000, DstPort: 5201, Tags: []packettest.Tag{{PCP: 7, VLAN: 42}}},
			{SrcPort: 40000, DstPort: 5201, SrcMAC: packet.MAC{2, 9, 9, 9, 9, 9}, DstMAC: packet.MAC{2, 8, 8, 8, 8, 8}},
		}
		for _, o := range same {
			if g := hashOf(t, build(t, o)); g != h {
				t.Errorf("same 5-tuple, other fields %+v: hash %#08x, want %#08x", o, g, h)
			}
		}
		d := packettest.Desc(t, build(t, base))
		packet.SetCE(d)
		if err := packet.Parse(d); err != nil || d.FlowHash() != h {
			t.Errorf("hash after SetCE %#08x (err %v), want %#08x", d.FlowHash(), err, h)
		}
	}
}

// TestHashFieldSensitivity: changing any one 5-tuple field, or the
// direction, changes the hash, over many random flows.
func TestHashFieldSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		var a, b [16]byte
		fill(r, a[:])
		fill(r, b[:])
		o := packettest.Options{SrcPort: uint16(r.Uint32()), DstPort: uint16(r.Uint32())}
		for _, v6 := range []bool{false, true} {
			udpB, tcpB := packettest.UDP4, packettest.TCP4
			o.Src, o.Dst = netip.AddrFrom4([4]byte(a[:4])), netip.AddrFrom4([4]byte(b[:4]))
			if v6 {
				udpB, tcpB = packettest.UDP6, packettest.TCP6
				o.Src, o.Dst = netip.AddrFrom16(a), netip.AddrFrom16(b)
			}
			h := hashOf(t, udpB(t, o))
			variants := map[string]packettest.Options{}
			v := o
			v.SrcPort++
			variants["src port"] = v
			v = o
			v.DstPort ^= 0x8000
			variants["dst port"] = v
			v = o
			v.Src = o.Src.Next()
			variants["src addr"] = v
			v = o
			v.Dst = o.Dst.Prev()
			variants["dst addr"] = v
			v = o
			v.Src, v.Dst, v.SrcPort, v.DstPort = o.Dst, o.Src, o.DstPort, o.SrcPort
			variants["reverse direction"] = v
			for name, v := range variants {
				if v.Src.IsValid() && v.Dst.IsValid() && hashOf(t, udpB(t, v)) == h {
					t.Errorf("%s changed but hash %#08x did not (v6 %v)", name, h, v6)
				}
			}
			if hashOf(t, tcpB(t, o)) == h {
				t.Errorf("protocol UDP→TCP changed but hash %#08x did not (v6 %v)", h, v6)
			}
		}
	}
}

// TestHashMACPair: non-IP frames hash over the MAC pair only.
func TestHashMACPair(t *testing.T) {
	frame := func(src, dst packet.MAC, et layers.EthernetType, fillByte byte) []byte {
		body := make([]byte, 46)
		for i := range body {
			body[i] = fillByte
		}
		e := &layers.Ethernet{SrcMAC: src[:], DstMAC: dst[:], EthernetType: et}
		return serialize(t, e, gopacket.Payload(body))
	}
	a, b := packet.MAC{2, 0, 0, 0, 0, 1}, packet.MAC{2, 0, 0, 0, 0, 2}
	h := hashOf(t, frame(a, b, layers.EthernetTypeARP, 1))
	if g := hashOf(t, frame(a, b, layers.EthernetTypeARP, 2)); g != h {
		t.Errorf("ARP body changed the hash: %#08x vs %#08x", g, h)
	}
	if g := hashOf(t, frame(a, b, layers.EthernetTypeLinkLayerDiscovery, 3)); g != h {
		t.Errorf("same MAC pair, other EtherType: %#08x vs %#08x", g, h)
	}
	for i := range 12 {
		s, d := a, b
		if i < 6 {
			d[i] ^= 0x80
		} else {
			s[i-6] ^= 0x01
		}
		if hashOf(t, frame(s, d, layers.EthernetTypeARP, 1)) == h {
			t.Errorf("MAC byte %d changed but the hash did not", i)
		}
	}
}

// TestHashDistribution: the low bits of the hash (what a power-of-two table
// indexes with) spread sequential flows evenly. Chi-square over 256 buckets
// of 64Ki flows with consecutive source ports and addresses, 255 degrees of
// freedom: the 0.1% critical value is 330.5.
func TestHashDistribution(t *testing.T) {
	const buckets, flows = 256, 1 << 16
	for _, v6 := range []bool{false, true} {
		var count [buckets]int
		f := packettest.UDP4(t, packettest.Options{DstPort: 80})
		l4 := 34
		if v6 {
			f = packettest.UDP6(t, packettest.Options{DstPort: 80})
			l4 = 54
		}
		d := &packet.Desc{Buf: f, Len: len(f)}
		for i := range flows {
			binary.BigEndian.PutUint16(f[l4:], uint16(i))           // source port
			binary.BigEndian.PutUint16(f[l4-2:], uint16(i>>8)&0xff) // last bytes of the destination address
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			count[d.FlowHash()%buckets]++
		}
		exp := float64(flows) / buckets
		var chi2 float64
		for _, c := range count {
			chi2 += (float64(c) - exp) * (float64(c) - exp) / exp
		}
		if chi2 > 330.5 {
			t.Errorf("v6 %v: chi-square %.1f over %d buckets, above the 0.1%% critical value 330.5", v6, chi2, buckets)
		}
	}
}
