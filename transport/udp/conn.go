package udp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Conn is the datagram I/O an endpoint needs; *ipv4.PacketConn has it.
type Conn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
	SetReadDeadline(t time.Time) error
}

// Codepoints of the IP header's ECN field (RFC 3168).
const (
	NotECT = 0
	ECT0   = 2
	CE     = 3
)

// socketBuffer is each endpoint socket's send and receive buffer, in
// bytes: a few hundred datagrams, more than a window at 1 Gbit/s and a
// few hundred µs of RTT.
const socketBuffer = 4 << 20

// Prepare readies a UDP socket for an endpoint and wraps it for batch
// I/O: what it sends carries tos (a sender's data ECT0, a receiver's ACKs
// NotECT), and every read reports the datagram's TOS byte (IP_RECVTOS)
// and the kernel's receive stamp (SO_TIMESTAMPNS). Reads may return
// datagrams GRO merged (UDP_GRO): they share the TOS byte, which GRO
// never merges across, and the first's stamp.
func Prepare(c *net.UDPConn, tos uint8) (*ipv4.PacketConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp transport: %w", err)
	}
	var serr error
	set := func(fd, level, opt, v int, name string) {
		if serr == nil {
			if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
				serr = fmt.Errorf("udp transport: set %s to %d: %w", name, v, err)
			}
		}
	}
	err = rc.Control(func(fd uintptr) {
		set(int(fd), unix.IPPROTO_IP, unix.IP_TOS, int(tos), "IP_TOS")
		set(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1, "IP_RECVTOS")
		set(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS")
		set(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1, "UDP_GRO")
		// Big buffers where allowed (CAP_NET_ADMIN), else what rmem_max allows.
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, socketBuffer)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return ipv4.NewPacketConn(c), nil
}

// now is the endpoints' clock: CLOCK_REALTIME, the clock of the kernel's
// SO_TIMESTAMPNS stamps, in ns.
func now() int64 { return time.Now().UnixNano() }

// readWaiting reads the datagrams waiting in c's receive queue without
// waiting for more (MSG_DONTWAIT), batch after batch into ms, and hands
// each batch's count to f; it clears c's read deadline to do so. A
// sender calls it before its retransmission timer decides: a goroutine
// that ran late on a busy machine finds the ACKs that came in meanwhile
// waiting, and must not take their absence for silence.
func readWaiting(c Conn, ms []ipv4.Message, f func(n int)) error {
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	for {
		n, err := c.ReadBatch(ms, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, os.ErrDeadlineExceeded):
			return nil
		case err != nil:
			return err
		}
		f(n)
		if n < len(ms) {
			return nil
		}
	}
}
