package packet

import "encoding/binary"

// IPv4Checksum returns the checksum of an IPv4 header whose checksum field
// is zero: the complement of the ones' complement sum of its 16-bit words
// (RFC 791 §3.1). Frame builders use it; SetCE updates the checksum
// incrementally instead (RFC 1624).
func IPv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
