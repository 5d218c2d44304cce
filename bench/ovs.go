package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ovsSchema is where Debian's openvswitch-common puts the database schema.
const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// errSkip marks a device RunSwitch skips, with the reason, rather than
// failing the run.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

// ovsMissing says why OVS cannot run here, or "".
func ovsMissing() string {
	for _, b := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"} {
		if _, err := exec.LookPath(b); err != nil {
			return b + " not installed (apt-get install openvswitch-switch)"
		}
	}
	if _, err := os.Stat(ovsSchema); err != nil {
		return ovsSchema + " missing (apt-get install openvswitch-common)"
	}
	return ""
}

// startOVS runs a private Open vSwitch with the userspace (netdev)
// datapath, as ../shared/bench-peers/bench.sh does: its own ovsdb-server
// and ovs-vswitchd in a temporary directory, a bridge named br with the
// two interfaces as native-mode afxdp ports, its PMD thread on cpu, and
// one flow from ifaces[0] to ifaces[1]. A port OVS reports an error for
// is errSkip. stop ends both daemons and removes what they made.
func startOVS(br string, ifaces []string, cpu int) (stop func() error, err error) {
	dir, err := os.MkdirTemp("", "ecnswitch-ovs-*")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_DBDIR="+dir, "OVS_LOGDIR="+dir, "OVS_SYSCONFDIR="+dir)
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	// The netdev datapath makes a tap named ovs-netdev in this namespace
	// and leaves it behind; stop removes it only if it is the one this OVS
	// made (none existed before, and its index is the one found after).
	_, lookErr := netlink.LinkByName(ovsNetdev)
	netdevBefore := lookErr == nil
	netdevIndex := 0
	var daemons []*exec.Cmd
	stop = func() error {
		var errs []error
		_ = run("ovs-appctl", "-t", filepath.Join(dir, "ovs-vswitchd.ctl"), "--timeout=10", "exit", "--cleanup")
		for i := len(daemons) - 1; i >= 0; i-- {
			c := daemons[i]
			_ = c.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		}
		if l, err := netlink.LinkByName(br); err == nil { // the datapath's own interface
			errs = append(errs, netlink.LinkDel(l))
		}
		if l, err := netlink.LinkByName(ovsNetdev); err == nil && !netdevBefore && l.Attrs().Index == netdevIndex {
			errs = append(errs, netlink.LinkDel(l))
		}
		// OVS may leave its XDP program on the ports (seen with 3.1).
		for _, ifc := range ifaces {
			if l, err := netlink.LinkByName(ifc); err == nil && l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached {
				if err := netlink.LinkSetXdpFdWithFlags(l, -1, modeFlag(l.Attrs().Xdp.AttachMode)); err != nil {
					errs = append(errs, fmt.Errorf("detach OVS's XDP program from %s: %w", ifc, err))
				}
			}
		}
		errs = append(errs, os.RemoveAll(dir))
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, stop())
		}
	}()
	start := func(sock, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		daemons = append(daemons, cmd)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, sock)); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%s did not open %s in 10 s (log in %s)", name, sock, dir)
	}
	db := filepath.Join(dir, "db.sock")
	vsctl := func(args ...string) error {
		return run("ovs-vsctl", append([]string{"--db=unix:" + db, "--timeout=20"}, args...)...)
	}
	if err := run("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), ovsSchema); err != nil {
		return nil, err
	}
	if err := start("db.sock", "ovsdb-server", filepath.Join(dir, "conf.db"), "--remote=punix:"+db,
		"--pidfile="+filepath.Join(dir, "ovsdb-server.pid"), "--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--no-chdir"); err != nil {
		return nil, err
	}
	if err := vsctl("--no-wait", "init"); err != nil {
		return nil, err
	}
	if err := vsctl("--no-wait", "set", "Open_vSwitch", ".", fmt.Sprintf("other_config:pmd-cpu-mask=0x%x", 1<<cpu)); err != nil {
		return nil, err
	}
	if err := start("ovs-vswitchd.ctl", "ovs-vswitchd", "unix:"+db, "--pidfile="+filepath.Join(dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(dir, "ovs-vswitchd.log"), "--no-chdir"); err != nil {
		return nil, err
	}
	if err := vsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"); err != nil {
		return nil, err
	}
	if l, err := netlink.LinkByName(ovsNetdev); err == nil && !netdevBefore {
		netdevIndex = l.Attrs().Index
	}
	for _, ifc := range ifaces {
		if err := vsctl("add-port", br, ifc, "--", "set", "interface", ifc, "type=afxdp", "options:xdp-mode=native"); err != nil {
			return nil, err
		}
	}
	for _, ifc := range ifaces {
		cmd := exec.Command("ovs-vsctl", "--db=unix:"+db, "--timeout=20", "get", "interface", ifc, "error")
		cmd.Env = env
		if out, _ := cmd.Output(); strings.ContainsAny(strings.ToLower(string(out)), "abcdefghijklmnopqrstuvwxyz") {
			return nil, errSkip{fmt.Sprintf("OVS afxdp port %s: %s", ifc, strings.TrimSpace(string(out)))}
		}
	}
	mgmt := "unix:" + filepath.Join(dir, br+".mgmt")
	if err := run("ovs-ofctl", "--timeout=20", "del-flows", mgmt); err != nil {
		return nil, err
	}
	if err := run("ovs-ofctl", "--timeout=20", "add-flow", mgmt, fmt.Sprintf("in_port=%s,actions=output:%s", ifaces[0], ifaces[1])); err != nil {
		return nil, err
	}
	return stop, nil
}

// ovsNetdev is the tap Open vSwitch's userspace datapath makes.
const ovsNetdev = "ovs-netdev"

// modeFlag is the netlink flag that detaches a program attached in mode
// (IFLA_XDP_ATTACHED: 1 native, 2 generic, 3 offloaded).
func modeFlag(mode uint32) int {
	switch mode {
	case 2:
		return unix.XDP_FLAGS_SKB_MODE
	case 3:
		return unix.XDP_FLAGS_HW_MODE
	}
	return unix.XDP_FLAGS_DRV_MODE
}
