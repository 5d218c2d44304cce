package testbed_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/testbed"
)

// run runs a command and returns its trimmed output, failing the test on
// error.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// netnsExists asks `ip netns list`, not the package under test.
func netnsExists(t testing.TB, name string) bool {
	t.Helper()
	for _, line := range strings.Split(run(t, "ip", "netns", "list"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}

// waitLinkGone waits for an interface that a namespace removal takes with
// it: the kernel destroys a namespace asynchronously.
func waitLinkGone(t testing.TB, name string) {
	t.Helper()
	// A deleted namespace's interfaces go when the kernel's cleanup_net
	// work frees it, after an RCU grace period: milliseconds when the
	// machine is idle, but it took over 2 s now and then while other
	// tests and builds ran beside this one.
	for range 1000 {
		if !linkExists(t, name) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s still exists 10 s after its namespace was deleted", name)
}

// linkExists asks `ip link` in the caller's namespace.
func linkExists(t testing.TB, name string) bool {
	t.Helper()
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// ipLink is the part of `ip -j addr show` the tests read.
type ipLink struct {
	Ifname    string `json:"ifname"`
	MTU       int    `json:"mtu"`
	Operstate string `json:"operstate"`
	Address   string `json:"address"`
	Qdisc     string `json:"qdisc"`
	NumTx     int    `json:"num_tx_queues"`
	NumRx     int    `json:"num_rx_queues"`
	AddrInfo  []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
		Scope     string `json:"scope"`
		Tentative bool   `json:"tentative"`
	} `json:"addr_info"`
}

// showLink runs `ip -d -j [-n netns] addr show dev ifname`.
func showLink(t testing.TB, netnsName, ifname string) ipLink {
	t.Helper()
	args := []string{"-d", "-j"}
	if netnsName != "" {
		args = append(args, "-n", netnsName)
	}
	out := run(t, "ip", append(args, "addr", "show", "dev", ifname)...)
	var ls []ipLink
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip addr show %s: %v\n%s", ifname, err, out)
	}
	return ls[0]
}

// readSysctl reads /proc/sys/<key> inside netnsName through `ip netns exec`.
func readSysctl(t testing.TB, netnsName, key string) string {
	t.Helper()
	if netnsName == "" {
		b, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return run(t, "ip", "netns", "exec", netnsName, "cat", "/proc/sys/"+key)
}

// features returns ifname's offload features by kernel name (on = true).
// It asks the ethtool binary when there is one (scripts/deps.sh installs
// it), translating its legacy summary names, and falls back to the
// package's ETHTOOL_GFEATURES reader otherwise.
func features(t testing.TB, netnsName, ifname string) map[string]bool {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Logf("ethtool not installed (scripts/deps.sh installs it): reading features with ETHTOOL_GFEATURES")
		fs, err := testbed.Features(netnsName, ifname)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	args := []string{"ethtool", "-k", ifname}
	if netnsName != "" {
		args = append([]string{"ip", "netns", "exec", netnsName}, args...)
	}
	out := run(t, args[0], args[1:]...)
	legacy := map[string]string{
		"generic-segmentation-offload": "tx-generic-segmentation",
		"generic-receive-offload":      "rx-gro",
	}
	fs := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		if k, ok := legacy[name]; ok {
			name = k
		}
		fs[name] = strings.HasPrefix(val, "on")
	}
	return fs
}

// bridge joins the testbed's switch ends with a Linux bridge br-<id>,
// standing in for ecnswitch, and removes it in t.Cleanup.
func bridge(t testing.TB, tb *testbed.Testbed) {
	t.Helper()
	name := "br-" + tb.ID()
	la := netlink.NewLinkAttrs()
	la.Name = name
	br := &netlink.Bridge{LinkAttrs: la}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatalf("add bridge %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(br); err != nil {
			t.Errorf("delete bridge %s: %v", name, err)
		}
	})
	// No IPv6 of its own on the bridge: it is a switch, not a host.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	for _, h := range tb.Hosts() {
		l, err := netlink.LinkByName(h.SwitchIf)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetMaster(l, br); err != nil {
			t.Fatalf("enslave %s: %v", h.SwitchIf, err)
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
}

// frame is the part of a captured IP packet the tests check.
type frame struct {
	len     int // bytes on the wire, Ethernet header included
	src     netip.Addr
	tos     uint8 // IPv4 TOS or IPv6 traffic class
	proto   uint8 // IPv4 protocol or IPv6 next header
	payload int   // TCP or UDP payload bytes
	syn     bool
	seq     uint32 // TCP sequence number
	sport   uint16 // TCP or UDP source port
	dport   uint16 // and destination port
	csum    bool   // the IPv4 header checksum verifies (always true for IPv6)
}

// capture records the IP frames seen on ifname (in the caller's namespace)
// until stop is called, with an AF_PACKET socket: the tests' own view of
// the wire, independent of the hosts' stacks.
type capture struct {
	fd     int
	wg     sync.WaitGroup
	mu     sync.Mutex
	frames []frame
	done   chan struct{}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func startCapture(t testing.TB, ifname string) *capture {
	t.Helper()
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	// Protocol 0 until bound: a socket made for ETH_P_ALL receives every
	// interface's frames from the moment it exists, and those it took
	// before bind would stay in its queue (the loopback traffic of other
	// processes, say).
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index}); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	// A large buffer: the tests capture bulk transfers. Frames the socket
	// still drops are counted by the kernel, not seen by the tests.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(50e6)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	c := &capture{fd: fd, done: make(chan struct{})}
	c.wg.Add(1)
	go c.loop()
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *capture) loop() {
	defer c.wg.Done()
	buf := make([]byte, 1<<17)
	stopping := false
	for {
		select {
		case <-c.done:
			stopping = true
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, buf, unix.MSG_TRUNC)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			if stopping {
				return // drained
			}
			continue
		}
		if err != nil {
			return
		}
		if f, ok := parseFrame(buf[:min(n, len(buf))], n); ok {
			c.mu.Lock()
			c.frames = append(c.frames, f)
			c.mu.Unlock()
		}
	}
}

