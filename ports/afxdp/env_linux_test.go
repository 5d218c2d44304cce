//go:build linux

package afxdp

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testEtherType is the IEEE local experimental EtherType; the stack
// ignores it, so frames of it are only ever the tests' own.
const testEtherType = 0x88b5

// testNet is a veth pair: host in the root namespace (the end Ports
// drive), peer in a namespace of its own with 198.18.x.1/30 and a
// permanent neighbour entry mapping 198.18.x.2 to host's MAC.
type testNet struct {
	ns        netns.NsHandle
	nsName    string
	host      string
	peer      string
	hostIndex int
	peerIndex int
	hostMAC   net.HardwareAddr
	peerMAC   net.HardwareAddr
	peerIP    net.IP
	hostIP    net.IP
}

func requireRoot(tb testing.TB) {
	tb.Helper()
	testenv.MustBeRoot(tb, "AF_XDP sockets, BPF programs and network namespaces")
}

// checkGoroutines fails tb if goroutines started during the test outlive it.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	base := runtime.NumGoroutine()
	tb.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<16)
			tb.Errorf("goroutine leak: %d running, %d at start\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	})
}

// inNS runs f on a fresh OS thread switched into ns (or left in the root
// namespace when ns is -1). The thread is never unlocked, so it exits with
// the goroutine and no other goroutine ever runs in the wrong namespace.
func inNS(tb testing.TB, ns netns.NsHandle, f func() error) {
	tb.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		if ns != -1 {
			if err := netns.Set(ns); err != nil {
				done <- err
				return
			}
		}
		done <- f()
	}()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
}

func randHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newTestNet builds the pair with queues RX/TX queues on each end, turns
// GRO/GSO/TSO and TX checksum offload off on both ends, disables IPv6 so
// no router or neighbour solicitations appear, and removes it all in
// tb.Cleanup.
func newTestNet(tb testing.TB, queues int) *testNet {
	tb.Helper()
	requireRoot(tb)
	sfx := randHex(tb, 3)
	var b [1]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	o3 := b[0]
	n := &testNet{
		nsName: "ecnsw-afxdp-" + sfx,
		host:   "exd" + sfx + "h", // 10 bytes, within IFNAMSIZ-1
		peer:   "exd" + sfx + "p",
		peerIP: net.IPv4(198, 18, o3, 1).To4(),
		hostIP: net.IPv4(198, 18, o3, 2).To4(),
		ns:     -1,
	}
	inNS(tb, -1, func() error {
		ns, err := netns.NewNamed(n.nsName) // switches this doomed thread into it
		if err != nil {
			return err
		}
		n.ns = ns
		for _, k := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0); err != nil {
				return err
			}
		}
		return nil
	})
	tb.Cleanup(func() {
		if l, err := netlink.LinkByName(n.host); err == nil {
			_ = netlink.LinkDel(l) // takes the peer with it
		}
		if err := netns.DeleteNamed(n.nsName); err != nil {
			tb.Errorf("delete namespace %s: %v", n.nsName, err)
		}
		n.ns.Close()
	})

	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: n.host, MTU: 1500, NumTxQueues: queues, NumRxQueues: queues},
		PeerName:        n.peer,
		PeerNamespace:   netlink.NsFd(int(n.ns)),
		PeerNumTxQueues: uint32(queues),
		PeerNumRxQueues: uint32(queues),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		tb.Fatalf("add veth %s/%s: %v", n.host, n.peer, err)
	}
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+n.host+"/disable_ipv6", []byte("1"), 0); err != nil {
		tb.Fatal(err)
	}
	hl, err := netlink.LinkByName(n.host)
	if err != nil {
		tb.Fatal(err)
	}
	n.hostIndex, n.hostMAC = hl.Attrs().Index, hl.Attrs().HardwareAddr
	setOffloads(tb, n.host)
	if err := netlink.LinkSetUp(hl); err != nil {
		tb.Fatal(err)
	}

	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		tb.Fatal(err)
	}
	defer h.Close()
	pl, err := h.LinkByName(n.peer)
	if err != nil {
		tb.Fatal(err)
	}
	n.peerIndex, n.peerMAC = pl.Attrs().Index, pl.Attrs().HardwareAddr
	if err := h.AddrAdd(pl, &netlink.Addr{IPNet: &net.IPNet{IP: n.peerIP, Mask: net.CIDRMask(30, 32)}}); err != nil {
		tb.Fatal(err)
	}
	if err := h.NeighAdd(&netlink.Neigh{LinkIndex: n.peerIndex, State: netlink.NUD_PERMANENT, IP: n.hostIP, HardwareAddr: n.hostMAC}); err != nil {
		tb.Fatal(err)
	}
	inNS(tb, n.ns, func() error { setOffloads(tb, n.peer); return nil })
	if err := h.LinkSetUp(pl); err != nil {
		tb.Fatal(err)
	}
	waitUp(tb, n.host)
	return n
}

