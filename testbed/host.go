package testbed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
	"github.com/ecnswitch/ecnswitch/packet"
)

// Host is one testbed host: everything a switch configuration needs (the
// port name SwitchIf, the host's MAC and addresses) and a way to run code in
// its network namespace.
type Host struct {
	Index     int              // 1-based; the host's address is Subnet.Addr()+Index
	Name      string           // "h<Index>"
	Netns     string           // named network namespace, as `ip netns` lists it
	SwitchIf  string           // switch end of the veth pair, in the caller's namespace: the switch's port
	SwitchMAC net.HardwareAddr // MAC address of SwitchIf
	HostIf    string           // host end of the veth pair, inside Netns
	MAC       net.HardwareAddr // MAC address of HostIf: the source of the host's frames
	IPv4      netip.Addr       // host's IPv4 address in Testbed.Subnet
	IPv6      netip.Addr       // host's IPv6 address in Testbed.Subnet6, or the zero Addr
}

// Do runs fn on a locked OS thread switched into the host's network
// namespace, and switches back before the thread serves anyone else.
// Sockets fn creates belong to the host's namespace and keep working after
// Do returns; goroutines fn starts run outside it.
func (h Host) Do(fn func() error) error {
	return nsenter.Do(h.Netns, fn)
}

// ListenTCP listens on TCP port (0 picks one) on all of the host's
// addresses.
func (h Host) ListenTCP(port uint16) (net.Listener, error) {
	var ln net.Listener
	err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(port))))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return ln, nil
}

// DialTCP connects from the host to addr with DSCP dscp (0..63): it sets
// IP_TOS (IPV6_TCLASS for IPv6) to dscp<<2 before connecting.
//
// The ECN field is left to TCP. For a stream socket Linux keeps the ECN bits
// it manages when IP_TOS or IPV6_TCLASS is set (do_ip_setsockopt and
// do_ipv6_setsockopt mask them out of the new value), so with
// net.ipv4.tcp_ecn=1 and ECN negotiated, data segments leave with ECT(0)
// and the chosen DSCP; SYNs and pure ACKs are Not-ECT (RFC 3168 §6.1.1,
// §6.1.4). TestDialSetsDSCPAndKeepsECT observes exactly this on the wire, over
// IPv4 and IPv6 (kernel 6.18).
func (h Host) DialTCP(ctx context.Context, addr netip.AddrPort, dscp uint8) (net.Conn, error) {
	if dscp > 63 {
		return nil, fmt.Errorf("host %s: dscp %d: want 0..63", h.Name, dscp)
	}
	d := net.Dialer{Control: tosControl(addr.Addr(), dscp<<2)}
	var c net.Conn
	err := h.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, "tcp", addr.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return c, nil
}

// ListenUDP binds UDP port (0 picks one) on all of the host's addresses.
func (h Host) ListenUDP(port uint16) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp", &net.UDPAddr{Port: int(port)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return c, nil
}

// DialUDP returns a UDP socket of the host connected to addr whose
// datagrams carry DSCP dscp (0..63) and ECN codepoint ecn: unlike TCP, UDP
// sends the ECN field exactly as set, so ECN-capable UDP traffic (and CE,
// for tests) is the caller's to choose.
func (h Host) DialUDP(ctx context.Context, addr netip.AddrPort, dscp uint8, ecn packet.ECN) (*net.UDPConn, error) {
	if dscp > 63 {
		return nil, fmt.Errorf("host %s: dscp %d: want 0..63", h.Name, dscp)
	}
	if ecn > packet.CE {
		return nil, fmt.Errorf("host %s: ecn %d: want 0..3", h.Name, ecn)
	}
	d := net.Dialer{Control: tosControl(addr.Addr(), dscp<<2|uint8(ecn))}
	var c net.Conn
	err := h.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, "udp", addr.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return c.(*net.UDPConn), nil
}

// tosControl returns a Dialer.Control that sets the traffic class byte of
// the socket before it connects to dst.
func tosControl(dst netip.Addr, tos uint8) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if dst.Unmap().Is4() {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, int(tos))
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(tos))
			}
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set tos %#x: %w", tos, serr)
		}
		return nil
	}
}
