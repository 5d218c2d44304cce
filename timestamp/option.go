package timestamp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DX carries its timestamps in a 14-byte TCP option (004 §V-B): kind and
// length, then 12 bytes. Here they are laid out as
//
//	0      1      2          6          10      12      14
//	+------+------+----------+----------+-------+-------+
//	| kind | 14   | Stamp    | Hold     | Count | Flags |
//	+------+------+----------+----------+-------+-------+
//
// all big-endian. On a data packet Stamp is t1, the sender's TX stamp
// (its low 32 bits). On an ACK (FlagACK) the receiver has looked up the
// (t1, t2) pairs of the data packets the ACK covers, kept by expected ACK
// number (004 §V-A), and Stamp is their mean one-way delay t2 − t1
// modulo 2³² over Count samples (delayed ACKs and LRO cover several,
// §V-A "LRO handling"); Hold is t3 − t2 of the newest covered packet, so
// that the sender has RTT = (t4 − t1) − Hold. When the sender's t1 comes
// from a hardware TX stamp it is known only after the packet left; the
// sender then keeps t1 itself (§V-A, "Hardware timestamping"), the data
// packet carries FlagSenderKeeps, and the ACK's Stamp is the newest
// covered packet's t2 (FlagRaw) instead of a delay.
//
// 32 bits of nanoseconds wrap every 4.3 s; differences of stamps taken
// within 2.1 s of each other survive the wrap (Unwrap).

// OptionKind is the TCP option kind ecnswitch's DX endpoints use: 253,
// reserved for experiments (RFC 4727). The paper's 14 bytes leave no
// room for RFC 6994's experiment ID, so this is for closed testbeds.
const OptionKind = 253

// OptionLen is the DX option's length in bytes, kind and length included.
const OptionLen = 14

// Option flags.
const (
	FlagACK         = 1 << 0 // the option rides an ACK: Stamp is a delay (or t2 with FlagRaw)
	FlagRaw         = 1 << 1 // on an ACK: Stamp is t2 of the newest covered packet, not t2 − t1
	FlagSenderKeeps = 1 << 2 // on data: the sender keeps t1 (hardware TX stamps); Stamp is unused
)

// Option is DX's TCP option (see OptionKind for the layout).
type Option struct {
	Stamp uint32 // data: t1; ACK: mean t2 − t1 mod 2³², or t2 with FlagRaw
	Hold  uint32 // ACK: t3 − t2 of the newest covered packet, ns
	Count uint16 // ACK: data packets the Stamp averages
	Flags uint16
}

// Errors of ParseOption and FindOption.
var (
	ErrOptionShort  = errors.New("dx option: truncated")
	ErrOptionKind   = errors.New("dx option: wrong kind")
	ErrOptionLength = errors.New("dx option: length is not 14")
	ErrTCPOptions   = errors.New("tcp options: malformed")
)

// Append appends the option's 14 bytes to b.
func (o Option) Append(b []byte) []byte {
	b = append(b, OptionKind, OptionLen)
	b = binary.BigEndian.AppendUint32(b, o.Stamp)
	b = binary.BigEndian.AppendUint32(b, o.Hold)
	b = binary.BigEndian.AppendUint16(b, o.Count)
	return binary.BigEndian.AppendUint16(b, o.Flags)
}

// ParseOption decodes a DX option from the start of b.
func ParseOption(b []byte) (Option, error) {
	if len(b) < 2 {
		return Option{}, ErrOptionShort
	}
	if b[0] != OptionKind {
		return Option{}, fmt.Errorf("%w: %d, want %d", ErrOptionKind, b[0], OptionKind)
	}
	if b[1] != OptionLen {
		return Option{}, fmt.Errorf("%w: %d", ErrOptionLength, b[1])
	}
	if len(b) < OptionLen {
		return Option{}, ErrOptionShort
	}
	return Option{
		Stamp: binary.BigEndian.Uint32(b[2:]),
		Hold:  binary.BigEndian.Uint32(b[6:]),
		Count: binary.BigEndian.Uint16(b[10:]),
		Flags: binary.BigEndian.Uint16(b[12:]),
	}, nil
}

// FindOption walks a TCP header's options (the bytes after the fixed 20)
// and decodes the DX option if there is one (RFC 9293 §3.1: kind 0 ends
// the list, kind 1 is one byte of padding, every other kind has a length
// of at least 2 that stays inside the list).
func FindOption(opts []byte) (Option, bool, error) {
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			return Option{}, false, nil
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) {
			return Option{}, false, fmt.Errorf("%w: option %d at offset %d has no length", ErrTCPOptions, opts[i], i)
		}
		n := int(opts[i+1])
		if n < 2 || i+n > len(opts) {
			return Option{}, false, fmt.Errorf("%w: option %d at offset %d has length %d, %d bytes left", ErrTCPOptions, opts[i], i, n, len(opts)-i)
		}
		if opts[i] == OptionKind {
			o, err := ParseOption(opts[i : i+n])
			return o, err == nil, err
		}
		i += n
	}
	return Option{}, false, nil
}

// Unwrap returns the int64 nearest to near whose low 32 bits are v: a
// 32-bit stamp or delay taken back to 64 bits, exact while the true value
// lies within 2³¹ ns (2.1 s) of near.
func Unwrap(near int64, v uint32) int64 {
	return near + int64(int32(v-uint32(near)))
}

// OWDMean averages one-way delays carried modulo 2³² (the ACK's Stamp,
// when an ACK covers several data packets). The zero value is empty.
type OWDMean struct {
	first uint32
	sum   int64 // of each delay's distance from first
	n     int
}

// Add adds one delay, t2 − t1 mod 2³².
func (m *OWDMean) Add(owd uint32) {
	if m.n == 0 {
		m.first = owd
	}
	m.sum += int64(int32(owd - m.first))
	m.n++
}

// Count returns the number of delays added.
func (m *OWDMean) Count() int { return m.n }

// Mean returns their mean mod 2³², rounded toward the first delay; 0 when empty.
func (m *OWDMean) Mean() uint32 {
	if m.n == 0 {
		return 0
	}
	return m.first + uint32(int32(m.sum/int64(m.n)))
}

// Reset empties m.
func (m *OWDMean) Reset() { *m = OWDMean{} }
