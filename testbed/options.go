package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/testbed/ect1"
)

// Defaults for the zero values of Options.
const (
	DefaultPrefix   = "ecnsw"
	DefaultMTU      = 1500
	DefaultQueues   = 1
	DefaultStateDir = "/run/ecnswitch"
	DefaultSubnet   = "198.18.0.0/24"
	// DefaultCongestionControl is the hosts' TCP congestion control:
	// cubic cuts its window to 0.7 on an ECN echo, once per round trip
	// (Linux's beta = 717/1024), an "ECN-enabled TCP" in the sense of the
	// papers' models (001 §2.2), and is in every kernel.
	DefaultCongestionControl = "cubic"
)

// CongestionControls are the TCP congestion controls a testbed may make
// its hosts' default. dctcp is the kernel's where it has one, and
// otherwise testbed/dctcp's, loaded as BPF struct_ops.
func CongestionControls() []string { return []string{"reno", "cubic", "bbr", "dctcp"} }

// ReactsToECN reports whether congestion control cc reduces its window when
// an ACK echoes a CE mark: reno halves it and cubic cuts it to 0.7 (RFC
// 3168, once per round trip), dctcp cuts it in proportion to the marked
// fraction (cwnd·(1 − α/2)); bbr (v1, mainline Linux's)
// ignores ECN, so a marking switch does not slow it down and its queue
// stands (issue 11 measured 99.9% of packets marked and a 1 MB queue with
// K = 30 KB).
func ReactsToECN(cc string) bool {
	switch cc {
	case "reno", "cubic", "dctcp":
		return true
	}
	return false
}

// HostIf is the name of every host's interface inside its namespace.
const HostIf = "eth0"

// maxRTOMin is the largest net.ipv4.tcp_rto_min_us the kernel accepts:
// proc_dointvec_minmax with a floor of 1 and no ceiling but an int's
// (net/ipv4/sysctl_net_ipv4.c), in microseconds.
const maxRTOMin = math.MaxInt32 * time.Microsecond

// maxCPU is the highest CPU number a mask may name (unix.CPUSet's limit).
const maxCPU = 1023

// maxIfName is the longest interface name Linux accepts (IFNAMSIZ - 1).
const maxIfName = 15

// Benchmarking address space (RFC 2544 §C.2.2 for IPv4, RFC 5180 §8 for
// IPv6): the only addresses a testbed hands out.
func benchmarkV4() netip.Prefix { return netip.MustParsePrefix("198.18.0.0/15") }
func benchmarkV6() netip.Prefix { return netip.MustParsePrefix("2001:2::/48") }

