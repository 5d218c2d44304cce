package packet_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// TestNoAllocs: Parse (success and every error path), SetCE and the
// accessors allocate nothing (DESIGN "Rules of the hot path").
func TestNoAllocs(t *testing.T) {
	tcp4 := packettest.TCP4(t, packettest.Options{SrcPort: 1, DstPort: 2, ECN: packet.ECT0, Size: 1500})
	udp6 := packettest.UDP6(t, packettest.Options{SrcPort: 1, DstPort: 2, ECN: packet.ECT1, Size: 1500,
		Tags: []packettest.Tag{{TPID: packet.EtherTypeQinQ, VLAN: 1}, {VLAN: 2}}})
	bad := tcp4[:40]
	for name, f := range map[string][]byte{"ipv4-tcp": tcp4, "qinq-ipv6-udp": udp6, "truncated": bad} {
		d := &packet.Desc{Buf: f, Len: len(f)}
		var sink uint32
		if n := testing.AllocsPerRun(1000, func() {
			if err := packet.Parse(d); err != nil {
				sink += uint32(err.(packet.ParseError))
			}
			sink += uint32(d.SrcMAC()[0]) + uint32(d.DstMAC()[5])
			if d.SrcAddr().IsValid() && d.DstAddr().IsValid() {
				sink++
			}
		}); n != 0 {
			t.Errorf("%s: Parse and accessors allocate %v times per run", name, n)
		}
		_ = sink
	}
	for name, f := range map[string][]byte{"ipv4": tcp4, "ipv6": udp6} {
		d := packettest.Desc(t, f)
		l3 := int(d.L3Off)
		tos0, tos1, ck0, ck1 := f[l3], f[l3+1], f[l3+10], f[l3+11]
		if n := testing.AllocsPerRun(1000, func() {
			f[l3], f[l3+1], f[l3+10], f[l3+11] = tos0, tos1, ck0, ck1 // unmark, so each run marks
			if !packet.SetCE(d) {
				t.Fatal("SetCE = false")
			}
		}); n != 0 {
			t.Errorf("%s: SetCE allocates %v times per run", name, n)
		}
	}
}

func benchParse(b *testing.B, f []byte) {
	d := &packet.Desc{Buf: f, Len: len(f)}
	b.ReportAllocs()
	for b.Loop() {
		if err := packet.Parse(d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}

func BenchmarkParse(b *testing.B) {
	b.Run("IPv4-TCP", func(b *testing.B) {
		benchParse(b, packettest.TCP4(b, packettest.Options{SrcPort: 1, DstPort: 2, Size: 1500}))
	})
	b.Run("IPv6-UDP", func(b *testing.B) {
		benchParse(b, packettest.UDP6(b, packettest.Options{SrcPort: 1, DstPort: 2, Size: 1500}))
	})
	b.Run("QinQ-IPv4-UDP", func(b *testing.B) {
		benchParse(b, packettest.UDP4(b, packettest.Options{SrcPort: 1, DstPort: 2, Size: 64,
			Tags: []packettest.Tag{{TPID: packet.EtherTypeQinQ, VLAN: 1}, {VLAN: 2}}}))
	})
}

func BenchmarkSetCE(b *testing.B) {
	for name, f := range map[string][]byte{
		"IPv4": packettest.TCP4(b, packettest.Options{ECN: packet.ECT0, Size: 1500}),
		"IPv6": packettest.UDP6(b, packettest.Options{ECN: packet.ECT1, Size: 1500}),
	} {
		b.Run(name, func(b *testing.B) {
			d := packettest.Desc(b, f)
			l3 := int(d.L3Off)
			tos0, tos1, ck0, ck1 := f[l3], f[l3+1], f[l3+10], f[l3+11]
			b.ReportAllocs()
			for b.Loop() {
				f[l3], f[l3+1], f[l3+10], f[l3+11] = tos0, tos1, ck0, ck1 // unmark, so each run marks
				packet.SetCE(d)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
		})
	}
}
