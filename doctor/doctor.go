// Package doctor checks what a host can do for ecnswitch, and says how to
// fix what it cannot: AF_XDP and XDP, live frames, the RX and TX metadata
// that hardware stamps need, PTP hardware clocks, BTF and struct_ops for a
// BPF DCTCP, DCTCP itself, CPUs isolated from interrupts, and per
// interface native XDP, zero-copy, redirects, stamps and threaded NAPI.
//
// The checks only read: files of /proc and /sys, the netdev netlink
// family's answers about a device, and the kernel's answers to probes
// that load a program or open a socket and close it again
// (ports/afxdp's Probe functions). None attaches a program or changes an
// interface. Host is what they read, so that tests can give a fake one.
package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// Status is a check's verdict.
type Status int

// Verdicts.
const (
	OK      Status = iota // the host has it
	Warn                  // the switch runs without it, slower or with less
	Missing               // the host lacks it
)

func (s Status) String() string {
	switch s {
	case OK:
		return "OK"
	case Warn:
		return "WARN"
	}
	return "MISSING"
}

// MarshalText writes the status as String does.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *Status) UnmarshalText(b []byte) error {
	for _, v := range []Status{OK, Warn, Missing} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("doctor: status %q: want OK, WARN or MISSING", b)
}

// Check is one finding.
type Check struct {
	Name   string `json:"name"`          // "af_xdp", or "eth0 zero-copy" for an interface's
	Status Status `json:"status"`        // OK, WARN or MISSING
	Detail string `json:"detail"`        // what was found
	Fix    string `json:"fix,omitempty"` // how to get it, for WARN and MISSING
	// Required: without it the switch cannot run at all.
	Required bool `json:"required,omitempty"`
}

// Host is what the checks read. System returns this machine's.
type Host struct {
	// FS is the root file system: the checks read proc/..., sys/... and
	// dev/... in it.
	FS fs.FS
	// Kernel is the running kernel's release (uname -r).
	Kernel string
	// Privileged reports whether the process may load BPF programs and
	// open AF_XDP sockets (root, or CAP_BPF, CAP_NET_ADMIN and
	// CAP_NET_RAW). Without, the probes that need them cannot tell.
	Privileged bool
	// Interfaces lists the non-loopback interfaces of this network
	// namespace, the default of Run.
	Interfaces func() ([]string, error)

	// The kernel's probes: nil when the kernel does it; an error that
	// wraps afxdp.ErrNotSupported when it cannot.
	Sockets    func() error // AF_XDP sockets
	XDP        func() error // loading an XDP program
	LiveFrames func() error // BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES
	TxMetadata func() error // XSK TX metadata
	StructOps  func() error // BPF struct_ops programs, and tcp_congestion_ops in the kernel's BTF
	Kfunc      func(name string) error

	// The device's: its features, its PHC index (-1: none).
	Device func(ifname string) (afxdp.DeviceFeatures, error)
	PHC    func(ifname string) int
}

// Run runs every check, those of the interfaces ifaces (default: every
// interface of Host.Interfaces), and returns them in order.
func Run(h Host, ifaces []string) []Check {
	var cs []Check
	add := func(c Check) { cs = append(cs, c) }
	add(h.kernel())
	add(h.privileges())
	add(h.probe("af_xdp", h.Sockets, "AF_XDP sockets", true,
		"a kernel built with CONFIG_XDP_SOCKETS=y (every distribution kernel since Linux 4.18 has it)"))
	add(h.probe("xdp", h.XDP, "XDP programs load", true,
		"a kernel built with CONFIG_BPF_SYSCALL=y and CONFIG_XDP_SOCKETS=y; as non-root, grant CAP_BPF and CAP_NET_ADMIN"))
	add(h.probe("live-frames", h.LiveFrames, "XDP live frames (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES)", false,
		"Linux 5.18 or later; without, the switch transmits through its sockets and bench gen uses AF_XDP"))
	add(h.btf())
	add(h.rxMetadata())
	add(h.probe("tx-metadata", h.TxMetadata, "XSK TX metadata (TX completion stamps, afxdp.tx_stamps)", false,
		"Linux 6.8 or later (6.11 for XDP_UMEM_TX_METADATA_LEN); without, no TX completion stamps"))
	add(h.phc())
	add(h.probe("struct_ops", h.StructOps, "BPF struct_ops and tcp_congestion_ops in the kernel's BTF (a congestion control in BPF, such as a BPF DCTCP)", false,
		"Linux 5.6 or later built with CONFIG_BPF_JIT=y, CONFIG_DEBUG_INFO_BTF=y and CONFIG_BPF_SYSCALL=y"))
	add(h.dctcp())
	add(h.isolation())
	if ifaces == nil && h.Interfaces != nil {
		var err error
		if ifaces, err = h.Interfaces(); err != nil {
			add(Check{Name: "interfaces", Status: Warn, Detail: "cannot list them: " + err.Error(), Fix: "name them with --iface"})
		}
	}
	for _, ifname := range ifaces {
		cs = append(cs, h.device(ifname)...)
	}
	return cs
}

