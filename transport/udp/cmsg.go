package udp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// RX carries what the kernel told about one received datagram in its
// control messages.
type RX struct {
	TOS      uint8 // the IP header's TOS byte (IP_RECVTOS); ECN in its low 2 bits
	HasTOS   bool
	Stamp    int64 // kernel receive stamp, CLOCK_REALTIME ns (SO_TIMESTAMPNS)
	HasStamp bool
	// Segment is the size of each datagram when GRO merged several
	// (UDP_GRO): the buffer holds them back to back, the last maybe
	// shorter. 0 when the buffer is one datagram.
	Segment int
}

// ECN returns the datagram's ECN codepoint.
func (r RX) ECN() uint8 { return r.TOS & 3 }

// ErrControl reports malformed control messages.
var ErrControl = errors.New("udp transport: malformed control message")

// cmsgLenSize is the size of cmsghdr's length field (size_t).
const cmsgLenSize = unix.SizeofCmsghdr - 8

// ParseControl reads the IP_TOS and SCM_TIMESTAMPNS control messages out
// of a recvmsg's control buffer, ignoring any others. It allocates
// nothing.
func ParseControl(oob []byte) (RX, error) {
	var rx RX
	for len(oob) > 0 {
		if len(oob) < unix.SizeofCmsghdr {
			return rx, fmt.Errorf("%w: %d bytes left, header is %d", ErrControl, len(oob), unix.SizeofCmsghdr)
		}
		var n uint64
		if cmsgLenSize == 8 {
			n = binary.NativeEndian.Uint64(oob)
		} else {
			n = uint64(binary.NativeEndian.Uint32(oob))
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		if n < unix.SizeofCmsghdr || n > uint64(len(oob)) {
			return rx, fmt.Errorf("%w: length %d, %d bytes left", ErrControl, n, len(oob))
		}
		data := oob[unix.SizeofCmsghdr:n]
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_TOS && len(data) >= 1:
			rx.TOS, rx.HasTOS = data[0], true
		case level == unix.SOL_UDP && typ == unix.UDP_GRO && len(data) >= 4:
			rx.Segment = int(int32(binary.NativeEndian.Uint32(data)))
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS && len(data) >= 16:
			sec := int64(binary.NativeEndian.Uint64(data))
			nsec := int64(binary.NativeEndian.Uint64(data[8:]))
			rx.Stamp, rx.HasStamp = sec*1e9+nsec, true
		}
		next := unix.CmsgSpace(int(n) - unix.SizeofCmsghdr)
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return rx, nil
}

// controlLen is the control buffer a read needs for its three messages.
var controlLen = 2*unix.CmsgSpace(4) + unix.CmsgSpace(16)

// appendControl appends the control messages ParseControl reads, as the
// kernel lays them out; tests and the memory pipe use it.
func appendControl(b []byte, rx RX) []byte {
	put := func(level, typ int32, data []byte) {
		start := len(b)
		b = append(b, make([]byte, unix.CmsgSpace(len(data)))...)
		h := b[start:]
		if cmsgLenSize == 8 {
			binary.NativeEndian.PutUint64(h, uint64(unix.CmsgLen(len(data))))
		} else {
			binary.NativeEndian.PutUint32(h, uint32(unix.CmsgLen(len(data))))
		}
		binary.NativeEndian.PutUint32(h[cmsgLenSize:], uint32(level))
		binary.NativeEndian.PutUint32(h[cmsgLenSize+4:], uint32(typ))
		copy(h[unix.SizeofCmsghdr:], data)
	}
	if rx.HasTOS {
		put(unix.IPPROTO_IP, unix.IP_TOS, []byte{rx.TOS})
	}
	if rx.Segment != 0 {
		var seg [4]byte
		binary.NativeEndian.PutUint32(seg[:], uint32(rx.Segment))
		put(unix.SOL_UDP, unix.UDP_GRO, seg[:])
	}
	if rx.HasStamp {
		var ts [16]byte
		binary.NativeEndian.PutUint64(ts[:], uint64(rx.Stamp/1e9))
		binary.NativeEndian.PutUint64(ts[8:], uint64(rx.Stamp%1e9))
		put(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts[:])
	}
	return b
}

// segmentControl returns the control message that has the kernel cut a
// datagram into datagrams of size bytes (UDP GSO, UDP_SEGMENT).
func segmentControl(size int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	if cmsgLenSize == 8 {
		binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(2)))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(unix.CmsgLen(2)))
	}
	binary.NativeEndian.PutUint32(b[cmsgLenSize:], uint32(unix.SOL_UDP))
	binary.NativeEndian.PutUint32(b[cmsgLenSize+4:], uint32(unix.UDP_SEGMENT))
	binary.NativeEndian.PutUint16(b[unix.SizeofCmsghdr:], uint16(size))
	return b
}

// segments calls f with each datagram of a buffer read with rx.
func segments(b []byte, rx RX, f func(d []byte)) {
	if rx.Segment <= 0 {
		f(b)
		return
	}
	for len(b) > 0 {
		n := min(rx.Segment, len(b))
		f(b[:n])
		b = b[n:]
	}
}