// Options describe a testbed. The zero value of every field but Hosts
// selects a default.
type Options struct {
	// Hosts is the number of hosts, at least 1 and at most what Subnet holds
	// (its size less the network and broadcast addresses).
	Hosts int

	// Prefix starts every name the testbed creates; lowercase letters and
	// digits, starting with a letter. Default DefaultPrefix.
	Prefix string

	// ID makes the names unique among concurrent testbeds; lowercase letters
	// and digits. Default: 6 random hex digits.
	ID string

	// MTU of both veth ends, 68..65535 (1280..65535 with IPv6). Default
	// DefaultMTU. AF_XDP ports with 2048-byte frames carry at most 1792
	// bytes (notes/afxdp.md pitfall 5).
	MTU int

	// Subnet is the flat L2 subnet of the hosts: host i (1-based) gets
	// Subnet.Addr()+i. It must lie inside 198.18.0.0/15, have no host bits
	// set and be at most a /30. Default DefaultSubnet.
	Subnet netip.Prefix

	// IPv6 adds a benchmarking address from 2001:2::/48 to each host, in a
	// /64 derived from Subnet (see Testbed.Subnet6).
	IPv6 bool

	// DisableECN leaves net.ipv4.tcp_ecn at the kernel's default (2: accept
	// ECN, never request it) instead of setting it to 1 in every host.
	DisableECN bool

	// CongestionControl is every host's default TCP congestion control
	// (net.ipv4.tcp_congestion_control in its namespace): one of
	// CongestionControls. Default DefaultCongestionControl. Without it
	// the hosts would inherit the machine's default, often bbr, which
	// ignores ECN (ReactsToECN). For dctcp on a kernel without its own
	// (no tcp_dctcp module), Up registers testbed/dctcp's BPF DCTCP and
	// holds it until Down; the last holder's Down unregisters it.
	CongestionControl string

	// RTOMin is every host's minimum TCP retransmission timeout
	// (net.ipv4.tcp_rto_min_us in its namespace): whole microseconds in
	// [1µs, 2147483647µs], the kernel's range. Linux's default is 200 ms;
	// the papers' hosts ran 10 ms (001 §5.1) or 5 ms (002 §V-A). Default
	// 0: the kernel's.
	RTOMin time.Duration

	// ECT1Ports are TCP ports whose packets every host sends with ECT(1)
	// in place of ECT(0), so that a DualQ switch takes them for L4S
	// (RFC 9331 §4.1): a tc egress program on each host's interface
	// rewrites the ECN field of the TCP packets whose source or
	// destination port is one of them (testbed/ect1; port 0 chooses every
	// TCP packet). Up pins the programs under ect1.DefaultPinDir, Down
	// removes them. At most ect1.MaxPorts ports; default none. With
	// dctcp as CongestionControl the chosen flows are scalable senders
	// (ECT(1), a reduction in proportion to the marked fraction); Linux
	// 6.18's TCP cannot send ECT(1) data by itself (see testbed/ect1).
	ECT1Ports []uint16

	// Queues is the number of RX and TX queues of each veth end. Default
	// DefaultQueues: the host's traffic then always arrives on queue 0 of the
	// switch end, the one an AF_XDP port binds.
	Queues int

	// StateDir holds the state file that lets Down, in this process or
	// another, remove exactly what Up created. Default DefaultStateDir.
	StateDir string

	// NoHostGRO keeps GRO off on the host ends too. A capture on a host
	// (AF_PACKET sees packets after GRO) then sees every frame as it
	// crossed the wire, one for one; the switch can then only transmit to
	// the hosts through its sockets, not as XDP live frames (see hostGRO).
	NoHostGRO bool

	// HostCPUs, when set, are the CPUs the hosts' receive processing runs
	// on (RPS on every host end's RX queues; see setRPS): keep them off
	// the switch workers' CPUs (dataplane.Place). Host processes are the
	// caller's to place (taskset -c). Default: the kernel's choice.
	HostCPUs []int

	// Logger receives one line per created or removed object. Default: none.
	Logger *zap.Logger
}

// withDefaults validates o and returns it with defaults filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.ID == "" {
		id, err := RandomID()
		if err != nil {
			return o, err
		}
		o.ID = id
	}
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if !o.Subnet.IsValid() {
		o.Subnet = netip.MustParsePrefix(DefaultSubnet)
	}
	if o.Queues == 0 {
		o.Queues = DefaultQueues
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.CongestionControl == "" {
		o.CongestionControl = DefaultCongestionControl
	}
	if !slices.Contains(CongestionControls(), o.CongestionControl) {
		return o, fmt.Errorf("testbed: CongestionControl %q: want one of %s", o.CongestionControl, strings.Join(CongestionControls(), ", "))
	}

	if o.RTOMin != 0 && (o.RTOMin < time.Microsecond || o.RTOMin > maxRTOMin || o.RTOMin%time.Microsecond != 0) {
		return o, fmt.Errorf("testbed: RTOMin %v: net.ipv4.tcp_rto_min_us takes whole microseconds in [1µs, %dµs] (0 keeps the kernel's default)",
			o.RTOMin, int64(maxRTOMin/time.Microsecond))
	}

	if !isName(o.Prefix, true) {
		return o, fmt.Errorf("testbed: Prefix %q: want lowercase letters and digits, starting with a letter", o.Prefix)
	}
	if !isName(o.ID, false) {
		return o, fmt.Errorf("testbed: ID %q: want lowercase letters and digits", o.ID)
	}
	if err := checkSubnet(o.Subnet); err != nil {
		return o, err
	}
	maxHosts := 1<<(32-o.Subnet.Bits()) - 2
	if o.Hosts < 1 || o.Hosts > maxHosts {
		return o, fmt.Errorf("testbed: Hosts %d: want 1..%d for Subnet %s", o.Hosts, maxHosts, o.Subnet)
	}
	minMTU := 68
	if o.IPv6 {
		minMTU = 1280
	}
	if o.MTU < minMTU || o.MTU > 65535 {
		return o, fmt.Errorf("testbed: MTU %d: want %d..65535", o.MTU, minMTU)
	}
	for i, c := range o.HostCPUs {
		if c < 0 || c > maxCPU {
			return o, fmt.Errorf("testbed: HostCPUs[%d] = %d: want a CPU in [0, %d]", i, c, maxCPU)
		}
	}
	if len(o.ECT1Ports) > ect1.MaxPorts {
		return o, fmt.Errorf("testbed: ECT1Ports: %d ports, want at most %d", len(o.ECT1Ports), ect1.MaxPorts)
	}
	if o.Queues < 1 || o.Queues > 64 {
		return o, fmt.Errorf("testbed: Queues %d: want 1..64", o.Queues)
	}
	if n := switchIfName(o.Prefix, o.ID, o.Hosts); len(n) > maxIfName {
		return o, fmt.Errorf("testbed: Prefix %q and ID %q too long: interface name %q is %d bytes, at most %d",
			o.Prefix, o.ID, n, len(n), maxIfName)
	}
	return o, nil
}