// CanRun reports whether the checks leave the switch able to run at all:
// no required check is missing.
func CanRun(cs []Check) bool {
	return !slices.ContainsFunc(cs, func(c Check) bool { return c.Required && c.Status == Missing })
}

// kernelVersion returns the major and minor version of a release such as
// 6.18.44-fc-v857.
func kernelVersion(release string) (major, minor int, ok bool) {
	f := strings.FieldsFunc(release, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(f[1])
	return major, minor, err1 == nil && err2 == nil
}

func (h Host) kernel() Check {
	c := Check{Name: "kernel", Status: OK, Detail: "Linux " + h.Kernel}
	major, minor, ok := kernelVersion(h.Kernel)
	switch {
	case !ok:
		c.Status, c.Detail, c.Fix = Warn, fmt.Sprintf("release %q not understood", h.Kernel), "Linux 6.8 or later"
	case major < 6 || major == 6 && minor < 8:
		c.Status = Warn
		c.Fix = "Linux 6.8 or later: the netdev family's device features need 6.3, XSK TX metadata 6.8, NAPI threads' listing 6.9"
	}
	return c
}

func (h Host) privileges() Check {
	if h.Privileged {
		return Check{Name: "privileges", Status: OK, Detail: "root: every probe can run"}
	}
	return Check{Name: "privileges", Status: Warn, Detail: "not root: the probes that load a BPF program or open an AF_XDP socket cannot tell",
		Fix: "run ecnswitch doctor as root (sudo)"}
}

// probe turns a probe's answer into a check. Without privileges, a
// refusal says nothing of the kernel.
func (h Host) probe(name string, p func() error, what string, required bool, fix string) Check {
	c := Check{Name: name, Status: OK, Detail: what, Required: required}
	if p == nil {
		c.Status, c.Detail, c.Fix, c.Required = Warn, what+": not probed", "run ecnswitch doctor as root on Linux", false
		return c
	}
	err := p()
	switch {
	case err == nil:
	case !h.Privileged && (errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)):
		c.Status, c.Detail, c.Fix, c.Required = Warn, what+": cannot tell without privileges", "run ecnswitch doctor as root", false
	default:
		c.Status, c.Detail, c.Fix = Missing, fmt.Sprintf("no %s: %v", what, err), fix
	}
	return c
}

func (h Host) btf() Check {
	if _, err := fs.Stat(h.FS, "sys/kernel/btf/vmlinux"); err != nil {
		return Check{Name: "btf", Status: Missing, Detail: "no /sys/kernel/btf/vmlinux: the kernel has no BTF",
			Fix: "a kernel built with CONFIG_DEBUG_INFO_BTF=y; the hardware RX stamp program and a BPF DCTCP need it"}
	}
	return Check{Name: "btf", Status: OK, Detail: "/sys/kernel/btf/vmlinux"}
}

func (h Host) rxMetadata() Check {
	c := Check{Name: "rx-metadata", Status: OK, Detail: "kfuncs " + afxdp.RxTimestampKfunc + " and " + afxdp.RxHashKfunc}
	if h.Kfunc == nil {
		c.Status, c.Detail = Warn, "RX metadata kfuncs: not probed"
		return c
	}
	var missing []string
	for _, k := range []string{afxdp.RxTimestampKfunc, afxdp.RxHashKfunc} {
		if h.Kfunc(k) != nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		c.Status, c.Detail = Missing, "not in the kernel's BTF: "+strings.Join(missing, ", ")
		c.Fix = "Linux 6.3 or later with BTF (CONFIG_DEBUG_INFO_BTF=y); without, the switch stamps frames as it receives them"
	}
	return c
}

func (h Host) phc() Check {
	clocks, _ := fs.Glob(h.FS, "dev/ptp[0-9]*")
	if len(clocks) == 0 {
		return Check{Name: "phc", Status: Missing, Detail: "no PTP hardware clock (no /dev/ptp*): no hardware stamps, and DX measures with software stamps",
			Fix: "a NIC with a PHC (ethtool -T IFACE says 'PTP Hardware Clock: N'); on a KVM guest, modprobe ptp_kvm gives one that reads the host's clock"}
	}
	for i, c := range clocks {
		clocks[i] = "/" + c
	}
	return Check{Name: "phc", Status: OK, Detail: strings.Join(clocks, ", ")}
}

