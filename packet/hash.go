package packet

import (
	"encoding/binary"
	"math/bits"
)

// FlowHash returns the flow hash of a frame Parse has parsed: XXH64's
// round and avalanche over 64-bit words of the flow. For IPv4 and IPv6 the
// words are the source and destination addresses, then protocol ‖ source
// port ‖ destination port (ports zero when not read, so IPv4 fragments after
// the first hash apart from it); for every other frame the destination and
// source MACs. It is directional, unseeded and so predictable: it spreads
// and identifies flows, it does not resist an adversary. It reads the frame
// each time, so that parsing costs nothing for a hash only some paths use
// (TX queue selection).
func (d *Desc) FlowHash() uint32 {
	f := d.Frame()
	switch off := int(d.L3Off); {
	case d.L3 == L3IPv4 && len(f) >= off+ipv4MinLen:
		return hash4(f[off:], d.Proto, d.SrcPort, d.DstPort)
	case d.L3 == L3IPv6 && len(f) >= off+ipv6HeaderLen:
		return hash6(f[off:], d.Proto, d.SrcPort, d.DstPort)
	case len(f) >= 12:
		return hashMAC(f)
	}
	return 0
}

// Flow hash (FlowHash): the header fields of a flow,
// packed into 64-bit words, go through the accumulator round and the final
// avalanche of xxHash64 (Yann Collet's XXH64), whose primes these are. IPv4
// takes two rounds, IPv6 five, a MAC pair two.
const (
	hashPrime1 = 0x9E3779B185EBCA87
	hashPrime2 = 0xC2B2AE3D27D4EB4F
	hashPrime3 = 0x165667B19E3779F9
	hashPrime5 = 0x27D4EB2F165667C5
)

// hashRound is XXH64's accumulator round.
func hashRound(h, w uint64) uint64 {
	h += w * hashPrime2
	h = bits.RotateLeft64(h, 31)
	return h * hashPrime1
}

// hashAvalanche is XXH64's final mix, folded to 32 bits.
func hashAvalanche(h uint64) uint32 {
	h ^= h >> 33
	h *= hashPrime2
	h ^= h >> 29
	h *= hashPrime3
	h ^= h >> 32
	return uint32(h)
}

func portsWord(proto uint8, sp, dp uint16) uint64 {
	return uint64(proto)<<32 | uint64(sp)<<16 | uint64(dp)
}

// hash4 hashes an IPv4 flow; ip starts at the IPv4 header (≥ 20 bytes).
func hash4(ip []byte, proto uint8, sp, dp uint16) uint32 {
	h := hashRound(hashPrime5, binary.BigEndian.Uint64(ip[12:20]))
	h = hashRound(h, portsWord(proto, sp, dp))
	return hashAvalanche(h)
}

// hash6 hashes an IPv6 flow; ip starts at the IPv6 header (≥ 40 bytes).
func hash6(ip []byte, proto uint8, sp, dp uint16) uint32 {
	h := hashRound(hashPrime5, binary.BigEndian.Uint64(ip[8:16]))
	h = hashRound(h, binary.BigEndian.Uint64(ip[16:24]))
	h = hashRound(h, binary.BigEndian.Uint64(ip[24:32]))
	h = hashRound(h, binary.BigEndian.Uint64(ip[32:40]))
	h = hashRound(h, portsWord(proto, sp, dp))
	return hashAvalanche(h)
}

// hashMAC hashes the MAC pair of an Ethernet frame (≥ 12 bytes).
func hashMAC(f []byte) uint32 {
	h := hashRound(hashPrime5, binary.BigEndian.Uint64(f[0:8]))
	h = hashRound(h, uint64(binary.BigEndian.Uint32(f[8:12])))
	return hashAvalanche(h)
}
