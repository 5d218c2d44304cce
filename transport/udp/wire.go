package udp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Every datagram starts with a fixed header, all big-endian:
//
//	0        1       2        6         14        22               36
//	+--------+-------+--------+---------+---------+----------------+
//	| ver|typ| flags | flow   | seq     | cum     | DX option (14) |
//	+--------+-------+--------+---------+---------+----------------+
//
// The first byte holds the version (high nibble) and the type (low). On
// data, seq is the packet's sequence number and cum is 0; the rest of the
// datagram is padding. On an ACK, seq names the data packet the ACK
// answers and cum is the next sequence number the receiver expects;
// FlagCE echoes that data packet's CE mark.
//
// NDP's messages (ndp.go) use the same header: on data, cum is the
// message's length in packets; an ACK's seq names the packet it answers
// and cum counts the packets the receiver holds; a NACK's seq names the
// packet whose trimmed header arrived; a PULL's seq is the flow's pull
// counter, the number of pulls the receiver has sent it.

// HeaderLen is the length of the header every datagram starts with.
const HeaderLen = 22 + timestamp.OptionLen

// version is the wire format's version.
const version = 1

// Type is a datagram's type.
type Type uint8

// Datagram types.
const (
	TypeData Type = 1
	TypeAck  Type = 2
	TypePull Type = 3 // NDP: send one more packet
	TypeNack Type = 4 // NDP: a packet arrived trimmed; send it again when pulled
)

// Header flags.
const (
	FlagCE = 1 << 0 // on an ACK: the data packet it answers arrived with CE
)

// Header is a datagram's header.
type Header struct {
	Type  Type
	Flags uint8
	Flow  uint32
	Seq   uint64
	Cum   uint64
	DX    timestamp.Option
}

// Errors of Parse.
var (
	ErrShort   = errors.New("udp transport: datagram shorter than the header")
	ErrVersion = errors.New("udp transport: unknown version")
	ErrType    = errors.New("udp transport: unknown type")
)

// Put writes h into the first HeaderLen bytes of b, which must be at least
// that long.
func (h *Header) Put(b []byte) {
	_ = b[HeaderLen-1]
	b[0] = version<<4 | byte(h.Type)
	b[1] = h.Flags
	binary.BigEndian.PutUint32(b[2:], h.Flow)
	binary.BigEndian.PutUint64(b[6:], h.Seq)
	binary.BigEndian.PutUint64(b[14:], h.Cum)
	h.DX.Append(b[22:22:HeaderLen])
}

// Parse decodes the header at the start of b.
func Parse(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: %d bytes, want ≥ %d", ErrShort, len(b), HeaderLen)
	}
	if v := b[0] >> 4; v != version {
		return Header{}, fmt.Errorf("%w: %d, want %d", ErrVersion, v, version)
	}
	t := Type(b[0] & 0xf)
	if t < TypeData || t > TypeNack {
		return Header{}, fmt.Errorf("%w: %d", ErrType, t)
	}
	o, err := timestamp.ParseOption(b[22:HeaderLen])
	if err != nil {
		return Header{}, err
	}
	return Header{
		Type:  t,
		Flags: b[1],
		Flow:  binary.BigEndian.Uint32(b[2:]),
		Seq:   binary.BigEndian.Uint64(b[6:]),
		Cum:   binary.BigEndian.Uint64(b[14:]),
		DX:    o,
	}, nil
}
