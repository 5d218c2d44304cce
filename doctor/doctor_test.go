package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// server is a host with everything: a 6.18 kernel, BTF, a PHC, DCTCP, CPU
// 3 isolated with every IRQ kept off it, and a NIC (ens1f0, ice) with
// native XDP, zero-copy, redirects, both stamps and threaded NAPI.
func server() Host {
	files := fstest.MapFS{
		"sys/kernel/btf/vmlinux": {Data: []byte("btf")},
		"dev/ptp0":               {Mode: fs.ModeDevice},
		"proc/sys/net/ipv4/tcp_available_congestion_control": {Data: []byte("reno cubic dctcp\n")},
		"sys/devices/system/cpu/isolated":                    {Data: []byte("3\n")},
		"sys/devices/system/cpu/nohz_full":                   {Data: []byte("(null)\n")},
		"proc/irq/24/smp_affinity_list":                      {Data: []byte("0-2\n")},
		"proc/irq/24/ens1f0-TxRx-0":                          {Mode: fs.ModeDir},
		"proc/irq/25/smp_affinity_list":                      {Data: []byte("0\n")},
		"sys/class/net/ens1f0/threaded":                      {Data: []byte("1\n")},
		"sys/class/net/ens1f0/device/driver":                 {Data: []byte("../../../../bus/pci/drivers/ice"), Mode: fs.ModeSymlink},
	}
	return Host{
		FS: files, Kernel: "6.18.4", Privileged: true,
		Interfaces: func() ([]string, error) { return []string{"ens1f0"}, nil },
		Sockets:    func() error { return nil }, XDP: func() error { return nil },
		LiveFrames: func() error { return nil }, TxMetadata: func() error { return nil },
		StructOps: func() error { return nil }, Kfunc: func(string) error { return nil },
		Device: func(string) (afxdp.DeviceFeatures, error) {
			return afxdp.DeviceFeatures{XDP: []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy"},
				RxMetadata: []string{"timestamp", "hash"}, XSK: []string{"tx-timestamp"}}, nil
		},
		PHC: func(string) int { return 0 },
	}
}

// check returns the check called name, failing t if there is none.
func check(t *testing.T, cs []Check, name string) Check {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q among %v", name, cs)
	return Check{}
}

func TestServerIsAllOK(t *testing.T) {
	cs := Run(server(), nil)
	if len(cs) != 12+7 {
		t.Errorf("%d checks, want 12 of the host and 7 of ens1f0", len(cs))
	}
	for _, c := range cs {
		if c.Status != OK || c.Fix != "" {
			t.Errorf("%s: %v %s; fix %q", c.Name, c.Status, c.Detail, c.Fix)
		}
	}
	if !CanRun(cs) {
		t.Error("CanRun = false")
	}
	if c := check(t, cs, "ens1f0 native-xdp"); !strings.Contains(c.Detail, "(ice)") {
		t.Errorf("native-xdp does not name the driver: %q", c.Detail)
	}
	if c := check(t, cs, "isolated-cpus"); c.Detail != "CPU 3 isolated, and no IRQ's affinity includes it" {
		t.Errorf("isolated-cpus: %q", c.Detail)
	}
	if c := check(t, cs, "phc"); c.Detail != "/dev/ptp0" {
		t.Errorf("phc: %q", c.Detail)
	}
}

// Without AF_XDP or XDP the switch cannot run at all; without the rest it
// runs, with less.
func TestRequired(t *testing.T) {
	nope := func() error { return fmt.Errorf("probe: %w", afxdp.ErrNotSupported) }
	for _, c := range []struct {
		name   string
		break_ func(*Host)
		canRun bool
	}{
		{"af_xdp", func(h *Host) { h.Sockets = nope }, false},
		{"xdp", func(h *Host) { h.XDP = nope }, false},
		{"live-frames", func(h *Host) { h.LiveFrames = nope }, true},
		{"tx-metadata", func(h *Host) { h.TxMetadata = nope }, true},
		{"struct_ops", func(h *Host) { h.StructOps = nope }, true},
		{"rx-metadata", func(h *Host) { h.Kfunc = func(string) error { return nope() } }, true},
	} {
		h := server()
		c.break_(&h)
		cs := Run(h, []string{})
		got := check(t, cs, c.name)
		if got.Status != Missing || got.Fix == "" || !strings.Contains(got.Detail, "not supported") && c.name != "rx-metadata" {
			t.Errorf("%s: %v %q, fix %q; want MISSING with the error and a fix", c.name, got.Status, got.Detail, got.Fix)
		}
		if CanRun(cs) != c.canRun {
			t.Errorf("%s missing: CanRun = %v, want %v", c.name, CanRun(cs), c.canRun)
		}
	}
}

// Without privileges a refused probe says nothing of the kernel: WARN,
// and the switch is not declared unable to run.
func TestUnprivileged(t *testing.T) {
	h := server()
	h.Privileged = false
	eperm := func() error { return fmt.Errorf("afxdp: socket(AF_XDP): %w", unix.EPERM) }
	h.Sockets, h.XDP, h.LiveFrames = eperm, eperm, eperm
	cs := Run(h, []string{})
	for _, name := range []string{"privileges", "af_xdp", "xdp", "live-frames"} {
		if c := check(t, cs, name); c.Status != Warn || !strings.Contains(c.Fix, "root") {
			t.Errorf("%s: %v %q, fix %q; want WARN, run as root", name, c.Status, c.Detail, c.Fix)
		}
	}
	if !CanRun(cs) {
		t.Error("CanRun = false for probes that could not tell")
	}
	// A refusal for another reason is the kernel's answer.
	h.Sockets = func() error { return fmt.Errorf("afxdp: socket(AF_XDP): %w", unix.EAFNOSUPPORT) }
	if c := check(t, Run(h, []string{}), "af_xdp"); c.Status != Missing {
		t.Errorf("EAFNOSUPPORT unprivileged: %v, want MISSING", c.Status)
	}
}