// dctcp checks that the kernel has DCTCP for the testbed's hosts: loaded,
// or a module away.
func (h Host) dctcp() Check {
	b, err := fs.ReadFile(h.FS, "proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return Check{Name: "dctcp", Status: Warn, Detail: "cannot read net.ipv4.tcp_available_congestion_control: " + err.Error()}
	}
	avail := strings.Fields(string(b))
	if slices.Contains(avail, "dctcp") {
		return Check{Name: "dctcp", Status: OK, Detail: "dctcp in net.ipv4.tcp_available_congestion_control"}
	}
	if mods, _ := fs.Glob(h.FS, path.Join("lib/modules", h.Kernel, "kernel/net/ipv4/tcp_dctcp.ko*")); len(mods) > 0 {
		return Check{Name: "dctcp", Status: Warn, Detail: "dctcp is a module not yet loaded (available: " + strings.Join(avail, " ") + ")",
			Fix: "modprobe tcp_dctcp (the testbed also loads it when a host asks for dctcp)"}
	}
	return Check{Name: "dctcp", Status: Missing, Detail: "no DCTCP in this kernel (available: " + strings.Join(avail, " ") + "); the experiments run cubic with ECN in its place",
		Fix: "a kernel with CONFIG_TCP_CONG_DCTCP, or a DCTCP loaded as BPF struct_ops (needs btf and struct_ops above)"}
}

// maxCPUs bounds the CPU numbers cpuList takes: the kernel's NR_CPUS is at
// most 8192.
const maxCPUs = 8192

