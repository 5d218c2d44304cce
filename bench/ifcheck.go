package bench

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
)

// Interface is what CheckInterfaces learned of one interface a load test
// is told to use.
type Interface struct {
	Name  string           `json:"name"`
	Role  string           `json:"role"` // the flag that named it: "gen-iface" or "sink-iface"
	Index int              `json:"index"`
	MAC   net.HardwareAddr `json:"mac"`
	// Up is the administrative state (IFF_UP), Carrier the link's
	// (IFF_RUNNING: a cable, a peer).
	Up      bool `json:"up"`
	Carrier bool `json:"carrier"`
	// Management lists why the interface looks like the way this host is
	// administered: it carries a default route, it has an address on
	// the default gateway's subnet, an SSH session runs over it.
	Management []string `json:"management,omitempty"`

	netns string // where it is, for the commands an error suggests
}

// ip returns the ip(8) command for the interface's namespace: "ip" or
// "ip -n NS".
func (f Interface) ip() string {
	if f.netns == "" {
		return "ip"
	}
	return "ip -n " + f.netns
}

// CheckInterfaces inspects the interfaces gen and sink (either may be "",
// not both) in the network namespace netns ("" the caller's) and refuses
// them, with an error that says why and what to do, when one is missing,
// down or without carrier, when both are the same interface, or, unless
// force, when one looks like the host's management interface (a default
// route, the default gateway's subnet, an SSH session: load at line rate
// through it could cut the machine off). It changes nothing.
func CheckInterfaces(netns, gen, sink string, force bool) (genIf, sinkIf Interface, err error) {
	err = inNetns(netns, func() error {
		facts, err := readHostFacts()
		if err != nil {
			return err
		}
		var gerr, serr error
		if gen != "" {
			genIf, gerr = inspect(gen, "gen-iface", facts)
			genIf.netns = netns
		}
		if sink != "" {
			sinkIf, serr = inspect(sink, "sink-iface", facts)
			sinkIf.netns = netns
		}
		return errors.Join(gerr, serr)
	})
	if err != nil {
		return genIf, sinkIf, fmt.Errorf("bench: interfaces: %w", err)
	}
	var ifs []Interface
	if gen != "" {
		ifs = append(ifs, genIf)
	}
	if sink != "" {
		ifs = append(ifs, sinkIf)
	}
	if err := checkInterfaces(ifs, force); err != nil {
		return genIf, sinkIf, fmt.Errorf("bench: interfaces: %w", err)
	}
	return genIf, sinkIf, nil
}

// checkInterfaces applies CheckInterfaces' rules to what it found.
func checkInterfaces(ifs []Interface, force bool) error {
	var errs []error
	for i, f := range ifs {
		for _, g := range ifs[:i] {
			if g.Name == f.Name || (f.Index != 0 && g.Index == f.Index) {
				errs = append(errs, fmt.Errorf("--%s and --%s are both %s: the device under test must be wired between two interfaces, "+
					"the generator sending on one and the sink counting on the other", g.Role, f.Role, f.Name))
			}
		}
		switch {
		case !f.Up:
			errs = append(errs, fmt.Errorf("--%s %s is down: bring it up (%s link set %s up); "+
				"ecnswitch changes nothing on the interfaces it load-tests through", f.Role, f.Name, f.ip(), f.Name))
		case !f.Carrier:
			errs = append(errs, fmt.Errorf("--%s %s has no carrier: check the cable or the peer to the device under test (%s link show %s)",
				f.Role, f.Name, f.ip(), f.Name))
		}
		if len(f.Management) > 0 && !force {
			errs = append(errs, fmt.Errorf("--%s %s looks like this host's management interface (%s): "+
				"load at line rate through it could cut the machine off; wire the device to two spare ports, "+
				"or give --force if %s really is one", f.Role, f.Name, strings.Join(f.Management, "; "), f.Name))
		}
	}
	return errors.Join(errs...)
}

// hostFacts are what marks an interface as the host's management
// interface, read once for all the interfaces checked.
type hostFacts struct {
	defaults []defaultRoute
	// addrs are every interface's addresses, by link index.
	addrs map[int][]netip.Prefix
	// ssh are the links SSH sessions use, with a description of each.
	ssh map[int][]string
}

// defaultRoute is a default route's outgoing link and gateway.
type defaultRoute struct {
	link int
	gw   netip.Addr // invalid when the route has none (a point-to-point link)
}

