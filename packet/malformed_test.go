package packet_test

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// ipv4OptionsTCP is Ethernet/IPv4 (IHL 8: 12 bytes of options)/TCP with a
// payload, 14+32+20+30 = 96 bytes, no Ethernet padding.
func ipv4OptionsTCP(t testing.TB) []byte {
	ip := ipv4(0x02, layers.IPProtocolTCP)
	ip.Options = []layers.IPv4Option{{OptionType: 130, OptionLength: 11, OptionData: make([]byte, 9)}}
	f := serialize(t, eth(layers.EthernetTypeIPv4), ip, tcp(1, 2, ip), gopacket.Payload(make([]byte, 30)))
	if len(f) != 96 || f[14] != 0x48 {
		t.Fatalf("ipv4OptionsTCP: %d bytes, first IP byte %#x", len(f), f[14])
	}
	return f
}

func TestParseMalformed(t *testing.T) {
	u4 := func(t *testing.T) []byte { return packettest.UDP4(t, packettest.Options{Size: 100}) }
	t4 := func(t *testing.T) []byte { return packettest.TCP4(t, packettest.Options{Size: 64}) } // 10 bytes of payload
	u6 := func(t *testing.T) []byte { return packettest.UDP6(t, packettest.Options{Size: 100}) }
	t6 := func(t *testing.T) []byte { return packettest.TCP6(t, packettest.Options{Size: 100}) }
	q1 := func(t *testing.T) []byte {
		return packettest.UDP4(t, packettest.Options{Size: 100, Tags: []packettest.Tag{{VLAN: 5}}})
	}
	qq := func(t *testing.T) []byte {
		return packettest.UDP6(t, packettest.Options{Size: 100,
			Tags: []packettest.Tag{{TPID: packet.EtherTypeQinQ, VLAN: 5}, {VLAN: 6}}})
	}
	put16 := func(f []byte, off int, v uint16) []byte { binary.BigEndian.PutUint16(f[off:], v); return f }
	none := packet.ParseError(0xff) // marks "no error expected"

	cases := []struct {
		name  string
		frame func(t *testing.T) []byte
		want  packet.ParseError
	}{
		{"empty", func(t *testing.T) []byte { return nil }, packet.ErrTruncated},
		{"13-bytes", func(t *testing.T) []byte { return u4(t)[:13] }, packet.ErrTruncated},
		{"dot1q-tag-half", func(t *testing.T) []byte { return q1(t)[:16] }, packet.ErrTruncated},
		{"dot1q-tag-no-ethertype", func(t *testing.T) []byte { return q1(t)[:17] }, packet.ErrTruncated},
		{"qinq-inner-tag-truncated", func(t *testing.T) []byte { return qq(t)[:21] }, packet.ErrTruncated},
		{"ipv4-no-header", func(t *testing.T) []byte { return u4(t)[:14] }, packet.ErrTruncated},
		{"ipv4-fixed-header-truncated", func(t *testing.T) []byte { return u4(t)[:33] }, packet.ErrTruncated},
		{"ipv4-dot1q-fixed-header-truncated", func(t *testing.T) []byte { return q1(t)[:37] }, packet.ErrTruncated},
		{"ipv4-options-cut-at-fixed-header", func(t *testing.T) []byte { return ipv4OptionsTCP(t)[:34] }, packet.ErrIHL},
		{"ipv4-options-cut-inside", func(t *testing.T) []byte { return ipv4OptionsTCP(t)[:45] }, packet.ErrIHL},
		{"ipv4-ihl-0", func(t *testing.T) []byte { f := u4(t); f[14] = 0x40; return f }, packet.ErrIHL},
		{"ipv4-ihl-4", func(t *testing.T) []byte { f := u4(t); f[14] = 0x44; return f }, packet.ErrIHL},
		{"ipv4-ihl-15-beyond-frame", func(t *testing.T) []byte {
			f := packettest.UDP4(t, packettest.Options{}) // 60 bytes: 46 after Ethernet
			f[14] = 0x4f
			return f
		}, packet.ErrIHL},
		{"ipv4-total-length-beyond-frame", func(t *testing.T) []byte { return put16(u4(t), 16, 87) }, packet.ErrTotalLength},
		{"ipv4-total-length-max", func(t *testing.T) []byte { return put16(u4(t), 16, 0xffff) }, packet.ErrTotalLength},
		{"ipv4-total-length-below-ihl", func(t *testing.T) []byte { return put16(u4(t), 16, 19) }, packet.ErrTotalLength},
		{"ipv4-total-length-zero", func(t *testing.T) []byte { return put16(u4(t), 16, 0) }, packet.ErrTotalLength},
		{"ipv4-total-length-below-options", func(t *testing.T) []byte { return put16(ipv4OptionsTCP(t), 16, 31) }, packet.ErrTotalLength},
		{"ipv4-payload-truncated", func(t *testing.T) []byte { return u4(t)[:99] }, packet.ErrTotalLength},
		{"ipv4-version-6", func(t *testing.T) []byte { f := u4(t); f[14] = 0x65; return f }, packet.ErrVersion},
		{"ipv4-version-0", func(t *testing.T) []byte { f := u4(t); f[14] = 0x05; return f }, packet.ErrVersion},
		{"ipv4-dot1q-version-15", func(t *testing.T) []byte { f := q1(t); f[18] = 0xf5; return f }, packet.ErrVersion},
		{"ipv6-version-4", func(t *testing.T) []byte { f := u6(t); f[14] = 0x40 | f[14]&0x0f; return f }, packet.ErrVersion},
		{"ipv6-ethertype-carrying-ipv4", func(t *testing.T) []byte { return put16(u4(t), 12, 0x86dd) }, packet.ErrVersion},
		{"ipv4-ethertype-carrying-ipv6", func(t *testing.T) []byte { return put16(u6(t), 12, 0x0800) }, packet.ErrVersion},
		{"ipv6-no-header", func(t *testing.T) []byte { return u6(t)[:14] }, packet.ErrTruncated},
		{"ipv6-header-truncated", func(t *testing.T) []byte { return u6(t)[:53] }, packet.ErrTruncated},
		{"ipv6-qinq-header-truncated", func(t *testing.T) []byte { return qq(t)[:61] }, packet.ErrTruncated},
		{"ipv6-payload-length-beyond-frame", func(t *testing.T) []byte { return put16(u6(t), 18, 47) }, packet.ErrTotalLength},
		{"ipv6-payload-truncated", func(t *testing.T) []byte { return u6(t)[:99] }, packet.ErrTotalLength},
		{"udp4-7-bytes", func(t *testing.T) []byte { return put16(u4(t), 16, 27) }, packet.ErrL4},
		{"udp4-0-bytes", func(t *testing.T) []byte { return put16(u4(t), 16, 20) }, packet.ErrL4},
		{"tcp4-19-bytes", func(t *testing.T) []byte { return put16(t4(t), 16, 39) }, packet.ErrL4},
		{"tcp4-data-offset-4", func(t *testing.T) []byte { f := t4(t); f[46] = 0x40; return f }, packet.ErrL4},
		{"tcp4-data-offset-0", func(t *testing.T) []byte { f := t4(t); f[46] = 0x00; return f }, packet.ErrL4},
		{"tcp4-data-offset-beyond-payload", func(t *testing.T) []byte { f := t4(t); f[46] = 0xf0; return f }, packet.ErrL4},
		{"tcp4-options-cut-by-total-length", func(t *testing.T) []byte {
			// Data offset 8 (32 bytes) fits in the frame but not in the IP length.
			f := t4(t)
			f[46] = 0x80
			return put16(f, 16, 20+30)
		}, packet.ErrL4},
		{"udp6-7-bytes", func(t *testing.T) []byte { return put16(u6(t), 18, 7) }, packet.ErrL4},
		{"tcp6-19-bytes", func(t *testing.T) []byte { return put16(t6(t), 18, 19) }, packet.ErrL4},
		{"tcp6-data-offset-2", func(t *testing.T) []byte { f := t6(t); f[66] = 0x20; return f }, packet.ErrL4},

		// Not errors: what the rules allow.
		{"ipv4-later-fragment-short-payload", func(t *testing.T) []byte {
			f := put16(u4(t), 16, 23) // 3 bytes of "UDP"
			return put16(f, 20, 0x2001)
		}, none},
		{"ipv4-header-only-icmp", func(t *testing.T) []byte { f := put16(u4(t), 16, 20); f[23] = 1; return f }, none},
		{"ipv6-no-payload-no-next-header", func(t *testing.T) []byte { f := put16(u6(t), 18, 0); f[20] = 59; return f }, none},
		{"arp-no-body", func(t *testing.T) []byte { return put16(u4(t), 12, 0x0806)[:14] }, none},
		{"unknown-ethertype-no-body", func(t *testing.T) []byte { return put16(u4(t), 12, 0x9000)[:14] }, none},
		{"dot1q-unknown-no-body", func(t *testing.T) []byte { return put16(q1(t), 16, 0x9000)[:18] }, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := desc(c.frame(t))
			err := packet.Parse(d)
			if c.want == none {
				if err != nil {
					t.Fatalf("Parse: %v, want nil", err)
				}
				return
			}
			if err != c.want {
				t.Fatalf("Parse: %v, want %v", err, c.want)
			}
			if d.L3 != packet.L3None || d.L3Off != 0 || d.L4Off != 0 {
				t.Errorf("fields not reset after error: %+v", d)
			}
			if packet.SetCE(d) {
				t.Error("SetCE marked a frame Parse rejected")
			}
		})
	}
}

