package main

import (
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// testbedCommand is `ecnswitch testbed`: hosts in network namespaces,
// wired to this one, for kernel TCP through the switch.
func testbedCommand() *command {
	return &command{
		name: "testbed", synopsis: "up -n N [--state FILE] | down [--state FILE]",
		summary: "create or remove hosts in network namespaces (root)",
		subs: []*command{
			{name: "up", synopsis: "-n N [--state FILE] [flags]", summary: "create N hosts and a switch config for them",
				short: map[string]string{"n": "hosts"},
				help: "Create N hosts, each a network namespace wired by a veth pair to this namespace,\n" +
					"in one L2 subnet of 198.18.0.0/15, ready for kernel TCP through the switch.\n" +
					"Writes a switch config for them next to the state file (testbed-ID.yaml).\nNeeds root.",
				setup: testbedUpSetup},
			{name: "down", synopsis: "[--state FILE]", summary: "remove the hosts 'testbed up' created",
				help: "Remove exactly what 'testbed up' created, recorded in its state file, and the\n" +
					"switch config written next to it. Needs root.",
				setup: testbedDownSetup},
		},
	}
}

// stateRE is the name testbed.StatePath gives a state file.
var stateRE = regexp.MustCompile(`^testbed-([a-z0-9]+)\.json$`)

// splitState turns --state DIR/testbed-ID.json into DIR and ID.
func splitState(path string) (dir, id string, err error) {
	m := stateRE.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return "", "", fmt.Errorf("--state %q: want DIR/testbed-ID.json, ID of lowercase letters and digits", path)
	}
	return filepath.Dir(path), m[1], nil
}

// configPath is the switch config written next to a state file.
func configPath(state string) string { return strings.TrimSuffix(state, ".json") + ".yaml" }

func testbedUpSetup(fs *flag.FlagSet) action {
	n := fs.Int("hosts", 0, "number of hosts (required)")
	state := fs.String("state", "", "state `FILE` DIR/testbed-ID.json (default: "+testbed.DefaultStateDir+"/testbed-<random ID>.json)")
	mtu := fs.Int("mtu", testbed.DefaultMTU, "MTU of every veth end")
	subnet := fs.String("subnet", testbed.DefaultSubnet, "the hosts' IPv4 `PREFIX`, inside 198.18.0.0/15")
	ipv6 := fs.Bool("ipv6", false, "also give hosts addresses in 2001:2::/48")
	noECN := fs.Bool("no-ecn", false, "leave net.ipv4.tcp_ecn at the kernel default instead of 1")
	cc := fs.String("cc", testbed.DefaultCongestionControl, "the hosts' default TCP congestion control: "+strings.Join(testbed.CongestionControls(), ", ")+
		" (dctcp: the kernel's, or else ecnswitch's BPF DCTCP, held until testbed down); bbr ignores ECN marks")
	rtoMin := durationFlag(fs, "rto-min", 0, "the hosts' minimum TCP retransmission timeout, net.ipv4.tcp_rto_min_us, 1us..35m47s\n"+
		"(e.g. 10ms as 001 §5.1, 5ms as 002 §V-A; 0 keeps the kernel's 200ms)")
	ect1Ports := fs.String("ect1-ports", "", "TCP `PORTS` (comma-separated; 0 for all) whose packets every host sends with ECT(1) in place of ECT(0),\n"+
		"rewritten by a tc egress BPF program until testbed down: with --cc dctcp, L4S senders for a dualq port")
	noPlace := fs.Bool("no-place", false, "leave every CPU shared; by default the switch's worker gets the highest CPU this\n"+
		"process may use (cpus: in the config) and the hosts' receive processing (RPS) the rest")
	level := logLevelFlag(fs, "info", "")
	return func(e *env, _ []string) int {
		return testbedUp(e, testbedUpFlags{n: *n, state: *state, mtu: *mtu, subnet: *subnet, ipv6: *ipv6,
			noECN: *noECN, cc: *cc, rtoMin: *rtoMin, ect1: *ect1Ports, place: !*noPlace, level: *level})
	}
}

// parsePorts parses a comma-separated list of ports; "" is none.
func parsePorts(s string) ([]uint16, error) {
	if s == "" {
		return nil, nil
	}
	var ps []uint16
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: want 0..65535", f)
		}
		ps = append(ps, uint16(p))
	}
	return ps, nil
}

