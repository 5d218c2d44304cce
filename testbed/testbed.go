package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
	"github.com/ecnswitch/ecnswitch/testbed/ect1"
)

// stateVersion is the version of the state file format.
const stateVersion = 1

// Testbed is a set of hosts, each a network namespace wired by a veth pair
// to the namespace Up ran in, where the switch drives the switch ends.
// Its methods are safe for concurrent use.
type Testbed struct {
	log  *zap.Logger
	path string

	mu sync.Mutex
	st state
}

// state is what the state file records: everything Up created, added as it
// is created, so that Down removes exactly that.
type state struct {
	Version int          `json:"version"`
	ID      string       `json:"id"`
	Prefix  string       `json:"prefix"`
	Subnet  netip.Prefix `json:"subnet"`
	Subnet6 netip.Prefix `json:"subnet6"`
	MTU     int          `json:"mtu"`
	ECN     bool         `json:"ecn"`
	IPv6    bool         `json:"ipv6"`
	// CC is the hosts' default TCP congestion control, and CCAllowed says
	// that Up added it to the machine's allowed list.
	CC        string `json:"cc,omitempty"`
	CCAllowed bool   `json:"cc_allowed,omitempty"`
	// DCTCPHolder names Up's hold on testbed/dctcp's BPF DCTCP, which
	// Down releases; empty when the hosts' dctcp is the kernel's, or
	// their congestion control another.
	DCTCPHolder string `json:"dctcp_holder,omitempty"`
	// ECT1Ports are the ports whose TCP packets the hosts send with
	// ECT(1); ECT1Pins the directory of the rewriters' pins, recorded
	// before the first is made.
	ECT1Ports []uint16    `json:"ect1_ports,omitempty"`
	ECT1Pins  string      `json:"ect1_pins,omitempty"`
	RTOMinUS  int64       `json:"rto_min_us,omitempty"` // net.ipv4.tcp_rto_min_us; 0: the kernel's
	HostCPUs  []int       `json:"host_cpus,omitempty"`  // RPS of the host ends
	Hosts     []hostState `json:"hosts"`
}

// hostState is one host as recorded. NetnsInode, NetnsCookie and
// SwitchIfIndex identify
// the objects Up created, so that Down never removes a namespace or
// interface that merely has the same name; a zero SwitchIfIndex means the
// veth pair was not created.
type hostState struct {
	Index         int        `json:"index"`
	Netns         string     `json:"netns"`
	NetnsInode    uint64     `json:"netns_inode"`
	NetnsCookie   uint64     `json:"netns_cookie,omitempty"`
	SwitchIf      string     `json:"switch_if,omitempty"`
	SwitchIfIndex int        `json:"switch_ifindex,omitempty"`
	SwitchMAC     string     `json:"switch_mac,omitempty"`
	HostIf        string     `json:"host_if,omitempty"`
	MAC           string     `json:"mac,omitempty"`
	IPv4          netip.Addr `json:"ipv4"`
	IPv6          netip.Addr `json:"ipv6"`
}

// StatePath is the state file of testbed id in dir.
func StatePath(dir, id string) string {
	return filepath.Join(dir, "testbed-"+id+".json")
}

