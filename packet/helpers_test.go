package packet_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
)

// serialize builds a frame from gopacket layers with lengths and checksums
// fixed up, as a sender's stack would.
func serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		tb.Fatalf("serialize: %v", err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

var (
	macA = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	macB = net.HardwareAddr{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
)

func eth(t layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: t}
}

// desc wraps a frame in a descriptor whose Buf has spare capacity, as an
// arena slot would.
func desc(frame []byte) *packet.Desc {
	buf := make([]byte, len(frame), len(frame)+64)
	copy(buf, frame)
	return &packet.Desc{Buf: buf, Len: len(frame)}
}

// onesSum is the 16-bit ones' complement sum of b (even length), folded, as
// RFC 1071 defines it; 0xffff and 0x0000 are both returned as computed.
func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// ipv4Checksum recomputes an IPv4 header checksum from scratch (RFC 791
// §3.1): the complement of the ones' complement sum of the header with the
// checksum field taken as zero.
func ipv4Checksum(hdr []byte) uint16 {
	h := append([]byte(nil), hdr...)
	h[10], h[11] = 0, 0
	return ^onesSum(h)
}

// ipv4Header returns the IPv4 header of a parsed descriptor.
func ipv4Header(d *packet.Desc) []byte {
	f := d.Frame()
	return f[d.L3Off : int(d.L3Off)+int(f[d.L3Off]&0x0f)*4]
}

// fill fills b with random bytes from r.
func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}