// stop ends the capture once the frames already queued are read, and
// returns the frames seen; later calls return the same frames.
func (c *capture) stop() []frame {
	select {
	case <-c.done:
	default:
		close(c.done)
		c.wg.Wait()
		unix.Close(c.fd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames
}

// parseFrame decodes Ethernet + IPv4/IPv6 + TCP/UDP headers.
func parseFrame(b []byte, wire int) (frame, bool) {
	if len(b) < 14 {
		return frame{}, false
	}
	f := frame{len: wire}
	var l4 []byte
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		ip := b[14:]
		if len(ip) < 20 {
			return frame{}, false
		}
		ihl := int(ip[0]&0x0f) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if tot < ihl || len(ip) < tot {
			return frame{}, false
		}
		f.tos, f.proto = ip[1], ip[9]
		f.src = netip.AddrFrom4([4]byte(ip[12:16]))
		f.csum = ihl >= 20 && onesSum(ip[:ihl]) == 0xffff
		l4 = ip[ihl:tot]
	case 0x86dd:
		ip := b[14:]
		if len(ip) < 40 {
			return frame{}, false
		}
		pl := int(binary.BigEndian.Uint16(ip[4:]))
		if len(ip) < 40+pl {
			return frame{}, false
		}
		f.tos = ip[0]<<4 | ip[1]>>4
		f.proto = ip[6]
		f.csum = true
		f.src = netip.AddrFrom16([16]byte(ip[8:24]))
		l4 = ip[40 : 40+pl]
	default:
		return frame{}, false
	}
	if (f.proto == unix.IPPROTO_TCP || f.proto == unix.IPPROTO_UDP) && len(l4) >= 4 {
		f.sport, f.dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	}
	switch f.proto {
	case unix.IPPROTO_TCP:
		if len(l4) < 20 {
			return frame{}, false
		}
		f.payload = len(l4) - int(l4[12]>>4)*4
		f.syn = l4[13]&0x02 != 0
		f.seq = binary.BigEndian.Uint32(l4[4:8])
	case unix.IPPROTO_UDP:
		f.payload = len(l4) - 8
	}
	return f, true
}

// onesSum is the one's complement sum of b's 16-bit words (RFC 1071): an
// IPv4 header whose checksum is right sums to 0xffff.
func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