func TestDCTCP(t *testing.T) {
	for _, c := range []struct {
		name   string
		avail  string
		module bool
		want   Status
		fix    string
	}{
		{"loaded", "reno cubic dctcp", false, OK, ""},
		{"module", "reno cubic", true, Warn, "modprobe tcp_dctcp"},
		{"absent", "reno bbr cubic", false, Missing, "CONFIG_TCP_CONG_DCTCP"},
	} {
		h := server()
		files := h.FS.(fstest.MapFS)
		files["proc/sys/net/ipv4/tcp_available_congestion_control"] = &fstest.MapFile{Data: []byte(c.avail + "\n")}
		if c.module {
			files["lib/modules/6.18.4/kernel/net/ipv4/tcp_dctcp.ko.xz"] = &fstest.MapFile{}
		}
		got := check(t, Run(h, []string{}), "dctcp")
		if got.Status != c.want || !strings.Contains(got.Fix, c.fix) {
			t.Errorf("%s: %v %q, fix %q; want %v with %q", c.name, got.Status, got.Detail, got.Fix, c.want, c.fix)
		}
	}
}

func TestIsolation(t *testing.T) {
	h := server()
	files := h.FS.(fstest.MapFS)
	files["proc/irq/24/smp_affinity_list"] = &fstest.MapFile{Data: []byte("0-3\n")}
	c := check(t, Run(h, []string{}), "isolated-cpus")
	if c.Status != Warn || !strings.Contains(c.Detail, "CPU 3 isolated, but 1 IRQs may still run there: 24 (ens1f0-TxRx-0)") || !strings.Contains(c.Fix, "smp_affinity_list") {
		t.Errorf("an IRQ on the isolated CPU: %v %q, fix %q", c.Status, c.Detail, c.Fix)
	}
	files["sys/devices/system/cpu/isolated"] = &fstest.MapFile{Data: []byte("\n")}
	c = check(t, Run(h, []string{}), "isolated-cpus")
	if c.Status != Warn || !strings.Contains(c.Detail, "no CPU is isolated") || !strings.Contains(c.Fix, "isolcpus=") {
		t.Errorf("nothing isolated: %v %q, fix %q", c.Status, c.Detail, c.Fix)
	}
	files["sys/devices/system/cpu/nohz_full"] = &fstest.MapFile{Data: []byte("2-3\n")}
	files["proc/irq/24/smp_affinity_list"] = &fstest.MapFile{Data: []byte("0-1\n")}
	if c = check(t, Run(h, []string{}), "isolated-cpus"); c.Status != OK || !strings.Contains(c.Detail, "CPU 2-3") {
		t.Errorf("nohz_full 2-3: %v %q", c.Status, c.Detail)
	}
}

// A plain virtual NIC: generic XDP only, no zero-copy, no stamps, no PHC,
// NAPI in softirq; each says what to do.
func TestPlainDevice(t *testing.T) {
	h := server()
	h.Device = func(string) (afxdp.DeviceFeatures, error) { return afxdp.DeviceFeatures{}, nil }
	h.PHC = func(string) int { return -1 }
	h.FS.(fstest.MapFS)["sys/class/net/ens1f0/threaded"] = &fstest.MapFile{Data: []byte("0\n")}
	want := map[string]Status{"native-xdp": Warn, "zero-copy": Warn, "redirect": Warn, "rx-timestamp": Warn, "tx-timestamp": Warn, "phc": Missing, "napi": Warn}
	for what, st := range want {
		c := check(t, Run(h, []string{"ens1f0"}), "ens1f0 "+what)
		if c.Status != st || c.Fix == "" {
			t.Errorf("%s: %v %q, fix %q; want %v and a fix", c.Name, c.Status, c.Detail, c.Fix, st)
		}
	}
	h.Device = func(string) (afxdp.DeviceFeatures, error) {
		return afxdp.DeviceFeatures{}, errors.New("netdev: no such family")
	}
	if cs := Run(h, []string{"ens1f0"}); check(t, cs, "ens1f0 xdp").Status != Warn || !CanRun(cs) {
		t.Errorf("an interface whose features cannot be read: %+v", check(t, cs, "ens1f0 xdp"))
	}
}

func TestKernelVersion(t *testing.T) {
	for rel, want := range map[string]Status{"6.18.44-fc-v857": OK, "6.8.0-45-generic": OK, "6.1.0-26-amd64": Warn, "5.15.0": Warn, "7.0": OK, "weird": Warn} {
		h := server()
		h.Kernel = rel
		if c := check(t, Run(h, []string{}), "kernel"); c.Status != want {
			t.Errorf("kernel %s: %v, want %v", rel, c.Status, want)
		}
	}
}

func TestCPUList(t *testing.T) {
	for in, want := range map[string]string{"0-3,6": "0-3,6", "1": "1", "": "", "0,2,3,4,7-8": "0,2-4,7-8"} {
		cpus, err := cpuList(in)
		if err != nil || formatCPUs(cpus) != want {
			t.Errorf("cpuList(%q) = %v, %v; formatted %q, want %q", in, cpus, err, formatCPUs(cpus), want)
		}
	}
	for _, bad := range []string{"x", "3-1", "1-y"} {
		if _, err := cpuList(bad); err == nil {
			t.Errorf("cpuList(%q): no error", bad)
		}
	}
}