// formatPorts formats ports as parsePorts takes them, 0 as "all".
func formatPorts(ps []uint16) string {
	var s []string
	for _, p := range ps {
		if p == 0 {
			s = append(s, "all")
		} else {
			s = append(s, strconv.Itoa(int(p)))
		}
	}
	return strings.Join(s, ",")
}

// testbedUpFlags are the flags of testbed up.
type testbedUpFlags struct {
	n, mtu                         int
	state, subnet, cc, level, ect1 string
	ipv6, noECN, place             bool
	rtoMin                         time.Duration
}

func testbedUp(e *env, f testbedUpFlags) int {
	if f.n < 1 {
		return e.usageError("testbed up", "-n N (at least 1 host) is required")
	}
	log, err := newLogger(f.level, e.stderr)
	if err != nil {
		return e.usageError("testbed up", "%v", err)
	}
	pfx, err := netip.ParsePrefix(f.subnet)
	if err != nil {
		return e.usageError("testbed up", "--subnet %q: %v", f.subnet, err)
	}
	opts := testbed.Options{Hosts: f.n, MTU: f.mtu, Subnet: pfx, IPv6: f.ipv6, DisableECN: f.noECN, CongestionControl: f.cc, RTOMin: f.rtoMin, Logger: log}
	if opts.ECT1Ports, err = parsePorts(f.ect1); err != nil {
		return e.usageError("testbed up", "--ect1-ports %q: %v", f.ect1, err)
	}
	if f.state != "" {
		if opts.StateDir, opts.ID, err = splitState(f.state); err != nil {
			return e.usageError("testbed up", "%v", err)
		}
	}
	if err := node.CheckPrivileges(); err != nil {
		return e.fail("testbed up", fmt.Errorf("creating namespaces: %w", err))
	}
	var pl node.Placement
	if f.place {
		if pl, err = node.Place(node.DefaultWorkers); err != nil {
			return e.fail("testbed up", err)
		}
		if len(pl.Workers) > 0 {
			opts.HostCPUs = pl.Others
		}
	}
	tb, err := testbed.Up(opts)
	if err != nil {
		return e.fail("testbed up", err)
	}
	hosts := tb.Hosts()
	cfgPath := configPath(tb.StatePath())
	if err := os.WriteFile(cfgPath, testbedConfig(tb.ID(), tb.StatePath(), hosts, pl.Workers), 0o644); err != nil {
		return e.fail("testbed up", errors.Join(fmt.Errorf("write %s: %w", cfgPath, err), tb.Down()))
	}
	fmt.Fprintf(e.stdout, "testbed %s: %d hosts in %s\n", tb.ID(), len(hosts), tb.Subnet())
	for _, h := range hosts {
		v6 := ""
		if h.IPv6.IsValid() {
			v6 = " " + h.IPv6.String()
		}
		fmt.Fprintf(e.stdout, "  %-4s %-15s%s  netns %s  mac %s  switch port %s\n", h.Name, h.IPv4, v6, h.Netns, h.MAC, h.SwitchIf)
	}
	ecn := "requested"
	if !tb.ECN() {
		ecn = "not requested"
	}
	fmt.Fprintf(e.stdout, "tcp     congestion control %s in every host, ECN %s\n", tb.CongestionControl(), ecn)
	if tb.HoldsDCTCP() {
		fmt.Fprintf(e.stdout, "        (this kernel has no dctcp: ecnswitch's BPF DCTCP, held by this testbed until testbed down; ecnswitch dctcp status)\n")
	}
	if tb.AllowedCongestionControl() {
		fmt.Fprintf(e.stdout, "        (added %s to net.ipv4.tcp_allowed_congestion_control, so that a host may default to it)\n", tb.CongestionControl())
	}
	if r := tb.RTOMin(); r > 0 {
		fmt.Fprintf(e.stdout, "        RTO_min %v in every host (net.ipv4.tcp_rto_min_us)\n", r)
	}
	if ps := tb.ECT1Ports(); len(ps) > 0 {
		fmt.Fprintf(e.stdout, "        ECT(1) in place of ECT(0) on TCP ports %s (a tc egress program on every host)\n", formatPorts(ps))
	}
	if w := tb.ECNWarning(); w != "" {
		fmt.Fprintln(e.stderr, "ecnswitch testbed up: warning:", w)
	}
	hostRun := ""
	switch {
	case len(pl.Workers) > 0:
		others := node.FormatCPUs(pl.Others)
		fmt.Fprintf(e.stdout, "cpus    the switch's worker on CPU %s (cpus: in the config); the hosts' receive processing on CPU %s\n",
			node.FormatCPUs(pl.Workers), others)
		fmt.Fprintf(e.stdout, "        run the hosts' programs on CPU %s too, so that they never take the worker's CPU\n", others)
		hostRun = "taskset -c " + others + " "
	case f.place:
		fmt.Fprintf(e.stdout, "cpus    %s\n", pl)
	}
	fmt.Fprintf(e.stdout, "state   %s\nconfig  %s\n\n", tb.StatePath(), cfgPath)
	fmt.Fprintf(e.stdout, "run the switch:   ecnswitch run -c %s\n", cfgPath)
	if len(hosts) >= 2 {
		fmt.Fprintf(e.stdout, "try it:           ip netns exec %s %sping %s\n", hosts[0].Netns, hostRun, hosts[1].IPv4)
	}
	fmt.Fprintf(e.stdout, "remove it:        ecnswitch testbed down --state %s\n", tb.StatePath())
	return exitOK
}

