package bench

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestCheckInterfacesRules: the rules over what was found, with fake
// interfaces: each refusal names the flag, the interface and the cure,
// and --force lifts only the management one.
func TestCheckInterfacesRules(t *testing.T) {
	up := func(name, role string, index int) Interface {
		return Interface{Name: name, Role: role, Index: index, Up: true, Carrier: true}
	}
	gen, sink := up("enp1s0f0", "gen-iface", 3), up("enp1s0f1", "sink-iface", 4)
	down, dark, admin := gen, sink, gen
	down.Up = false
	dark.Carrier = false
	admin.Management = []string{"the default route via 192.0.2.1 leaves through it"}
	for _, c := range []struct {
		name  string
		ifs   []Interface
		force bool
		want  []string // in the error; none: accepted
	}{
		{"two test ports", []Interface{gen, sink}, false, nil},
		{"the sink alone", []Interface{sink}, false, nil},
		{"down", []Interface{down, sink}, false, []string{"--gen-iface enp1s0f0 is down", "ip link set enp1s0f0 up", "changes nothing"}},
		{"no carrier", []Interface{gen, dark}, false, []string{"--sink-iface enp1s0f1 has no carrier", "cable"}},
		{"the same interface", []Interface{gen, up("enp1s0f0", "sink-iface", 3)}, false,
			[]string{"--gen-iface and --sink-iface are both enp1s0f0", "wired between two interfaces"}},
		{"management", []Interface{admin, sink}, false,
			[]string{"--gen-iface enp1s0f0 looks like this host's management interface", "default route via 192.0.2.1", "--force"}},
		{"management, forced", []Interface{admin, sink}, true, nil},
		{"forced but down", []Interface{down, sink}, true, []string{"is down"}},
	} {
		err := checkInterfaces(c.ifs, c.force)
		if (err != nil) != (len(c.want) > 0) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// TestManagement: what marks an interface as the management one, from
// fake routes, addresses and SSH sessions.
func TestManagement(t *testing.T) {
	gw := netip.MustParseAddr("192.0.2.1")
	h := hostFacts{
		defaults: []defaultRoute{{link: 2, gw: gw}, {link: 2, gw: netip.MustParseAddr("fe80::1")}, {link: 9}},
		addrs: map[int][]netip.Prefix{
			2: {netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("fe80::2/64")},
			3: {netip.MustParsePrefix("192.0.2.77/24")}, // a second NIC on the admin LAN
			4: {netip.MustParsePrefix("fe80::4/64")},    // a test port: only its link-local address
			5: {netip.MustParsePrefix("198.18.0.1/24")}, // a test port with a test address
			6: {netip.MustParsePrefix("198.51.100.9/24")},
			9: {netip.MustParsePrefix("203.0.113.5/32")}, // a point-to-point uplink
		},
		ssh: map[int][]string{6: {"an SSH session from 203.0.113.50:50022", "an SSH session from 203.0.113.50:50022"}},
	}
	for link, want := range map[int][]string{
		2: {"the default route via 192.0.2.1 leaves through it", "the default route via fe80::1 leaves through it"},
		3: {"its address 192.0.2.77/24 is on the subnet of the default gateway 192.0.2.1"},
		4: nil,
		5: nil,
		6: {"an SSH session from 203.0.113.50:50022 runs over it"},
		9: {"a default route leaves through it"},
	} {
		got := h.management(link)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("link %d: %q, want %q", link, got, want)
		}
	}
}

func TestParseProcTCP(t *testing.T) {
	// /proc/net/tcp and tcp6 as the kernel writes them: a listener on
	// 22, an SSH session from 10.0.2.2:51234 to 10.0.2.15:22, and an
	// IPv6 session to [2001:db8::1]:22 from [2001:db8::2]:40000.
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0
   1: 0F02000A:0016 0202000A:C822 01 00000000:00000000 02:000A7B5C 00000000     0        0 23456 4 0000000000000000 20 4 30 10 -1
`
	const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: B80D0120000000000000000001000000:0016 B80D0120000000000000000002000000:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
`
	got := append(parseProcTCP(strings.NewReader(tcp)), parseProcTCP(strings.NewReader(tcp6))...)
	want := []session{
		{local: netip.MustParseAddrPort("10.0.2.15:22"), remote: netip.MustParseAddrPort("10.0.2.2:51234")},
		{local: netip.MustParseAddrPort("[2001:db8::1]:22"), remote: netip.MustParseAddrPort("[2001:db8::2]:40000")},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("%v, want %v", got, want)
	}
	for _, bad := range []string{"", "0F02000A", "0F02000A:XYZ", "0F0200:0016", "zz02000A:0016"} {
		if _, ok := parseProcAddr(bad); ok {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}

func TestParseSSHConnection(t *testing.T) {
	s, ok := parseSSHConnection("203.0.113.50 50022 192.0.2.2 22")
	if !ok || s.remote != netip.MustParseAddrPort("203.0.113.50:50022") || s.local != netip.MustParseAddrPort("192.0.2.2:22") {
		t.Errorf("%+v %v", s, ok)
	}
	for _, bad := range []string{"", "203.0.113.50 50022 192.0.2.2", "a 1 b 2", "203.0.113.50 70000 192.0.2.2 22"} {
		if _, ok := parseSSHConnection(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCheckInterfacesOnVeth: CheckInterfaces on real interfaces of a
// namespace of the test's own: a pair of test ports passes; a downed
// one, the same one twice, a missing one and one carrying the
// namespace's default route are refused; --force lifts only the last.
func TestCheckInterfacesOnVeth(t *testing.T) {
	testenv.MustBeRoot(t, "network namespaces and veths")
	id, err := testbed.RandomID()
	if err != nil {
		t.Fatal(err)
	}
	ns, a, b, c := "ecnxc"+id, "ecnxc"+id+"a", "ecnxc"+id+"b", "ecnxc"+id+"c"
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	ip("link", "add", a, "type", "veth", "peer", "name", b)
	ip("link", "add", c, "type", "veth", "peer", "name", c+"p")
	ip("link", "set", a, "up")
	ip("link", "set", b, "up")
	ip("link", "set", c+"p", "up")

	if g, s, err := CheckInterfaces(ns, a, b, false); err != nil || g.Index == 0 || len(g.MAC) != 6 || s.Name != b || s.Role != "sink-iface" {
		t.Errorf("two test ports: %+v, %+v, %v", g, s, err)
	}
	for _, x := range []struct {
		gen, sink, want string
	}{
		{c, b, "--gen-iface " + c + " is down: bring it up (ip -n " + ns + " link set " + c + " up)"},
		{a, a, "--gen-iface and --sink-iface are both " + a},
		{a, "ecnxnone" + id, "--sink-iface ecnxnone" + id},
	} {
		if _, _, err := CheckInterfaces(ns, x.gen, x.sink, true); err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%s → %s: %v, want %q", x.gen, x.sink, err, x.want)
		}
	}
	// b carries the namespace's default route: b looks like the way in.
	ip("addr", "add", "198.18.0.1/24", "dev", b)
	ip("route", "add", "default", "via", "198.18.0.254", "dev", b)
	if _, _, err := CheckInterfaces(ns, a, b, false); err == nil || !strings.Contains(err.Error(), "default route via 198.18.0.254") {
		t.Errorf("default route: %v", err)
	}
	if _, _, err := CheckInterfaces(ns, a, b, true); err != nil {
		t.Errorf("default route, forced: %v", err)
	}
}

// TestExternalOptions: what SwitchOptions.External refuses before it
// touches anything, and the defaults it fills in.
func TestExternalOptions(t *testing.T) {
	ext := func(mod func(*External)) *External {
		e := &External{GenIface: "a", SinkIface: "b"}
		if mod != nil {
			mod(e)
		}
		return e
	}
	for _, c := range []struct {
		name string
		o    SwitchOptions
		want string // "" accepted
	}{
		{"two interfaces", SwitchOptions{External: ext(nil)}, ""},
		{"one interface", SwitchOptions{External: &External{GenIface: "a"}}, "both the generator's and the sink's interface are required"},
		{"a stamp clock", SwitchOptions{External: ext(func(e *External) { e.RxClock = "hw" })}, `stamp clock "hw"`},
		{"PHC TX stamps with live frames", SwitchOptions{Generator: GeneratorXDP, External: ext(func(e *External) { e.TxClock = StampPHC })},
			"TX stamps on the PHC need the AF_XDP generator"},
		{"PHC RX stamps with the XDP sink", SwitchOptions{Sink: "xdp", External: ext(func(e *External) { e.RxClock = StampPHC })},
			"RX stamps on the PHC need the AF_XDP sink"},
		{"other devices beside it", SwitchOptions{Devices: []Device{DeviceBridge}, External: ext(nil)}, "an external device is measured alone"},
		{"the external device without interfaces", SwitchOptions{Devices: []Device{DeviceExternal}}, `"external": want one of`},
		{"a negative clock limit", SwitchOptions{External: ext(func(e *External) { e.ClockLimit = -1 })}, "clock limit"},
	} {
		err := c.o.setDefaults()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if err == nil && (len(c.o.Devices) != 1 || c.o.Devices[0] != DeviceExternal || c.o.External.TxClock != StampMonotonic || c.o.External.RxClock != StampMonotonic) {
			t.Errorf("%s: devices %v, clocks %q %q: want the external device alone, on CLOCK_MONOTONIC",
				c.name, c.o.Devices, c.o.External.TxClock, c.o.External.RxClock)
		}
	}
}
