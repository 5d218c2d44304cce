package packet_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// TestChecksumOracle validates the test's own full recomputation against
// the checksums gopacket writes, with and without options, so the SetCE
// tests below compare against a trusted value.
func TestChecksumOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 500 {
		ip := ipv4(uint8(r.Uint32()), layers.IPProtocolUDP)
		ip.Id, ip.TTL = uint16(r.Uint32()), uint8(r.Uint32())
		if n := r.IntN(10); n > 0 {
			ip.Options = []layers.IPv4Option{{OptionType: 130, OptionLength: uint8(2 + 4*n), OptionData: make([]byte, 4*n)}}
		}
		f := serialize(t, eth(layers.EthernetTypeIPv4), ip, udp(1, 2, ip))
		d := desc(f)
		if err := packet.Parse(d); err != nil {
			t.Fatal(err)
		}
		h := ipv4Header(d)
		if got, want := ipv4Checksum(h), binary.BigEndian.Uint16(h[10:]); got != want {
			t.Fatalf("header %d: recomputed %#04x, gopacket wrote %#04x", i, got, want)
		}
		if onesSum(h) != 0xffff {
			t.Fatalf("header %d: ones' complement sum %#04x, want 0xffff", i, onesSum(h))
		}
	}
}

// randomIPv4Frame returns an Ethernet frame with 0–2 VLAN tags and a random
// IPv4 header: any IHL from 5 to 15 with random option bytes, random fields,
// an ECT(0) or ECT(1) TOS, a correct total length and header checksum.
func randomIPv4Frame(r *rand.Rand) []byte {
	tags := r.IntN(3)
	ihl := 5 + r.IntN(11)
	l3 := 14 + 4*tags
	f := make([]byte, l3+ihl*4+r.IntN(64))
	fill(r, f)
	tpid := []uint16{packet.EtherTypeQinQ, packet.EtherTypeVLAN}[r.IntN(2)]
	for i := range tags {
		binary.BigEndian.PutUint16(f[12+4*i:], tpid)
		tpid = packet.EtherTypeVLAN
	}
	binary.BigEndian.PutUint16(f[l3-2:], packet.EtherTypeIPv4)
	ip := f[l3:]
	ip[0] = 0x40 | byte(ihl)
	ip[1] = ip[1]&^0x03 | byte([]packet.ECN{packet.ECT0, packet.ECT1}[r.IntN(2)])
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	if ip[9] == packet.ProtoTCP || ip[9] == packet.ProtoUDP {
		ip[9] = 0xfd // experimental (RFC 3692): no transport header to validate
	}
	binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:ihl*4]))
	return f
}

// checkCE runs SetCE on an ECT IPv4 frame and checks RFC 1624 Eq. 3 against
// a full recomputation and that only the ECN bits and the checksum changed.
// It returns the marked IPv4 header (in a copy of f).
func checkCE(t *testing.T, f []byte) []byte {
	t.Helper()
	d := desc(f)
	if err := packet.Parse(d); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	before := append([]byte(nil), d.Frame()...)
	dscp, ecn := d.DSCP, d.ECN
	if !packet.SetCE(d) {
		t.Fatalf("SetCE(%v) = false", ecn)
	}
	after := d.Frame()
	l3 := int(d.L3Off)
	h := ipv4Header(d)
	if got, want := binary.BigEndian.Uint16(h[10:]), ipv4Checksum(h); got != want {
		t.Fatalf("incremental checksum %#04x, full recomputation %#04x (old %#04x, header % x)",
			got, want, binary.BigEndian.Uint16(before[l3+10:]), h)
	}
	for i := range after {
		switch {
		case i == l3+1:
			if after[i] != before[i]|0x03 {
				t.Fatalf("TOS %#02x → %#02x, want only the ECN bits set", before[i], after[i])
			}
		case i == l3+10 || i == l3+11:
		case after[i] != before[i]:
			t.Fatalf("byte %d changed %#02x → %#02x", i, before[i], after[i])
		}
	}
	if d.ECN != packet.CE {
		t.Fatalf("d.ECN = %v after SetCE", d.ECN)
	}
	if err := packet.Parse(d); err != nil || d.ECN != packet.CE || d.DSCP != dscp {
		t.Fatalf("re-parse: err %v ECN %v DSCP %d, want CE and DSCP %d", err, d.ECN, d.DSCP, dscp)
	}
	// Marking twice is a no-op that still reports CE.
	again := append([]byte(nil), after...)
	if !packet.SetCE(d) || !bytes.Equal(d.Frame(), again) {
		t.Fatal("second SetCE changed the frame or returned false")
	}
	return h
}

// TestSetCEIncrementalChecksum: RFC 1624 Eq. 3 equals a full recomputation
// on 20,000 random IPv4 headers of every IHL.
func TestSetCEIncrementalChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(0x1624, 3))
	for range 20000 {
		checkCE(t, randomIPv4Frame(r))
	}
}

