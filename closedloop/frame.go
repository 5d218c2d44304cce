package closedloop

import (
	"encoding/binary"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Frame layout of a data packet: Ethernet, IPv4 (no options), UDP, then
// the model's header in the UDP payload.
const (
	ethLen     = 14
	ipLen      = 20
	udpLen     = 8
	payloadOff = ethLen + ipLen + udpLen
	magic      = 0x434c4f4f // "CLOO"
	hdrLen     = 4 + 4 + 8 + 8
	dstPort    = 5001
	srcPortLo  = 10000
)

// template is a data frame of one flow with everything but the sequence
// number and send time filled in, IPv4 checksum included.
type template [payloadOff + 8]byte

// newTemplate builds flow id's frame header: host h's MAC and 198.18.0.h+1
// toward the receiver (MAC 02:00:00:00:00:fe, 198.19.0.1), DSCP 8·queue
// (class selector queue, the classifier's default DSCP>>3 mapping) and
// ECT(0).
func newTemplate(id, host, queue int) template {
	var t template
	f := t[:]
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0xfe})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 1, byte(host)})
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	ip := f[ethLen:]
	ip[0] = 0x45
	ip[1] = byte(queue<<3)<<2 | byte(packet.ECT0)
	binary.BigEndian.PutUint16(ip[2:], frameLen-ethLen)
	binary.BigEndian.PutUint16(ip[4:], uint16(id))
	ip[6] = 0x40 // DF
	ip[8] = 64
	ip[9] = packet.ProtoUDP
	copy(ip[12:16], []byte{198, 18, 0, byte(host + 1)})
	copy(ip[16:20], []byte{198, 19, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], packet.IPv4Checksum(ip[:ipLen]))
	udp := ip[ipLen:]
	binary.BigEndian.PutUint16(udp[0:], uint16(srcPortLo+id))
	binary.BigEndian.PutUint16(udp[2:], dstPort)
	binary.BigEndian.PutUint16(udp[4:], frameLen-ethLen-ipLen)
	// UDP checksum 0: none, as IPv4 allows.
	return t
}

// put writes a data frame of flow id with sequence number seq, sent at
// sent, into buf (at least frameLen bytes) and returns its length.
func (t *template) put(buf []byte, id int, seq uint64, sent int64) int {
	copy(buf, t[:])
	p := buf[payloadOff:]
	binary.BigEndian.PutUint32(p[0:], magic)
	binary.BigEndian.PutUint32(p[4:], uint32(id))
	binary.BigEndian.PutUint64(p[8:], seq)
	binary.BigEndian.PutUint64(p[16:], uint64(sent))
	clear(buf[payloadOff+hdrLen : frameLen])
	return frameLen
}

// dataInfo is what the receiver reads from a data frame.
type dataInfo struct {
	flow int
	seq  uint64
	sent int64
	ce   bool
}

// readData parses a frame built by put; ok is false for anything else.
func readData(f []byte) (info dataInfo, ok bool) {
	if len(f) < payloadOff+hdrLen || binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv4 {
		return info, false
	}
	ip := f[ethLen:]
	p := f[payloadOff:]
	if ip[9] != packet.ProtoUDP || binary.BigEndian.Uint32(p[0:]) != magic {
		return info, false
	}
	info.ce = packet.ECN(ip[1]&3) == packet.CE
	info.flow = int(binary.BigEndian.Uint32(p[4:]))
	info.seq = binary.BigEndian.Uint64(p[8:])
	info.sent = int64(binary.BigEndian.Uint64(p[16:]))
	return info, true
}
