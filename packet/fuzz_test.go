package packet_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// FuzzParse: Parse never panics, never modifies the frame, and when it
// accepts a frame every offset and header length it reports lies inside the
// frame and agrees with the bytes (seeds in testdata/fuzz/FuzzParse).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte) {
		orig := append([]byte(nil), frame...)
		d := &packet.Desc{Buf: frame, Len: len(frame)}
		err := packet.Parse(d)
		if !bytes.Equal(frame, orig) {
			t.Fatal("Parse modified the frame")
		}
		d.FlowHash() // reads the frame at the parsed offsets: must not panic, parsed or not
		if err != nil {
			if _, ok := err.(packet.ParseError); !ok {
				t.Fatalf("error %v is not a ParseError", err)
			}
			if d.L3 != packet.L3None || d.L3Off != 0 || d.L4Off != 0 {
				t.Fatalf("fields not reset after %v: %+v", err, d)
			}
			return
		}
		n := len(frame)
		l3 := int(d.L3Off)
		if n < 14 || l3 != 14+4*int(d.Tags) || l3 > n || d.Tags > 2 {
			t.Fatalf("L3Off %d with %d tags in %d bytes", l3, d.Tags, n)
		}
		if et := binary.BigEndian.Uint16(frame[l3-2:]); et != d.EtherType {
			t.Fatalf("EtherType %#04x, bytes say %#04x", d.EtherType, et)
		}
		var ipEnd int // end of the IP packet, by its own length field
		switch d.L3 {
		case packet.L3IPv4:
			ip := frame[l3:]
			hl := int(ip[0]&0x0f) * 4
			tl := int(binary.BigEndian.Uint16(ip[2:]))
			if ip[0]>>4 != 4 || hl < 20 || hl > tl || l3+tl > n {
				t.Fatalf("accepted IPv4 with version %d, IHL %d, total length %d in %d bytes", ip[0]>>4, hl, tl, n)
			}
			if d.DSCP != ip[1]>>2 || d.ECN != packet.ECN(ip[1]&3) || d.Proto != ip[9] {
				t.Fatalf("DSCP %d ECN %v proto %d, TOS %#02x proto %d", d.DSCP, d.ECN, d.Proto, ip[1], ip[9])
			}
			if d.L4Off != 0 && int(d.L4Off) != l3+hl {
				t.Fatalf("L4Off %d, want %d", d.L4Off, l3+hl)
			}
			ipEnd = l3 + tl
		case packet.L3IPv6:
			ip := frame[l3:]
			if ip[0]>>4 != 6 || l3+40 > n {
				t.Fatalf("accepted IPv6 with version %d in %d bytes", ip[0]>>4, n)
			}
			ipEnd = l3 + 40 + int(binary.BigEndian.Uint16(ip[4:]))
			if ipEnd > n {
				t.Fatalf("IPv6 payload ends at %d, frame at %d", ipEnd, n)
			}
			if d.L4Off != 0 && int(d.L4Off) != l3+40 {
				t.Fatalf("L4Off %d, want %d", d.L4Off, l3+40)
			}
		default:
			if d.L4Off != 0 || d.SrcPort != 0 || d.DstPort != 0 || d.DSCP != 0 || d.ECN != 0 || d.Proto != 0 {
				t.Fatalf("non-IP frame with IP fields: %+v", d)
			}
			return
		}
		if d.L4Off == 0 {
			if d.SrcPort != 0 || d.DstPort != 0 {
				t.Fatalf("ports %d→%d without a transport header", d.SrcPort, d.DstPort)
			}
			return
		}
		l4 := int(d.L4Off)
		hdr := 8
		if d.Proto == packet.ProtoTCP {
			hdr = int(frame[l4+12]>>4) * 4
			if hdr < 20 {
				t.Fatalf("accepted TCP data offset %d", hdr)
			}
		} else if d.Proto != packet.ProtoUDP {
			t.Fatalf("L4Off set for protocol %d", d.Proto)
		}
		if l4+hdr > ipEnd {
			t.Fatalf("transport header [%d,%d) beyond the IP packet end %d", l4, l4+hdr, ipEnd)
		}
		if d.SrcPort != binary.BigEndian.Uint16(frame[l4:]) || d.DstPort != binary.BigEndian.Uint16(frame[l4+2:]) {
			t.Fatalf("ports %d→%d disagree with the bytes", d.SrcPort, d.DstPort)
		}
	})
}