// TestSetCEChecksumEdges covers the results RFC 1624 §3 is about: a header
// whose checksum is 0x0000 before marking, and one whose checksum becomes
// 0x0000 after (Eq. 2 would give 0xffff, −0, there; Eq. 3 must not).
func TestSetCEChecksumEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, after := range []bool{false, true} {
		found := 0
		for found < 20 {
			f := randomIPv4Frame(r)
			d := desc(f)
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			h := ipv4Header(d)
			// Search the identification field for a value giving checksum 0.
			for id := range 1 << 16 {
				binary.BigEndian.PutUint16(h[4:], uint16(id))
				probe := append([]byte(nil), h...)
				if after {
					probe[1] |= 0x03
				}
				if ipv4Checksum(probe) == 0 {
					binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h))
					old := binary.BigEndian.Uint16(h[10:])
					got := binary.BigEndian.Uint16(checkCE(t, d.Frame())[10:])
					if after && got != 0 || !after && old != 0 {
						t.Fatalf("edge case not hit: checksum %#04x before, %#04x after marking", old, got)
					}
					found++
					break
				}
			}
		}
	}
}

// TestSetCEPreservesChecksumError: an incremental update carries a wrong
// checksum along instead of silently fixing it (RFC 1624 §2), so the
// receiver still detects the corruption: the header's ones' complement sum
// is the same before and after (mod 0xffff).
func TestSetCEPreservesChecksumError(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		f := randomIPv4Frame(r)
		d := desc(f)
		if err := packet.Parse(d); err != nil {
			t.Fatal(err)
		}
		h := ipv4Header(d)
		binary.BigEndian.PutUint16(h[10:], binary.BigEndian.Uint16(h[10:])+1+uint16(r.IntN(0xfffe)))
		before := onesSum(h) % 0xffff
		if before == 0 {
			continue // the corruption happened to be another form of zero
		}
		packet.SetCE(d)
		if got := onesSum(h) % 0xffff; got != before {
			t.Fatalf("header sum %#04x before, %#04x after: the error was not preserved", before, got)
		}
	}
}

func TestSetCEIPv6(t *testing.T) {
	for dscp := range uint8(64) {
		for _, e := range []packet.ECN{packet.NotECT, packet.ECT1, packet.ECT0, packet.CE} {
			f := packettest.UDP6(t, packettest.Options{DSCP: dscp, ECN: e, Size: 120,
				Tags: []packettest.Tag{{VLAN: uint16(dscp)}}})
			// A non-zero flow label shares byte 1 with the traffic class.
			f[19] |= 0x0f
			f[20], f[21] = 0xab, 0xcd
			d := desc(f)
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			before := append([]byte(nil), d.Frame()...)
			marked := packet.SetCE(d)
			if want := e != packet.NotECT; marked != want {
				t.Fatalf("DSCP %d %v: SetCE = %v, want %v", dscp, e, marked, want)
			}
			for i, b := range d.Frame() {
				want := before[i]
				if i == 19 && e.IsECT() {
					want |= 0x30 // the ECN bits of the traffic class
				}
				if b != want {
					t.Fatalf("DSCP %d %v: byte %d %#02x → %#02x, want %#02x", dscp, e, i, before[i], b, want)
				}
			}
			if err := packet.Parse(d); err != nil {
				t.Fatal(err)
			}
			wantECN := packet.CE
			if e == packet.NotECT {
				wantECN = packet.NotECT
			}
			if d.DSCP != dscp || d.ECN != wantECN {
				t.Fatalf("DSCP %d %v: re-parsed DSCP %d ECN %v, want %d %v", dscp, e, d.DSCP, d.ECN, dscp, wantECN)
			}
		}
	}
}

// TestSetCENotMarkable: Not-ECT IPv4/IPv6 and non-IP frames are untouched
// and report false (RFC 3168 §5); CE reports true unchanged.
func TestSetCENotMarkable(t *testing.T) {
	arp := serialize(t, eth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet,
		Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
		SourceHwAddress: macA, SourceProtAddress: []byte{1, 2, 3, 4}, DstHwAddress: macB, DstProtAddress: []byte{5, 6, 7, 8}})
	// Bytes 14–15 of this unknown-EtherType frame look like an ECT IPv4 TOS.
	unknown := append(packettest.UDP4(t, packettest.Options{ECN: packet.ECT0}), 0)
	binary.BigEndian.PutUint16(unknown[12:], 0x9000)
	cases := []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"ipv4-not-ect", packettest.TCP4(t, packettest.Options{DSCP: 46}), false},
		{"ipv6-not-ect", packettest.TCP6(t, packettest.Options{DSCP: 46}), false},
		{"ipv4-ce", packettest.UDP4(t, packettest.Options{DSCP: 10, ECN: packet.CE}), true},
		{"ipv6-ce", packettest.UDP6(t, packettest.Options{ECN: packet.CE}), true},
		{"arp", arp, false},
		{"unknown-ethertype", unknown, false},
	}
	for _, c := range cases {
		d := desc(c.frame)
		if err := packet.Parse(d); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ecn := d.ECN
		if got := packet.SetCE(d); got != c.want {
			t.Errorf("%s: SetCE = %v, want %v", c.name, got, c.want)
		}
		if !bytes.Equal(d.Frame(), c.frame) || d.ECN != ecn {
			t.Errorf("%s: SetCE changed the frame or d.ECN (%v → %v)", c.name, ecn, d.ECN)
		}
	}
	// An unparsed descriptor (L3None) is never marked, whatever its bytes.
	d := desc(packettest.UDP4(t, packettest.Options{ECN: packet.ECT0}))
	if packet.SetCE(d) {
		t.Error("SetCE marked an unparsed descriptor")
	}
}
