package udp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// TxStamps reads the kernel's software transmit stamps of a socket's
// datagrams (SO_TIMESTAMPING with SOF_TIMESTAMPING_TX_SOFTWARE): the time
// the device driver took each one, where the stamp a sender reads in user
// space before sendmmsg (t1 by default) also holds the stack's send path.
// Every send call gets one stamp, numbered from 0 in the order of the
// calls (SOF_TIMESTAMPING_OPT_ID); a call that sends a burst through UDP
// GSO is stamped once, with its first segment's stamp.
type TxStamps struct {
	rc  syscall.RawConn
	oob []byte
}

// txStampFlags ask for software transmit stamps, reported as stamps
// alone (no copy of the datagram), each with its send call's number.
const txStampFlags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
	unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// EnableTxStamps turns software transmit stamps on for c, whose next send
// call is number 0, and returns their reader.
func EnableTxStamps(c *net.UDPConn) (*TxStamps, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp transport: tx stamps: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags)
	}); err != nil {
		return nil, fmt.Errorf("udp transport: tx stamps: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("udp transport: tx stamps: set SO_TIMESTAMPING: %w", serr)
	}
	return &TxStamps{rc: rc, oob: make([]byte, 2*unix.CmsgSpace(64))}, nil
}

// Read calls f with every stamp queued so far, oldest first: its send
// call's number and the stamp, CLOCK_REALTIME ns. It does not wait.
func (t *TxStamps) Read(f func(id uint32, stamp int64)) error {
	for {
		var n int
		var rerr error
		if err := t.rc.Control(func(fd uintptr) {
			_, n, _, _, rerr = unix.Recvmsg(int(fd), nil, t.oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		}); err != nil {
			return fmt.Errorf("udp transport: tx stamps: %w", err)
		}
		if errors.Is(rerr, unix.EAGAIN) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("udp transport: tx stamps: read the error queue: %w", rerr)
		}
		if id, stamp, ok := parseTxStamp(t.oob[:n]); ok {
			f(id, stamp)
		}
	}
}

// parseTxStamp reads a software transmit stamp and its send call's number
// out of an error queue message's control messages (SCM_TIMESTAMPING and
// IP_RECVERR's sock_extended_err of origin SO_EE_ORIGIN_TIMESTAMPING).
func parseTxStamp(oob []byte) (id uint32, stamp int64, ok bool) {
	var hasStamp, hasID bool
	for len(oob) >= unix.SizeofCmsghdr {
		var n uint64
		if cmsgLenSize == 8 {
			n = binary.NativeEndian.Uint64(oob)
		} else {
			n = uint64(binary.NativeEndian.Uint32(oob))
		}
		if n < unix.SizeofCmsghdr || n > uint64(len(oob)) {
			return 0, 0, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		data := oob[unix.SizeofCmsghdr:n]
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SO_TIMESTAMPING && len(data) >= 16:
			// struct scm_timestamping: ts[0] is the software stamp.
			sec := int64(binary.NativeEndian.Uint64(data))
			nsec := int64(binary.NativeEndian.Uint64(data[8:]))
			if sec != 0 || nsec != 0 {
				stamp, hasStamp = sec*1e9+nsec, true
			}
		case (level == unix.IPPROTO_IP && typ == unix.IP_RECVERR || level == unix.IPPROTO_IPV6 && typ == unix.IPV6_RECVERR) && len(data) >= 16:
			// struct sock_extended_err: errno, origin, type, code, pad, info, data.
			if data[4] == unix.SO_EE_ORIGIN_TIMESTAMPING && binary.NativeEndian.Uint32(data[8:]) == unix.SCM_TSTAMP_SND {
				id, hasID = binary.NativeEndian.Uint32(data[12:]), true
			}
		}
		next := unix.CmsgSpace(int(n) - unix.SizeofCmsghdr)
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return id, stamp, hasStamp && hasID
}