// checkSubnet accepts only subnets of the IPv4 benchmarking range.
func checkSubnet(p netip.Prefix) error {
	r := benchmarkV4()
	switch {
	case !p.Addr().Is4():
		return fmt.Errorf("testbed: Subnet %s: want an IPv4 prefix inside %s", p, r)
	case p.Bits() < r.Bits() || !r.Contains(p.Addr()):
		return fmt.Errorf("testbed: Subnet %s: outside the benchmarking range %s (RFC 2544); testbeds use no other addresses", p, r)
	case p.Bits() > 30:
		return fmt.Errorf("testbed: Subnet %s: prefix length %d: want 15..30", p, p.Bits())
	case p.Masked() != p:
		return fmt.Errorf("testbed: Subnet %s: host bits set; want %s", p, p.Masked())
	}
	return nil
}

// isName reports whether s is non-empty lowercase ASCII letters and digits,
// starting with a letter if letterFirst.
func isName(s string, letterFirst bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && !(letterFirst && i == 0):
		default:
			return false
		}
	}
	return true
}

// RandomID returns 6 random lowercase hex digits, the default Options.ID.
func RandomID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("testbed: random ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Names of host i's objects.
func netnsName(prefix, id string, i int) string {
	return prefix + "-" + id + "-h" + strconv.Itoa(i)
}

func switchIfName(prefix, id string, i int) string {
	return prefix + id + "s" + strconv.Itoa(i)
}

// hostV4 is host i's address in subnet.
func hostV4(subnet netip.Prefix, i int) netip.Addr {
	a := subnet.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// subnet6 maps an IPv4 subnet of 198.18.0.0/15 to a /64 of 2001:2::/48:
// 2001:2:0:N::/64 with N the subnet's offset in 198.18.0.0/15 divided by 4.
// Subnets are at most /30, so their offsets are multiples of 4 and distinct
// non-overlapping IPv4 subnets get distinct /64s (17 offset bits - 2 = 15 ≤ 16).
func subnet6(subnet netip.Prefix) netip.Prefix {
	a := subnet.Addr().As4()
	off := (uint32(a[1]&1)<<16 | uint32(a[2])<<8 | uint32(a[3])) >> 2
	b := benchmarkV6().Addr().As16()
	b[6], b[7] = byte(off>>8), byte(off)
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}

// hostV6 is host i's address in the /64 of subnet6.
func hostV6(p6 netip.Prefix, i int) netip.Addr {
	b := p6.Addr().As16()
	b[14], b[15] = byte(i>>8), byte(i)
	return netip.AddrFrom16(b)
}