// FuzzSetCE: for frames that parse as ECT IPv4 (with the checksum made
// correct first), the RFC 1624 incremental checksum equals a full
// recomputation and only the ECN bits and the checksum change; IPv6 changes
// only the traffic-class ECN bits; anything else is left untouched (seeds in
// testdata/fuzz/FuzzSetCE).
func FuzzSetCE(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte) {
		d := &packet.Desc{Buf: frame, Len: len(frame)}
		if packet.Parse(d) != nil {
			if packet.SetCE(d) {
				t.Fatal("SetCE marked a frame Parse rejected")
			}
			return
		}
		l3 := int(d.L3Off)
		ecn := d.ECN
		if d.L3 == packet.L3IPv4 {
			h := ipv4Header(d)
			binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h))
		}
		before := append([]byte(nil), frame...)
		marked := packet.SetCE(d)
		isIP := d.L3 == packet.L3IPv4 || d.L3 == packet.L3IPv6
		if want := isIP && ecn != packet.NotECT; marked != want {
			t.Fatalf("SetCE(%v, L3 %d) = %v, want %v", ecn, d.L3, marked, want)
		}
		if !marked && d.ECN != ecn {
			t.Fatalf("unmarked packet's ECN changed %v → %v", ecn, d.ECN)
		}
		for i := range frame {
			want := before[i]
			if ecn.IsECT() {
				switch {
				case d.L3 == packet.L3IPv4 && i == l3+1:
					want |= 0x03
				case d.L3 == packet.L3IPv4 && (i == l3+10 || i == l3+11):
					continue // checked against a full recomputation below
				case d.L3 == packet.L3IPv6 && i == l3+1:
					want |= 0x30
				}
			}
			if frame[i] != want {
				t.Fatalf("byte %d: %#02x → %#02x, want %#02x (L3 %d, %v)", i, before[i], frame[i], want, d.L3, ecn)
			}
		}
		if d.L3 == packet.L3IPv4 {
			h := ipv4Header(d)
			if got, want := binary.BigEndian.Uint16(h[10:]), ipv4Checksum(h); got != want {
				t.Fatalf("incremental checksum %#04x, full recomputation %#04x", got, want)
			}
		}
	})
}

// FuzzTrim: Trim never panics; it trims only parsed UDP over IPv4 or
// IPv6 (not a fragment), leaving anything else byte for byte; a trimmed
// frame is no longer than before, parses again with the same offsets, the
// DSCP asked for and the ECN it had, and its IPv4 header checksum (made
// correct first) and UDP checksum (unless an IPv4 datagram came without
// one) are valid by a full recomputation; bytes past the transport
// header's checksum are the original's.
func FuzzTrim(f *testing.F) {
	f.Add(packettest.UDP4(f, packettest.Options{Size: 1514, ECN: packet.ECT0}), uint16(0), uint8(5))
	f.Add(packettest.UDP6(f, packettest.Options{Size: 1514, Tags: []packettest.Tag{{VLAN: 3}}}), uint16(200), uint8(46))
	f.Add(packettest.TCP4(f, packettest.Options{Size: 1000}), uint16(0), uint8(5))
	f.Fuzz(func(t *testing.T, frame []byte, size uint16, dscp uint8) {
		d := &packet.Desc{Buf: frame, Len: len(frame)}
		parsed := packet.Parse(d) == nil
		if parsed && d.L3 == packet.L3IPv4 {
			h := ipv4Header(d)
			binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h))
		}
		before := append([]byte(nil), frame...)
		ref := *d
		if !packet.Trim(d, int(size), dscp) {
			if !bytes.Equal(frame, before) || d.Len != len(before) || d.DSCP != ref.DSCP || d.Trimmed {
				t.Fatal("Trim reported false and changed the packet")
			}
			return
		}
		if !parsed || ref.Proto != packet.ProtoUDP || ref.L4Off == 0 {
			t.Fatalf("trimmed a frame that is not parsed UDP (parsed %v, proto %d)", parsed, ref.Proto)
		}
		if d.Len > len(before) || d.Len < int(ref.L4Off)+8 || !d.Trimmed {
			t.Fatalf("trimmed to %d bytes of %d (transport header ends at %d)", d.Len, len(before), ref.L4Off+8)
		}
		got := &packet.Desc{Buf: frame, Len: d.Len}
		if err := packet.Parse(got); err != nil {
			t.Fatalf("the trimmed frame does not parse: %v", err)
		}
		if got.L3Off != ref.L3Off || got.L4Off != ref.L4Off || got.DSCP != dscp&0x3f || d.DSCP != got.DSCP || got.ECN != ref.ECN {
			t.Fatalf("re-parse: L3 %d L4 %d DSCP %d ECN %v; want %d %d %d %v", got.L3Off, got.L4Off, got.DSCP, got.ECN, ref.L3Off, ref.L4Off, dscp&0x3f, ref.ECN)
		}
		out, l3, l4 := frame[:d.Len], int(ref.L3Off), int(ref.L4Off)
		var pseudo []byte
		if got.L3 == packet.L3IPv4 {
			if h := ipv4Header(got); onesSum(h) != 0xffff {
				t.Fatalf("IPv4 header checksum invalid: sum %#04x", onesSum(h))
			}
			pseudo = append(pseudo, out[l3+12:l3+20]...)
		} else {
			pseudo = append(pseudo, out[l3+8:l3+40]...)
		}
		ulen := int(binary.BigEndian.Uint16(out[l4+4:]))
		if l4+ulen > d.Len || ulen < 8 {
			t.Fatalf("UDP length %d past the frame's %d bytes from %d", ulen, d.Len, l4)
		}
		if ck := binary.BigEndian.Uint16(out[l4+6:]); !(ck == 0 && got.L3 == packet.L3IPv4 && before[l4+6] == 0 && before[l4+7] == 0) && d.Len < len(before) {
			pseudo = append(pseudo, 0, packet.ProtoUDP, byte(ulen>>8), byte(ulen))
			seg := append(pseudo, out[l4:l4+ulen]...)
			if len(seg)%2 == 1 {
				seg = append(seg, 0)
			}
			if onesSum(seg) != 0xffff {
				t.Fatalf("UDP checksum %#04x invalid: sum %#04x", ck, onesSum(seg))
			}
		}
		if !bytes.Equal(out[l4+8:], before[l4+8:d.Len]) || !bytes.Equal(out[:l3], before[:l3]) {
			t.Fatal("bytes outside the IP and UDP headers changed")
		}
	})
}