// readHostFacts reads routes, addresses and SSH sessions in the calling
// thread's network namespace.
func readHostFacts() (hostFacts, error) {
	f := hostFacts{addrs: map[int][]netip.Prefix{}, ssh: map[int][]string{}}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return f, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		gw, _ := netip.AddrFromSlice(r.Gw)
		f.defaults = append(f.defaults, defaultRoute{link: r.LinkIndex, gw: gw.Unmap()})
		for _, nh := range r.MultiPath {
			gw, _ := netip.AddrFromSlice(nh.Gw)
			f.defaults = append(f.defaults, defaultRoute{link: nh.LinkIndex, gw: gw.Unmap()})
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return f, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || a.IPNet == nil {
			continue
		}
		ones, _ := a.IPNet.Mask.Size()
		f.addrs[a.LinkIndex] = append(f.addrs[a.LinkIndex], netip.PrefixFrom(ip.Unmap(), ones))
	}
	for _, s := range sshSessions() {
		desc := "an SSH session from " + s.remote.String()
		if r, err := netlink.RouteGet(s.remote.Addr().AsSlice()); err == nil && len(r) > 0 {
			f.ssh[r[0].LinkIndex] = append(f.ssh[r[0].LinkIndex], desc)
		}
		for link, ps := range f.addrs {
			for _, p := range ps {
				if p.Addr() == s.local.Addr() {
					f.ssh[link] = append(f.ssh[link], desc)
				}
			}
		}
	}
	return f, nil
}

// inspect reads one interface and what of facts concerns it.
func inspect(name, role string, facts hostFacts) (Interface, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return Interface{}, fmt.Errorf("--%s %s: %w", role, name, err)
	}
	a := l.Attrs()
	f := Interface{Name: name, Role: role, Index: a.Index, MAC: a.HardwareAddr,
		Up: a.Flags&net.FlagUp != 0, Carrier: a.Flags&net.FlagRunning != 0}
	f.Management = facts.management(a.Index)
	return f, nil
}

// management says why link looks like the host's management interface.
func (h hostFacts) management(link int) []string {
	var why []string
	for _, d := range h.defaults {
		if d.link == link {
			if d.gw.IsValid() {
				why = append(why, "the default route via "+d.gw.String()+" leaves through it")
			} else {
				why = append(why, "a default route leaves through it")
			}
		}
	}
	for _, p := range h.addrs[link] {
		for _, d := range h.defaults {
			// A link-local gateway (fe80::1) is on every link's fe80::/64.
			if d.link != link && d.gw.IsValid() && !d.gw.IsLinkLocalUnicast() && p.Masked().Contains(d.gw) {
				why = append(why, fmt.Sprintf("its address %s is on the subnet of the default gateway %s", p, d.gw))
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range h.ssh[link] {
		if !seen[s] {
			seen[s] = true
			why = append(why, s+" runs over it")
		}
	}
	return why
}

// session is one SSH connection, seen from this host.
type session struct {
	local, remote netip.AddrPort
}

// sshSessions returns the SSH connections of the calling thread's
// network namespace: established TCP connections on port 22 or on the
// server port of $SSH_CONNECTION, and the connection $SSH_CONNECTION
// names (the session this process may run in, whatever its port).
func sshSessions() []session {
	ports := []uint16{22}
	var out []session
	if s, ok := parseSSHConnection(os.Getenv("SSH_CONNECTION")); ok {
		out = append(out, s)
		ports = append(ports, s.local.Port())
	}
	for _, file := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue // no IPv6, or no procfs: $SSH_CONNECTION still counts
		}
		for _, s := range parseProcTCP(f) {
			if slices.Contains(ports, s.local.Port()) {
				out = append(out, s)
			}
		}
		f.Close()
	}
	return out
}

// parseSSHConnection parses $SSH_CONNECTION: "client port server port".
func parseSSHConnection(v string) (session, bool) {
	f := strings.Fields(v)
	if len(f) != 4 {
		return session{}, false
	}
	client, err1 := netip.ParseAddr(f[0])
	cport, err2 := strconv.ParseUint(f[1], 10, 16)
	server, err3 := netip.ParseAddr(f[2])
	sport, err4 := strconv.ParseUint(f[3], 10, 16)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return session{}, false
	}
	return session{local: netip.AddrPortFrom(server.Unmap(), uint16(sport)), remote: netip.AddrPortFrom(client.Unmap(), uint16(cport))}, true
}

// tcpEstablished is TCP_ESTABLISHED in /proc/net/tcp's st column.
const tcpEstablished = "01"

// parseProcTCP returns the established connections of a /proc/net/tcp or
// tcp6 table.
func parseProcTCP(r io.Reader) []session {
	var out []session
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != tcpEstablished {
			continue
		}
		local, ok1 := parseProcAddr(f[1])
		remote, ok2 := parseProcAddr(f[2])
		if ok1 && ok2 {
			out = append(out, session{local: local, remote: remote})
		}
	}
	return out
}

// parseProcAddr parses /proc/net/tcp's "0100007F:0016": the address as
// 32-bit words in host (little-endian) order, the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, false
	}
	for w := 0; w < len(b); w += 4 {
		b[w], b[w+1], b[w+2], b[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	ip, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), true
}

// inNetns runs fn in the named network namespace ("" the caller's); in
// another, on a thread that stays in it while fn runs (nsenter.Do), so
// that /proc/thread-self/net is the namespace's.
func inNetns(netns string, fn func() error) error {
	if netns == "" {
		return fn()
	}
	return nsenter.Do(netns, fn)
}