func testbedDownSetup(fs *flag.FlagSet) action {
	state := fs.String("state", "", "state `FILE` (default: the only testbed-*.json in "+testbed.DefaultStateDir+")")
	level := logLevelFlag(fs, "info", "")
	return func(e *env, _ []string) int { return testbedDown(e, *state, *level) }
}

func testbedDown(e *env, state, level string) int {
	log, err := newLogger(level, e.stderr)
	if err != nil {
		return e.usageError("testbed down", "%v", err)
	}
	path := state
	if path == "" {
		found, _ := filepath.Glob(filepath.Join(testbed.DefaultStateDir, "testbed-*.json"))
		switch len(found) {
		case 0:
			return e.fail("testbed down", fmt.Errorf("no testbed-*.json in %s; give --state", testbed.DefaultStateDir))
		case 1:
			path = found[0]
		default:
			return e.fail("testbed down", fmt.Errorf("%d testbeds in %s; pick one with --state:\n  %s", len(found), testbed.DefaultStateDir, strings.Join(found, "\n  ")))
		}
	}
	tb, err := testbed.Load(path, log)
	if err != nil {
		return e.fail("testbed down", err)
	}
	if err := tb.Down(); err != nil {
		return e.fail("testbed down", err)
	}
	if err := os.Remove(configPath(path)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return e.fail("testbed down", err)
	}
	fmt.Fprintf(e.stdout, "testbed %s removed\n", tb.ID())
	return exitOK
}

// testbedConfig is the switch config for a testbed's hosts: one port per
// host on its veth's switch end, native XDP (veth supports it; zero-copy it
// does not, so auto falls back to copy mode), and the MQ-ECN prototype's
// emulated 1 Gbit/s link (001 §4.2) with DCTCP marking. cpus, when set, pins
// the switch (node.Place's Workers).
func testbedConfig(id, state string, hosts []testbed.Host, cpus []int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# ecnswitch config for testbed %s (written by 'ecnswitch testbed up').\n", id)
	fmt.Fprintf(&b, "# Remove the testbed with: ecnswitch testbed down --state %s\n", state)
	b.WriteString("# Every key is documented in examples/ecnswitch.yaml.\n#\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "#   %-4s %-15s mac %s  netns %s\n", h.Name, h.IPv4, h.MAC, h.Netns)
	}
	b.WriteString("\nlog_level: info\n")
	if len(cpus) > 0 {
		list := make([]string, len(cpus))
		for i, c := range cpus {
			list[i] = strconv.Itoa(c)
		}
		fmt.Fprintf(&b, "cpus: [%s]   # the worker's; the hosts' receive processing runs on the other CPUs\n", strings.Join(list, ", "))
	}
	b.WriteString(`telemetry:
  listen: ` + telemetry.DefaultListen + `
afxdp:
  mode: native      # veth has native XDP; AF_XDP on veth is always copy mode
port_defaults:
  queues: 8
  scheduler: {kind: dwrr}
  rate: 995Mbit     # 99.5% of 1 Gbit/s, as the MQ-ECN prototype (001 §4.2)
  markers:
    enqueue:
      - scheme: dctcp
        k: 30KB     # about 20 packets: DCTCP's K at 1 Gbit/s
ports:
`)
	for _, h := range hosts {
		fmt.Fprintf(&b, "  - {name: %s, interface: %s}\n", h.Name, h.SwitchIf)
	}
	return []byte(b.String())
}