// Up creates the testbed opts describes. For each host i in 1..opts.Hosts it
// creates network namespace "<prefix>-<id>-h<i>" and a veth pair whose
// switch end "<prefix><id>s<i>" stays in the caller's namespace and whose
// host end is HostIf inside the host's namespace; sets the MTU and the queue
// count on both ends, turns GRO, GSO and TSO off on the switch end and GSO,
// TSO and TX checksum offload off on the host end, where GRO stays on (see
// hostGRO), and IPv6 off on the switch end (the switch has no
// address and sends nothing of its own); in the host it brings lo up, gives
// HostIf its address(es) without duplicate address detection (and no IPv6
// at all, link-local included, unless opts.IPv6), sets a
// pfifo_fast root qdisc (a host qdisc must not mark CE: the switch is what
// is under test), sets net.ipv4.tcp_ecn=1 unless opts.DisableECN, and makes
// opts.CongestionControl the namespace's default TCP congestion control
// (cubic unless told otherwise), adding it to the machine's
// net.ipv4.tcp_allowed_congestion_control first if the kernel restricts it
// (see Testbed.AllowedCongestionControl), and sets
// net.ipv4.tcp_rto_min_us to opts.RTOMin if given. For dctcp on a kernel
// without its own, Up first registers testbed/dctcp's BPF DCTCP, or holds
// the one another testbed registered (Testbed.HoldsDCTCP); Down releases
// it. Testbed.ECNWarning says when the choice leaves the switch's marks
// without effect. With opts.ECT1Ports, Up attaches testbed/ect1's
// rewriter to every host's interface (ECT(0) → ECT(1) for those TCP
// ports) and pins it under ect1.DefaultPinDir; Down removes the pins.
//
// No neighbour entries are added: ARP and NDP cross the switch like any
// other traffic. On failure Up removes whatever it had created.
func Up(opts Options) (*Testbed, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Testbed{
		log:  o.Logger.Named("testbed").With(zap.String("id", o.ID)),
		path: StatePath(o.StateDir, o.ID),
		st: state{
			Version:  stateVersion,
			ID:       o.ID,
			Prefix:   o.Prefix,
			Subnet:   o.Subnet,
			MTU:      o.MTU,
			ECN:      !o.DisableECN,
			IPv6:     o.IPv6,
			CC:       o.CongestionControl,
			RTOMinUS: int64(o.RTOMin / time.Microsecond),
			HostCPUs: slices.Clone(o.HostCPUs),
		},
	}
	if len(o.ECT1Ports) > 0 {
		t.st.ECT1Ports = slices.Clone(o.ECT1Ports)
		t.st.ECT1Pins = filepath.Join(ect1.DefaultPinDir, "testbed-"+o.ID)
	}
	if o.IPv6 {
		t.st.Subnet6 = subnet6(o.Subnet)
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("testbed: state dir: %w", err)
	}
	// Claim the ID: a second Up with the same ID must not adopt, and later
	// remove, the first one's objects.
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testbed: ID %q in use or state dir not writable: %w", o.ID, err)
	}
	f.Close()
	if err := t.save(); err != nil {
		return nil, errors.Join(err, os.Remove(t.path))
	}
	// From here on the state file records what needs undoing, so Down
	// undoes a failed Up.
	if err := t.setupCongestionControl(o); err != nil {
		return nil, errors.Join(fmt.Errorf("testbed: CongestionControl %s: %w", o.CongestionControl, err), t.Down())
	}
	for i := 1; i <= o.Hosts; i++ {
		if err := t.addHost(o, i); err != nil {
			return nil, errors.Join(fmt.Errorf("testbed: host %d: %w", i, err), t.Down())
		}
	}
	t.log.Info("up", zap.Int("hosts", o.Hosts), zap.Stringer("subnet", o.Subnet),
		zap.String("cc", o.CongestionControl), zap.String("state", t.path))
	return t, nil
}

