package packettest_test

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// TestBuildersDecode decodes every builder's output with gopacket, an
// independent parser, and checks what was asked for, including checksums.
func TestBuildersDecode(t *testing.T) {
	o := packettest.Options{
		DstMAC: packet.MAC{0x02, 1, 2, 3, 4, 5}, SrcMAC: packet.MAC{0x02, 6, 7, 8, 9, 10},
		Tags:    []packettest.Tag{{TPID: packet.EtherTypeQinQ, PCP: 5, VLAN: 300}, {PCP: 1, VLAN: 7}},
		SrcPort: 1111, DstPort: 2222, DSCP: 46, ECN: packet.ECT1, TTL: 9, Size: 200,
	}
	builders := []struct {
		name  string
		build func(testing.TB, packettest.Options) []byte
		v6    bool
		tcp   bool
	}{
		{"UDP4", packettest.UDP4, false, false},
		{"TCP4", packettest.TCP4, false, true},
		{"UDP6", packettest.UDP6, true, false},
		{"TCP6", packettest.TCP6, true, true},
	}
	for _, b := range builders {
		f := b.build(t, o)
		if len(f) != o.Size {
			t.Errorf("%s: %d bytes, want %d", b.name, len(f), o.Size)
		}
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		if el := p.ErrorLayer(); el != nil {
			t.Fatalf("%s: gopacket: %v", b.name, el.Error())
		}
		e := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		if packet.MAC(e.SrcMAC) != o.SrcMAC || packet.MAC(e.DstMAC) != o.DstMAC || e.EthernetType != layers.EthernetTypeQinQ {
			t.Errorf("%s: Ethernet %v → %v type %v", b.name, e.SrcMAC, e.DstMAC, e.EthernetType)
		}
		var tags []*layers.Dot1Q
		for _, l := range p.Layers() {
			if q, ok := l.(*layers.Dot1Q); ok {
				tags = append(tags, q)
			}
		}
		if len(tags) != 2 || tags[0].Priority != 5 || tags[0].VLANIdentifier != 300 || tags[1].Priority != 1 ||
			tags[1].VLANIdentifier != 7 || tags[0].Type != layers.EthernetTypeDot1Q {
			t.Errorf("%s: tags %+v", b.name, tags)
		}
		var tos, ttl uint8
		var src, dst netip.Addr
		if b.v6 {
			ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			tos, ttl = ip.TrafficClass, ip.HopLimit
			src, dst = netip.AddrFrom16([16]byte(ip.SrcIP)), netip.AddrFrom16([16]byte(ip.DstIP))
			if src != netip.MustParseAddr("2001:2::1") || dst != netip.MustParseAddr("2001:2::2") {
				t.Errorf("%s: default addresses %v → %v", b.name, src, dst)
			}
		} else {
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			tos, ttl = ip.TOS, ip.TTL
			src, dst = netip.AddrFrom4([4]byte(ip.SrcIP.To4())), netip.AddrFrom4([4]byte(ip.DstIP.To4()))
			if src != netip.MustParseAddr("198.18.0.1") || dst != netip.MustParseAddr("198.18.0.2") {
				t.Errorf("%s: default addresses %v → %v", b.name, src, dst)
			}
		}
		if tos != 46<<2|1 || ttl != 9 {
			t.Errorf("%s: TOS %#02x TTL %d, want 0xb9 and 9", b.name, tos, ttl)
		}
		var sp, dp uint16
		if b.tcp {
			l := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
			sp, dp = uint16(l.SrcPort), uint16(l.DstPort)
		} else {
			l := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			sp, dp = uint16(l.SrcPort), uint16(l.DstPort)
		}
		if sp != 1111 || dp != 2222 {
			t.Errorf("%s: ports %d → %d", b.name, sp, dp)
		}
		d := packettest.Desc(t, f)
		if d.DSCP != 46 || d.ECN != packet.ECT1 || d.PCP != 5 || d.VLAN != 300 || d.Tags != 2 {
			t.Errorf("%s: Desc %+v", b.name, d)
		}
	}
	// The zero Options give a minimum-size frame: headers padded to 60 bytes.
	if n := len(packettest.UDP4(t, packettest.Options{})); n != 60 {
		t.Errorf("zero Options UDP4: %d bytes, want 60", n)
	}
}

// fatalTB records a Fatalf and stops the calling goroutine, as testing does.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}

func TestBadOptionsFail(t *testing.T) {
	v6 := netip.MustParseAddr("2001:2::9")
	cases := map[string]func(testing.TB){
		"dscp-64":         func(tb testing.TB) { packettest.UDP4(tb, packettest.Options{DSCP: 64}) },
		"ecn-4":           func(tb testing.TB) { packettest.UDP4(tb, packettest.Options{ECN: 4}) },
		"size-below-hdrs": func(tb testing.TB) { packettest.TCP4(tb, packettest.Options{Size: 53}) },
		"v6-addr-in-v4":   func(tb testing.TB) { packettest.UDP4(tb, packettest.Options{Src: v6}) },
		"v4-addr-in-v6": func(tb testing.TB) {
			packettest.UDP6(tb, packettest.Options{Dst: netip.MustParseAddr("198.18.0.9")})
		},
		"pcp-8":     func(tb testing.TB) { packettest.UDP4(tb, packettest.Options{Tags: []packettest.Tag{{PCP: 8}}}) },
		"vlan-4096": func(tb testing.TB) { packettest.UDP4(tb, packettest.Options{Tags: []packettest.Tag{{VLAN: 4096}}}) },
		"desc-rejects": func(tb testing.TB) {
			packettest.Desc(tb, packettest.UDP4(tb, packettest.Options{})[:20])
		},
	}
	for name, fn := range cases {
		tb := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			fn(tb)
		}()
		<-done
		if !tb.failed {
			t.Errorf("%s: builder did not fail the test", name)
		}
	}
	// The smallest allowed Size is exactly the headers.
	if n := len(packettest.TCP4(t, packettest.Options{Size: 54})); n != 54 {
		t.Errorf("Size 54: %d bytes", n)
	}
}

// TestPayload: Payload starts the transport payload, zeros fill it up to
// Size, and a zero Size fits the frame to it.
func TestPayload(t *testing.T) {
	pl := []byte{1, 2, 3, 4, 5}
	for _, c := range []struct {
		size, want int
	}{{0, 14 + 20 + 8 + 5}, {100, 100}} {
		f := packettest.UDP4(t, packettest.Options{Payload: pl, Size: c.size})
		if len(f) != c.want {
			t.Fatalf("Size %d: %d bytes, want %d", c.size, len(f), c.want)
		}
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		u, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if !ok || len(u.Payload) != c.want-42 || string(u.Payload[:5]) != string(pl) || (len(u.Payload) > 5 && u.Payload[5] != 0) {
			t.Fatalf("Size %d: UDP payload %v", c.size, u)
		}
	}
}