// cpuList parses a kernel CPU list such as 0-3,6.
func cpuList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad range %q", s, part)
			}
		}
		if a < 0 || b >= maxCPUs {
			return nil, fmt.Errorf("CPU list %q: CPU numbers run from 0 to %d", s, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// isolation checks for CPUs kept from the scheduler (isolcpus) or the tick
// (nohz_full), and then that no interrupt may land on them.
func (h Host) isolation() Check {
	var isolated []int
	for _, f := range []string{"sys/devices/system/cpu/isolated", "sys/devices/system/cpu/nohz_full"} {
		b, err := fs.ReadFile(h.FS, f)
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); s != "(null)" {
			cpus, _ := cpuList(s)
			for _, c := range cpus {
				if !slices.Contains(isolated, c) {
					isolated = append(isolated, c)
				}
			}
		}
	}
	slices.Sort(isolated)
	if len(isolated) == 0 {
		return Check{Name: "isolated-cpus", Status: Warn,
			Detail: "no CPU is isolated (isolcpus, nohz_full): workers share their CPUs with interrupts and other tasks",
			Fix: "for dedicated cores, boot with isolcpus=managed_irq,domain,N nohz_full=N irqaffinity=OTHERS " +
				"and put cpus: [N] in the config (docs/deploy-server.md)"}
	}
	var hit []string
	dirs, _ := fs.ReadDir(h.FS, "proc/irq")
	for _, d := range dirs {
		irq := d.Name()
		if _, err := strconv.Atoi(irq); err != nil || !d.IsDir() {
			continue
		}
		b, err := fs.ReadFile(h.FS, "proc/irq/"+irq+"/smp_affinity_list")
		if err != nil {
			continue
		}
		cpus, err := cpuList(string(b))
		if err != nil || !slices.ContainsFunc(cpus, func(c int) bool { return slices.Contains(isolated, c) }) {
			continue
		}
		hit = append(hit, irq+irqName(h.FS, irq))
	}
	list := formatCPUs(isolated)
	if len(hit) > 0 {
		return Check{Name: "isolated-cpus", Status: Warn,
			Detail: fmt.Sprintf("CPU %s isolated, but %d IRQs may still run there: %s", list, len(hit), strings.Join(hit, ", ")),
			Fix:    "move them: echo OTHERS > /proc/irq/N/smp_affinity_list for each (or boot with irqaffinity=OTHERS), and stop irqbalance from undoing it"}
	}
	return Check{Name: "isolated-cpus", Status: OK, Detail: "CPU " + list + " isolated, and no IRQ's affinity includes it"}
}

// irqName returns " (name)" of an IRQ from its action's directory in
// /proc/irq/N, or "".
func irqName(fsys fs.FS, irq string) string {
	es, _ := fs.ReadDir(fsys, "proc/irq/"+irq)
	for _, e := range es {
		if e.IsDir() {
			return " (" + e.Name() + ")"
		}
	}
	return ""
}

// formatCPUs writes CPUs as a kernel CPU list: 0-3,6.
func formatCPUs(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// zeroCopyDrivers are drivers with AF_XDP zero-copy, for the fix of an
// interface without it (veth never has it: notes/afxdp.md).
const zeroCopyDrivers = "ice, i40e, ixgbe, igc, mlx5_core, stmmac, among others"

// device checks one interface.
func (h Host) device(ifname string) []Check {
	name := func(what string) string { return ifname + " " + what }
	driver := ""
	if l, err := fs.ReadLink(h.FS, "sys/class/net/"+ifname+"/device/driver"); err == nil {
		driver = path.Base(l)
	}
	drv := ""
	if driver != "" {
		drv = " (" + driver + ")"
	}
	if h.Device == nil {
		return []Check{{Name: name("xdp"), Status: Warn, Detail: "device features not probed"}}
	}
	f, err := h.Device(ifname)
	if err != nil {
		return []Check{{Name: name("xdp"), Status: Warn, Detail: "cannot read its features: " + err.Error(),
			Fix: "Linux 6.3 or later answers the netdev netlink family's dev-get"}}
	}
	has := func(set []string, bit string) bool { return slices.Contains(set, bit) }
	var cs []Check
	c := Check{Name: name("native-xdp"), Status: OK, Detail: "the driver" + drv + " runs XDP itself"}
	if !has(f.XDP, "basic") {
		c.Status, c.Detail = Warn, "the driver"+drv+" has no native XDP: only generic (skb) mode, several times slower"
		c.Fix = "a NIC whose driver has native XDP, or afxdp.mode: generic for this port"
	}
	cs = append(cs, c)
	c = Check{Name: name("zero-copy"), Status: OK, Detail: "AF_XDP zero-copy"}
	if !has(f.XDP, "xsk-zerocopy") {
		c.Status, c.Detail = Warn, "no AF_XDP zero-copy in the driver"+drv+": frames are copied between the NIC and the switch"
		c.Fix = "a NIC whose driver has zero-copy: " + zeroCopyDrivers
	}
	cs = append(cs, c)
	c = Check{Name: name("redirect"), Status: OK, Detail: "takes redirected frames (ndo-xmit): live frames can leave through it"}
	if !has(f.XDP, "ndo-xmit") {
		c.Status, c.Detail = Warn, "takes no redirected frames now (no ndo-xmit): the switch transmits through its sockets"
		c.Fix = "a driver with ndo_xdp_xmit; a veth takes them while its peer has an XDP program or GRO on (ethtool -K PEER gro on)"
	}
	cs = append(cs, c)
	c = Check{Name: name("rx-timestamp"), Status: OK, Detail: "the driver gives XDP the receive stamp (xdp-rx-metadata timestamp)"}
	if !has(f.RxMetadata, "timestamp") {
		c.Status, c.Detail = Warn, "the driver"+drv+" gives XDP no receive stamp: the switch stamps frames as it receives them"
		c.Fix = "a driver with the XDP RX metadata timestamp (mlx5_core, mlx4_en, ice, igc, stmmac)"
	}
	cs = append(cs, c)
	c = Check{Name: name("tx-timestamp"), Status: OK, Detail: "the driver stamps AF_XDP transmits (xsk tx-timestamp)"}
	if !has(f.XSK, "tx-timestamp") {
		c.Status, c.Detail = Warn, "the driver"+drv+" does not stamp AF_XDP transmits in hardware (copy mode stamps in software)"
		c.Fix = "a driver with XSK TX metadata (mlx5_core, stmmac, igc, enetc)"
	}
	cs = append(cs, c)
	c = Check{Name: name("phc"), Status: OK}
	if i := h.PHC(ifname); i >= 0 {
		c.Detail = fmt.Sprintf("PTP hardware clock /dev/ptp%d", i)
	} else {
		c.Status, c.Detail = Missing, "no PTP hardware clock (ethtool -T "+ifname+")"
		c.Fix = "a NIC with a PHC; hardware stamps are read against it"
	}
	cs = append(cs, c)
	c = Check{Name: name("napi"), Status: OK, Detail: "threaded NAPI: its receive processing is a kernel thread you can pin"}
	if b, err := fs.ReadFile(h.FS, "sys/class/net/"+ifname+"/threaded"); err != nil || strings.TrimSpace(string(b)) == "0" {
		c.Status, c.Detail = Warn, "NAPI runs in softirq, on whichever CPU took the interrupt, the worker's too"
		c.Fix = "echo 1 > /sys/class/net/" + ifname + "/threaded, then pin its napi/" + ifname + "-* threads away from the workers (taskset -pc)"
	}
	cs = append(cs, c)
	return cs
}