// setupCongestionControl makes o.CongestionControl fit to be the hosts'
// default: dctcp registered where the kernel has none, and the algorithm
// allowed in namespaces other than the initial one.
func (t *Testbed) setupCongestionControl(o Options) error {
	if o.CongestionControl == dctcp.Name {
		holder := "testbed-" + o.ID
		// Recorded first: a crash between registering and recording
		// would leave a hold that no Down releases.
		t.mu.Lock()
		t.st.DCTCPHolder = holder
		err := t.saveLocked()
		t.mu.Unlock()
		if err != nil {
			return err
		}
		src, err := dctcp.Acquire(holder, dctcp.Options{Logger: t.log})
		if err != nil {
			return err
		}
		t.log.Info("dctcp for the hosts", zap.Stringer("source", src))
		if src != dctcp.BPF {
			t.mu.Lock()
			t.st.DCTCPHolder = ""
			err = t.saveLocked()
			t.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	allowed, err := AllowCongestionControl(o.CongestionControl)
	if err != nil {
		return err
	}
	if allowed {
		t.log.Info("allowed congestion control for the hosts' namespaces",
			zap.String("cc", o.CongestionControl), zap.String("sysctl", "net.ipv4.tcp_allowed_congestion_control"))
		t.mu.Lock()
		t.st.CCAllowed = true
		err = t.saveLocked()
		t.mu.Unlock()
	}
	return err
}

// addHost creates host i, recording each object right after creating it.
func (t *Testbed) addHost(o Options, i int) error {
	hs := hostState{
		Index: i,
		Netns: netnsName(o.Prefix, o.ID, i),
		IPv4:  hostV4(o.Subnet, i),
	}
	if o.IPv6 {
		hs.IPv6 = hostV6(t.st.Subnet6, i)
	}
	id, err := createNetns(hs.Netns)
	if err != nil {
		return err
	}
	hs.NetnsInode, hs.NetnsCookie = id.ino, id.cookie
	if err := t.record(hs); err != nil {
		return err
	}
	t.log.Debug("created netns", zap.String("netns", hs.Netns))

	// Defaults first, so that HostIf inherits them when it appears. A host
	// without IPv6 (Options.IPv6) has none at all, link-local included: it
	// then sends nothing the test did not ask for (no MLD reports, no
	// neighbour discovery), which would cross the switch as Not-ECT
	// multicast beside the traffic under test.
	v6off := "1"
	if o.IPv6 {
		v6off = "0"
	}
	pre := []sysctl{
		{"net/ipv6/conf/all/disable_ipv6", v6off},
		{"net/ipv6/conf/default/disable_ipv6", v6off},
		{"net/ipv6/conf/all/accept_dad", "0"},
		{"net/ipv6/conf/default/accept_dad", "0"},
		{"net/ipv6/conf/default/router_solicitations", "0"},
		{"net/ipv6/conf/default/accept_ra", "0"},
	}
	if !o.DisableECN {
		pre = append(pre, sysctl{"net/ipv4/tcp_ecn", "1"})
	}
	if o.RTOMin > 0 {
		pre = append(pre, sysctl{"net/ipv4/tcp_rto_min_us", strconv.FormatInt(int64(o.RTOMin/time.Microsecond), 10)})
	}
	err = nsenter.Do(hs.Netns, func() error {
		if err := setSysctls(pre); err != nil {
			return err
		}
		return setCongestionControl(o.CongestionControl)
	})
	if err != nil {
		return err
	}

	sw, err := createVeth(o, hs.Netns, switchIfName(o.Prefix, o.ID, i))
	if err != nil {
		return err
	}
	hs.SwitchIf, hs.SwitchIfIndex, hs.HostIf = sw.Attrs().Name, sw.Attrs().Index, HostIf
	if err := t.record(hs); err != nil {
		return err
	}
	t.log.Debug("created veth", zap.String("switch_if", hs.SwitchIf), zap.String("netns", hs.Netns))

	// The switch end: no IPv6 of its own (no RS, MLD or DAD from the
	// switch), offloads off, up.
	if err := setSysctls([]sysctl{{"net/ipv6/conf/" + hs.SwitchIf + "/disable_ipv6", "1"}}); err != nil {
		return err
	}
	if err := disableOffloads(hs.SwitchIf, switchOffload); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(sw); err != nil {
		return fmt.Errorf("set %s up: %w", hs.SwitchIf, err)
	}
	hs.SwitchMAC = sw.Attrs().HardwareAddr.String()

	mac, err := configureHostIf(hs, t.st.Subnet, t.st.Subnet6, o.NoHostGRO)
	if err != nil {
		return err
	}
	hs.MAC = mac.String()
	if len(o.HostCPUs) > 0 {
		if err := setRPS(hs.Netns, HostIf, o.Queues, o.HostCPUs); err != nil {
			return err
		}
	}
	if len(o.ECT1Ports) > 0 {
		if err := t.rewriteECT1(hs); err != nil {
			return err
		}
	}
	return t.record(hs)
}

// rewriteECT1 attaches testbed/ect1's rewriter to hs's interface and pins
// it in the testbed's pin directory, which Down removes.
func (t *Testbed) rewriteECT1(hs hostState) error {
	r, err := ect1.Attach(hs.Netns, HostIf, t.st.ECT1Ports)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Pin(ect1Pin(t.st.ECT1Pins, hs.Index)); err != nil {
		return err
	}
	t.log.Debug("ECT(1) for the chosen TCP ports", zap.String("netns", hs.Netns), zap.Any("ports", t.st.ECT1Ports))
	return nil
}

// ect1Pin is where host i's rewriter is pinned in dir.
func ect1Pin(dir string, i int) string { return filepath.Join(dir, "h"+strconv.Itoa(i)) }

// createVeth creates the pair: the switch end named sw in the caller's
// namespace and the host end HostIf directly inside netnsName, in one
// RTM_NEWLINK, so no host end ever exists in the caller's namespace.
func createVeth(o Options, netnsName, sw string) (netlink.Link, error) {
	ns, err := netns.GetFromName(netnsName)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", netnsName, err)
	}
	defer ns.Close()
	la := netlink.NewLinkAttrs()
	la.Name = sw
	la.MTU = o.MTU
	la.NumTxQueues = o.Queues
	la.NumRxQueues = o.Queues
	veth := &netlink.Veth{
		LinkAttrs:     la,
		PeerName:      HostIf,
		PeerNamespace: netlink.NsFd(ns),
		PeerTxQLen:    -1, // kernel default, like the switch end
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s <-> %s/%s: %w", sw, netnsName, HostIf, err)
	}
	l, err := netlink.LinkByName(sw)
	if err != nil {
		// Removing the namespace removes the pair with it.
		return nil, fmt.Errorf("find veth %s: %w", sw, err)
	}
	return l, nil
}

// configureHostIf sets up lo and HostIf inside the host's namespace and
// returns HostIf's MAC address.
func configureHostIf(hs hostState, subnet, subnet6 netip.Prefix, noGRO bool) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := nsenter.Do(hs.Netns, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return fmt.Errorf("netlink in netns %s: %w", hs.Netns, err)
		}
		defer h.Close()
		lo, err := h.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("find lo: %w", err)
		}
		if err := h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
		l, err := h.LinkByName(HostIf)
		if err != nil {
			return fmt.Errorf("find %s: %w", HostIf, err)
		}
		if err := setSysctls([]sysctl{
			{"net/ipv6/conf/" + HostIf + "/accept_dad", "0"},
			{"net/ipv6/conf/" + HostIf + "/router_solicitations", "0"},
		}); err != nil {
			return err
		}
		if err := disableOffloads(HostIf, hostOffload); err != nil {
			return err
		}
		q := &netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0)},
			QdiscType:  "pfifo_fast",
		}
		if err := h.QdiscReplace(q); err != nil {
			return fmt.Errorf("set %s qdisc pfifo_fast: %w", HostIf, err)
		}
		addrs := []*netlink.Addr{{IPNet: ipNet(netip.PrefixFrom(hs.IPv4, subnet.Bits()))}}
		if hs.IPv6.IsValid() {
			addrs = append(addrs, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(hs.IPv6, subnet6.Bits())), Flags: unix.IFA_F_NODAD})
		}
		for _, a := range addrs {
			if err := h.AddrAdd(l, a); err != nil {
				return fmt.Errorf("add %s to %s: %w", a.IPNet, HostIf, err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", HostIf, err)
		}
		// GRO on once the end is up: veth starts its NAPI, and makes the
		// switch end a redirect target, only when GRO turns on while it runs.
		if !noGRO {
			if err := setOffloads(HostIf, func(string) bool { return false }, func(f string) bool { return f == hostGRO }); err != nil {
				return err
			}
		}
		mac = l.Attrs().HardwareAddr
		return nil
	})
	return mac, err
}