// TestParseTruncatedEverywhere cuts well-formed frames (no Ethernet padding)
// at every length and checks the error names the header the cut falls in.
func TestParseTruncatedEverywhere(t *testing.T) {
	frames := map[string][]byte{
		"udp4":         packettest.UDP4(t, packettest.Options{Size: 80}),
		"tcp6":         packettest.TCP6(t, packettest.Options{Size: 100}),
		"ipv4-options": ipv4OptionsTCP(t),
		"dot1q-tcp4": packettest.TCP4(t, packettest.Options{Size: 90,
			Tags: []packettest.Tag{{PCP: 1, VLAN: 2}}}),
		"qinq-udp6": packettest.UDP6(t, packettest.Options{Size: 90,
			Tags: []packettest.Tag{{TPID: packet.EtherTypeQinQ, VLAN: 2}, {VLAN: 3}}}),
	}
	for name, full := range frames {
		d := desc(full)
		if err := packet.Parse(d); err != nil {
			t.Fatalf("%s: full frame: %v", name, err)
		}
		l3 := int(d.L3Off)
		ipHdr := 40
		if d.L3 == packet.L3IPv4 {
			ipHdr = int(full[l3]&0x0f) * 4
		}
		for n := range len(full) {
			var want packet.ParseError
			switch {
			case n < l3:
				want = packet.ErrTruncated // Ethernet header or a tag
			case d.L3 == packet.L3IPv4 && n < l3+20, d.L3 == packet.L3IPv6 && n < l3+40:
				want = packet.ErrTruncated // fixed IP header
			case n < l3+ipHdr:
				want = packet.ErrIHL // IPv4 options
			default:
				want = packet.ErrTotalLength // IP length now beyond the frame
			}
			if err := packet.Parse(desc(full[:n])); err != want {
				t.Errorf("%s cut to %d bytes: %v, want %v", name, n, err, want)
			}
		}
	}
}
