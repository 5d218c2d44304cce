package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// ping sends count ICMP (IPv4) or ICMPv6 echo requests from h to dst over a
// raw socket in h's namespace, one at a time, and returns how many echo
// replies came back from dst, each within timeout.
func ping(tb testing.TB, h testbed.Host, dst netip.Addr, count int, timeout time.Duration) int {
	tb.Helper()
	family, proto, reqType, repType := unix.AF_INET, unix.IPPROTO_ICMP, byte(8), byte(0)
	if dst.Is6() {
		family, proto, reqType, repType = unix.AF_INET6, unix.IPPROTO_ICMPV6, 128, 129
	}
	var fd int
	if err := h.Do(func() error {
		var err error
		fd, err = unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		return err
	}); err != nil {
		tb.Fatalf("host %s: raw ICMP socket: %v", h.Name, err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(10 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		tb.Fatal(err)
	}
	var sa unix.Sockaddr
	if dst.Is6() {
		sa = &unix.SockaddrInet6{Addr: dst.As16()}
	} else {
		sa = &unix.SockaddrInet4{Addr: dst.As4()}
	}
	const id = 0xec5
	buf := make([]byte, 2048)
	replies := 0
	for seq := 1; seq <= count; seq++ {
		msg := make([]byte, 8+56)
		msg[0] = reqType
		binary.BigEndian.PutUint16(msg[4:], id)
		binary.BigEndian.PutUint16(msg[6:], uint16(seq))
		copy(msg[8:], "ecnswitch integration test ping payload, 56 bytes long!!")
		if !dst.Is6() { // the kernel computes ICMPv6 checksums of raw sockets itself (RFC 3542 §3.1)
			binary.BigEndian.PutUint16(msg[2:], ^checksum(msg))
		}
		if err := unix.Sendto(fd, msg, 0, sa); err != nil {
			tb.Fatalf("host %s: send echo request to %s: %v", h.Name, dst, err)
		}
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
			n, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // EAGAIN at the receive timeout
			}
			icmp := buf[:n]
			var src netip.Addr
			switch f := from.(type) {
			case *unix.SockaddrInet4:
				src = netip.AddrFrom4(f.Addr)
				ihl := int(icmp[0]&0xf) * 4 // IPv4 raw sockets deliver the IP header
				icmp = icmp[ihl:]
			case *unix.SockaddrInet6:
				src = netip.AddrFrom16(f.Addr)
			}
			if src == dst && len(icmp) >= 8 && icmp[0] == repType &&
				binary.BigEndian.Uint16(icmp[4:]) == id && binary.BigEndian.Uint16(icmp[6:]) == uint16(seq) {
				replies++
				break
			}
		}
	}
	return replies
}

// checksum is the Internet checksum's one's-complement sum (RFC 1071),
// not yet complemented.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// neighbour returns the host's neighbour-table entry for addr: its MAC and
// NUD state, or a nil MAC when there is none.
func neighbour(tb testing.TB, h testbed.Host, addr netip.Addr) (net.HardwareAddr, int) {
	tb.Helper()
	var mac net.HardwareAddr
	state := 0
	err := h.Do(func() error {
		nh, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer nh.Close()
		l, err := nh.LinkByName(h.HostIf)
		if err != nil {
			return err
		}
		family := netlink.FAMILY_V4
		if addr.Is6() {
			family = netlink.FAMILY_V6
		}
		ns, err := nh.NeighList(l.Attrs().Index, family)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == addr {
				mac, state = n.HardwareAddr, n.State
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("host %s: neighbour list: %v", h.Name, err)
	}
	return mac, state
}

// capture counts the frames a host receives, by DSCP and ECN codepoint,
// from an AF_PACKET socket on its interface in its namespace — what
// arrived on the wire from the switch, after the switch marked it.
type capture struct {
	fd   int
	done chan struct{}

	mu     sync.Mutex
	frames int        // every frame received
	ip     [64][4]int // IP packets by DSCP and ECN
	bytes  int        // frame bytes
	bad    int        // frames packet.Parse rejected
	byDst  map[netip.Addr]int
	empty  int // receive timeouts: times the loop found the socket empty
	err    error

	keep uint16   // a UDP destination port whose frames are kept whole; 0 for none
	kept [][]byte // those frames, as they arrived
}

// startCapture opens the socket in h's namespace, with PACKET_IGNORE_OUTGOING
// so that only frames arriving from the switch count, and a receive buffer
// large enough that nothing is lost at 100s of Mbit/s (stop checks that).
func startCapture(tb testing.TB, h testbed.Host) *capture {
	tb.Helper()
	return startCaptureKeeping(tb, h, 0)
}

// startCaptureKeeping is startCapture that also keeps, whole, the frames
// of UDP to port keep (0: none).
func startCaptureKeeping(tb testing.TB, h testbed.Host, keep uint16) *capture {
	tb.Helper()
	c := &capture{done: make(chan struct{}), byDst: map[netip.Addr]int{}, keep: keep}
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.HostIf)
		if err != nil {
			return err
		}
		// Protocol 0 until bound: made for ETH_P_ALL, the socket would
		// queue every interface's frames until bind.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		c.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
			return fmt.Errorf("SO_RCVBUFFORCE: %w", err)
		}
		tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		if c.fd > 0 {
			unix.Close(c.fd)
		}
		tb.Fatalf("host %s: capture: %v", h.Name, err)
	}
	go c.loop()
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (c *capture) loop() {
	defer close(c.done)
	buf := make([]byte, 65536)
	d := &packet.Desc{Buf: buf}
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				c.mu.Lock()
				stop := c.err != nil
				if err == unix.EAGAIN {
					c.empty++
				}
				c.mu.Unlock()
				if stop {
					return
				}
				continue
			}
			c.mu.Lock()
			if c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		*d = packet.Desc{Buf: buf, Len: n}
		perr := packet.Parse(d)
		c.mu.Lock()
		c.frames++
		c.bytes += n
		switch {
		case perr != nil:
			c.bad++
		case d.DstAddr().IsValid():
			c.ip[d.DSCP&63][d.ECN&3]++
			c.byDst[d.DstAddr()]++
			if c.keep != 0 && d.Proto == packet.ProtoUDP && d.DstPort == c.keep {
				c.kept = append(c.kept, bytes.Clone(buf[:n]))
			}
		}
		c.mu.Unlock()
	}
}

// errStopped ends the capture loop.
var errStopped = fmt.Errorf("capture stopped")

// stop ends the capture and fails tb if the socket dropped frames
// (PACKET_STATISTICS tp_drops), which would make its counts incomplete.
func (c *capture) stop(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	if c.err == nil {
		c.err = errStopped
	}
	c.mu.Unlock()
	<-c.done
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	unix.Close(c.fd)
	if err != nil {
		tb.Fatalf("capture: PACKET_STATISTICS: %v", err)
	}
	if st.Drops != 0 {
		tb.Fatalf("capture: the socket dropped %d frames; counts would be incomplete", st.Drops)
	}
	if c.err != errStopped {
		tb.Fatalf("capture: %v", c.err)
	}
}

// seen returns the frames captured so far, and how many times the loop
// has found the socket empty: once that number grows, every frame the
// host had received before has been counted.
func (c *capture) seen() (frames, empty int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.empty
}

// count returns the IP packets captured with DSCP dscp carrying ECN codepoint ecn.
func (c *capture) count(dscp uint8, ecn packet.ECN) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ip[dscp&63][ecn&3]
}