// ipNet converts an address with its prefix length to the form netlink takes.
func ipNet(p netip.Prefix) *net.IPNet {
	bits := 128
	if p.Addr().Is4() {
		bits = 32
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}

// record adds or replaces hs in the state and writes the state file.
func (t *Testbed) record(hs hostState) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.st.Hosts); n > 0 && t.st.Hosts[n-1].Index == hs.Index {
		t.st.Hosts[n-1] = hs
	} else {
		t.st.Hosts = append(t.st.Hosts, hs)
	}
	return t.saveLocked()
}

func (t *Testbed) save() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.saveLocked()
}

// saveLocked writes the state file atomically (write a temporary file, then
// rename), so a crash never leaves half a record.
func (t *Testbed) saveLocked() error {
	b, err := json.MarshalIndent(&t.st, "", "  ")
	if err != nil {
		return fmt.Errorf("testbed: encode state: %w", err)
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("testbed: write state: %w", err)
	}
	if err := os.Rename(tmp, t.path); err != nil {
		return fmt.Errorf("testbed: write state: %w", err)
	}
	return nil
}

// Load reads the state file at path, written by Up in this process or
// another, and returns the testbed it records, ready for Hosts and Down.
// log may be nil.
func Load(path string, log *zap.Logger) (*Testbed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testbed: load: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("testbed: load %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("testbed: load %s: version %d: want %d", path, st.Version, stateVersion)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Testbed{log: log.Named("testbed").With(zap.String("id", st.ID)), path: path, st: st}, nil
}

// Down removes everything Up recorded, host by host in reverse order: the
// switch end of each veth pair (which takes the host end with it) and each
// namespace; then it removes the pins of the hosts' ECT(1) rewriters
// (Options.ECT1Ports), which detaches them, and releases its hold on
// testbed/dctcp's BPF DCTCP, which
// unregisters it if no other holder remains (its name leaves the machine's
// available and allowed lists with it), and removes the state file. Objects already gone are skipped; objects
// that only share a name with what Up created (a different ifindex or
// namespace inode) are left alone and reported. Errors are joined, and the
// state file is kept while any remain, so Down can be retried. Down is
// idempotent.
func (t *Testbed) Down() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, hs := range slices.Backward(t.st.Hosts) {
		if err := deleteSwitchIf(hs); err != nil {
			errs = append(errs, err)
		} else if hs.SwitchIf != "" {
			t.log.Debug("removed veth", zap.String("switch_if", hs.SwitchIf))
		}
		if err := deleteNetns(hs.Netns, netnsID{hs.NetnsInode, hs.NetnsCookie}); err != nil {
			errs = append(errs, err)
		} else {
			t.log.Debug("removed netns", zap.String("netns", hs.Netns))
		}
	}
	if dir := t.st.ECT1Pins; dir != "" {
		if err := removeECT1Pins(dir, t.st.Hosts); err != nil {
			errs = append(errs, err)
		} else {
			t.log.Debug("removed the ECT(1) rewriters", zap.String("pins", dir))
		}
	}
	if h := t.st.DCTCPHolder; h != "" {
		unloaded, err := dctcp.Release(h, dctcp.Options{Logger: t.log})
		if err != nil {
			errs = append(errs, err)
		} else if unloaded {
			t.log.Info("unregistered dctcp: this testbed held it last")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testbed %s: down: %w", t.st.ID, err)
	}
	if err := os.Remove(t.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("testbed %s: down: %w", t.st.ID, err)
	}
	t.log.Info("down", zap.Int("hosts", len(t.st.Hosts)))
	return nil
}

// removeECT1Pins removes the hosts' rewriter pins from dir, and dir;
// nothing else in it, so a pin someone else put there stays, and so does
// dir then.
func removeECT1Pins(dir string, hosts []hostState) error {
	var errs []error
	for _, hs := range hosts {
		errs = append(errs, ect1.Unpin(ect1Pin(dir, hs.Index)))
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// deleteSwitchIf removes hs's switch end if it is still the interface Up
// created.
func deleteSwitchIf(hs hostState) error {
	if hs.SwitchIfIndex == 0 {
		return nil
	}
	l, err := netlink.LinkByName(hs.SwitchIf)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find %s: %w", hs.SwitchIf, err)
	}
	if l.Attrs().Index != hs.SwitchIfIndex || l.Type() != "veth" {
		return fmt.Errorf("interface %s is not the one this testbed created (%s ifindex %d, recorded veth ifindex %d): left alone",
			hs.SwitchIf, l.Type(), l.Attrs().Index, hs.SwitchIfIndex)
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete %s: %w", hs.SwitchIf, err)
	}
	return nil
}

// ID returns the testbed's unique suffix.
func (t *Testbed) ID() string { return t.st.ID }

// StatePath returns the path of the testbed's state file.
func (t *Testbed) StatePath() string { return t.path }

// MTU returns the MTU of every veth end.
func (t *Testbed) MTU() int { return t.st.MTU }

// Subnet returns the hosts' IPv4 subnet.
func (t *Testbed) Subnet() netip.Prefix { return t.st.Subnet }

// Subnet6 returns the hosts' IPv6 /64, 2001:2:0:N::/64 with N the offset of
// Subnet in 198.18.0.0/15 divided by 4, or the zero Prefix without IPv6.
func (t *Testbed) Subnet6() netip.Prefix { return t.st.Subnet6 }

// ECN reports whether the hosts' TCP requests ECN (net.ipv4.tcp_ecn=1).
func (t *Testbed) ECN() bool { return t.st.ECN }

// CongestionControl returns the hosts' default TCP congestion control, or
// "" for a testbed whose state file predates the setting.
func (t *Testbed) CongestionControl() string { return t.st.CC }

// HoldsDCTCP reports whether the hosts' dctcp is testbed/dctcp's BPF
// congestion control, held by this testbed until Down, rather than the
// kernel's own.
func (t *Testbed) HoldsDCTCP() bool { return t.st.DCTCPHolder != "" }

// ECT1Ports returns the TCP ports whose packets the hosts send with
// ECT(1) (Options.ECT1Ports); nil when none.
func (t *Testbed) ECT1Ports() []uint16 { return slices.Clone(t.st.ECT1Ports) }

// RTOMin returns the hosts' net.ipv4.tcp_rto_min_us, or 0 when Up left
// the kernel's default.
func (t *Testbed) RTOMin() time.Duration { return time.Duration(t.st.RTOMinUS) * time.Microsecond }

// HostCPUs returns the CPUs the hosts' receive processing is steered to;
// nil when it is left to the kernel.
func (t *Testbed) HostCPUs() []int { return slices.Clone(t.st.HostCPUs) }

// AllowedCongestionControl reports whether Up added the hosts' congestion
// control to the machine's net.ipv4.tcp_allowed_congestion_control, without
// which a namespace other than the initial one cannot make it its default.
// The addition outlives the testbed.
func (t *Testbed) AllowedCongestionControl() bool { return t.st.CCAllowed }

// ECNWarning says why the hosts' TCP will not slow down for the switch's
// CE marks, or returns "" when it will: their congestion control ignores
// ECN (ReactsToECN), or they do not request ECN (Options.DisableECN; dctcp
// asks for ECN on its own).
func (t *Testbed) ECNWarning() string {
	cc := t.st.CC
	switch {
	case cc == "":
		return ""
	case !ReactsToECN(cc):
		return fmt.Sprintf("the hosts' congestion control %s ignores ECN: a marking switch will not slow their TCP down and its queues will stand; choose cubic, reno or dctcp", cc)
	case !t.st.ECN && cc != "dctcp":
		return fmt.Sprintf("the hosts do not request ECN (tcp_ecn=2): their %s connections are not ECN-capable, so the switch drops what it would mark", cc)
	}
	return ""
}

// Hosts returns the hosts Up recorded, in order. After a partial Up (seen
// through Load) a host's interface fields may be empty.
func (t *Testbed) Hosts() []Host {
	t.mu.Lock()
	defer t.mu.Unlock()
	hosts := make([]Host, 0, len(t.st.Hosts))
	for _, hs := range t.st.Hosts {
		h := Host{
			Index:    hs.Index,
			Name:     "h" + strconv.Itoa(hs.Index),
			Netns:    hs.Netns,
			SwitchIf: hs.SwitchIf,
			HostIf:   hs.HostIf,
			IPv4:     hs.IPv4,
			IPv6:     hs.IPv6,
		}
		h.MAC, _ = net.ParseMAC(hs.MAC)
		h.SwitchMAC, _ = net.ParseMAC(hs.SwitchMAC)
		hosts = append(hosts, h)
	}
	return hosts
}