// setOffloads turns GRO, GSO, TSO and TX checksum offload off on ifname in
// the calling thread's namespace (ethtool -K gro off gso off tso off tx off).
func setOffloads(tb testing.TB, ifname string) {
	tb.Helper()
	err := withIoctlSocket(func(fd int) error {
		for _, cmd := range []uint32{unix.ETHTOOL_SGRO, unix.ETHTOOL_SGSO, unix.ETHTOOL_STSO, unix.ETHTOOL_STXCSUM} {
			if _, err := ethtoolValue(fd, ifname, cmd, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("offloads off on %s: %v", ifname, err)
	}
}

func waitUp(tb testing.TB, ifname string) {
	tb.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		l, err := netlink.LinkByName(ifname)
		if err == nil && l.Attrs().OperState == netlink.OperUp {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("%s not up after 3 s", ifname)
}

// peerSocket opens a socket in the peer's namespace.
func (n *testNet) peerSocket(tb testing.TB, domain, typ, proto int) int {
	tb.Helper()
	fd := -1
	inNS(tb, n.ns, func() error {
		var err error
		fd, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
		return err
	})
	tb.Cleanup(func() { unix.Close(fd) })
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// peerPacketSocket returns an AF_PACKET socket on the peer that receives
// testEtherType frames, with a large buffer and a 2 s receive timeout.
func (n *testNet) peerPacketSocket(tb testing.TB) int {
	tb.Helper()
	// Protocol 0 until bound, so that nothing of another interface is
	// queued before bind.
	fd := n.peerSocket(tb, unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(testEtherType), Ifindex: n.peerIndex}); err != nil {
		tb.Fatal(err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
		tb.Fatal(err)
	}
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		tb.Fatal(err)
	}
	return fd
}

// peerSend sends raw frames out of the peer.
func (n *testNet) peerSend(tb testing.TB, fd int, frames ...[]byte) {
	tb.Helper()
	sa := &unix.SockaddrLinklayer{Ifindex: n.peerIndex, Halen: 6}
	for _, f := range frames {
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			tb.Fatalf("send %d-byte frame from peer: %v", len(f), err)
		}
	}
}

// peerRxPackets reads the peer's rx_packets counter.
func (n *testNet) peerRxPackets(tb testing.TB) uint64 {
	tb.Helper()
	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		tb.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(n.peer)
	if err != nil {
		tb.Fatal(err)
	}
	return l.Attrs().Statistics.RxPackets
}

// ethFrame builds dst|src|testEtherType|payload.
func ethFrame(dst, src net.HardwareAddr, payload []byte) []byte {
	f := make([]byte, 14+len(payload))
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], testEtherType)
	copy(f[14:], payload)
	return f
}

// udpFrame builds a valid Ethernet/IPv4/UDP frame (UDP checksum 0).
func udpFrame(dst, src net.HardwareAddr, sip, dip net.IP, sport, dport uint16, payload []byte) []byte {
	f := make([]byte, 14+20+8+len(payload))
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8] = 64
	ip[9] = unix.IPPROTO_UDP
	copy(ip[12:], sip.To4())
	copy(ip[16:], dip.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	u := f[34:42]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(payload)))
	copy(f[42:], payload)
	return f
}

// openPort opens a Port on ifname and closes it in tb.Cleanup.
func openPort(tb testing.TB, ifname string, o Options) *Port {
	tb.Helper()
	p, err := Open(ifname, o)
	if err != nil {
		tb.Fatalf("Open(%s): %v", ifname, err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, ports.ErrClosed) {
			tb.Errorf("Close: %v", err)
		}
	})
	return p
}

// newDescs returns n descriptors with bufSize-byte buffers.
func newDescs(n, bufSize int) []*packet.Desc {
	ds := make([]*packet.Desc, n)
	for i := range ds {
		ds[i] = &packet.Desc{Buf: make([]byte, bufSize)}
	}
	return ds
}

// receiveFrames receives until want frames of testEtherType (or, with
// anyType, of any type) arrived or timeout passed, and returns copies.
func receiveFrames(tb testing.TB, p *Port, want int, bufSize int, timeout time.Duration, anyType bool) [][]byte {
	tb.Helper()
	ds := newDescs(64, bufSize)
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		n, err := p.Receive(ds)
		if err != nil {
			tb.Fatalf("Receive: %v", err)
		}
		for _, d := range ds[:n] {
			f := d.Frame()
			if anyType || (len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == testEtherType) {
				got = append(got, append([]byte(nil), f...))
			}
		}
		if n == 0 {
			if _, err := p.Wait(int64(time.Millisecond)); err != nil {
				tb.Fatalf("Wait: %v", err)
			}
		}
	}
	return got
}
