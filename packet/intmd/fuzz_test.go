package intmd_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
)

// FuzzParse: Parse never panics; what it accepts has a stack of whole
// records inside b, every record decodes, and its headers put back are
// the bytes it read.
func FuzzParse(f *testing.F) {
	b := make([]byte, intmd.HeaderLen+2*24+8)
	h := hpcc(f, 5)
	h.Length += 2 * 6
	h.Put(b)
	f.Add(b)
	f.Add(b[:intmd.HeaderLen])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, stack, err := intmd.Parse(b)
		if err != nil {
			return
		}
		if len(stack) != h.StackLen() || intmd.HeaderLen+len(stack) > len(b) || len(stack)%h.RecordLen() != 0 {
			t.Fatalf("%+v: a %d-byte stack in %d bytes", h, len(stack), len(b))
		}
		for i := range h.Hops() {
			hop, ok := h.Hop(stack, i)
			if !ok || hop.Unknown < 0 {
				t.Fatalf("record %d of %d: %+v, %v", i, h.Hops(), hop, ok)
			}
		}
		if _, ok := h.Hop(stack, h.Hops()); ok {
			t.Fatal("a record past the stack decoded")
		}
		out := make([]byte, intmd.HeaderLen)
		h.Put(out)
		in := bytes.Clone(b[:intmd.HeaderLen])
		in[0] &^= 0x03 // the reserved bits Put leaves 0
		in[4] &^= 0x01
		in[5] = 0
		in[6] &= 0x1f
		if !bytes.Equal(out, in) {
			t.Fatalf("headers % x put back as % x", in, out)
		}
	})
}

// FuzzPush: on any frame, Open and Push never panic nor write outside the
// frame they may grow to; when Push adds a record, the frame still parses
// with the same headers, grows by exactly one record, keeps the payload
// behind the stack, and its IP and UDP checksums equal a full
// recomputation (incremental RFC 1624 against a sum of every word); when
// it adds none, only the INT flags (and the UDP checksum) change.
func FuzzPush(f *testing.F) {
	for _, v6 := range []bool{false, true} {
		f.Add(frame(f, hpcc(f, 2), 33, v6, false), uint16(1514))
		f.Add(frame(f, hpcc(f, 1), 64, v6, true), uint16(200))
	}
	f.Fuzz(func(t *testing.T, fr []byte, limit uint16) {
		if len(fr) > 1800 {
			return
		}
		buf := make([]byte, 2048)
		copy(buf, fr)
		guard := bytes.Clone(buf[:])
		d := &packet.Desc{Buf: buf[:2000], Len: len(fr)}
		if packet.Parse(d) != nil {
			return
		}
		before := *d
		tr, err := intmd.Open(d)
		if err != nil {
			return
		}
		ipOK, udpOK := checksums(d, buf)
		m := intmd.Metadata{QueueID: 1, QueueBytes: 12345, EgressTS: 99, TxBytes: 7, LinkRate: 1e9, PortBytes: 5}
		n := tr.RecordLen()
		r := tr.Push(d, &m, int(limit))
		if !bytes.Equal(buf[2000:], guard[2000:]) {
			t.Fatal("Push wrote past the descriptor's buffer")
		}
		if r != intmd.Added {
			if d.Len != before.Len || !bytes.Equal(buf[d.Len:2000], guard[d.Len:2000]) {
				t.Fatalf("%v, yet the frame changed length or beyond", r)
			}
		} else {
			if d.Len != before.Len+n || d.Len > int(limit) {
				t.Fatalf("added a record: %d bytes from %d, record %d, limit %d", d.Len, before.Len, n, limit)
			}
			shim := int(d.L4Off) + 8
			if !bytes.Equal(buf[shim+intmd.HeaderLen+n:d.Len], guard[shim+intmd.HeaderLen:before.Len]) {
				t.Fatal("the stack and payload did not move up by one record")
			}
		}
		if err := packet.Parse(d); err != nil {
			t.Fatalf("%v: the frame no longer parses: %v", r, err)
		}
		if d.L3Off != before.L3Off || d.L4Off != before.L4Off || d.DSCP != before.DSCP || d.ECN != before.ECN {
			t.Fatalf("%v: headers moved: %+v, were %+v", r, d, before)
		}
		if ip, udp := checksums(d, buf); ip != ipOK || udp != udpOK {
			t.Fatalf("%v: checksums valid %v, %v; were %v, %v", r, ip, udp, ipOK, udpOK)
		}
		if _, err := intmd.Open(d); err != nil {
			t.Fatalf("%v: the INT headers no longer open: %v", r, err)
		}
	})
}

// checksums reports whether d's IPv4 header checksum (true for IPv6) and
// UDP checksum (true when none) verify, by full sums.
func checksums(d *packet.Desc, buf []byte) (ip, udp bool) {
	f := buf[:d.Len]
	l3, l4 := int(d.L3Off), int(d.L4Off)
	ip = true
	var sum uint32
	var end int
	if d.L3 == packet.L3IPv4 {
		hl := int(f[l3]&0x0f) * 4
		ip = fold(add(0, f[l3:l3+hl])) == 0xffff
		end = l3 + int(binary.BigEndian.Uint16(f[l3+2:]))
		sum = add(sum, f[l3+12:l3+20])
	} else {
		end = l3 + 40 + int(binary.BigEndian.Uint16(f[l3+4:]))
		sum = add(sum, f[l3+8:l3+40])
	}
	if d.L3 == packet.L3IPv4 && binary.BigEndian.Uint16(f[l4+6:]) == 0 {
		return ip, true
	}
	sum += uint32(packet.ProtoUDP) + uint32(end-l4)
	sum = add(sum, f[l4:end])
	return ip, fold(sum) == 0xffff
}

// add adds the 16-bit words of b to sum, a last odd byte padded with 0.
func add(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// fold folds a ones' complement sum to 16 bits.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
