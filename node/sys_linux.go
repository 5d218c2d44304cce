//go:build linux

package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Capabilities run needs besides root (capability(7) numbers).
const (
	capNetAdmin = 12
	capNetRaw   = 13
	capSysAdmin = 21
	capBPF      = 39
)

// CheckPrivileges reports, before anything is opened, whether the process
// may attach XDP programs and open AF_XDP sockets.
func CheckPrivileges() error {
	eff, err := effectiveCaps()
	if err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	var missing []string
	if !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if !has(capNetRaw) {
		missing = append(missing, "CAP_NET_RAW")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF")
	}
	if len(missing) == 0 {
		return nil
	}
	who := "this user"
	if os.Geteuid() == 0 {
		who = "root without them (a restricted container?)"
	}
	return fmt.Errorf("AF_XDP needs %s, which %s lacks: run as root, or grant the binary "+
		"CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK "+
		"(setcap cap_net_admin,cap_net_raw,cap_bpf,cap_ipc_lock+ep ecnswitch)", strings.Join(missing, ", "), who)
}

// effectiveCaps reads CapEff from /proc/self/status.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

// pinCPUs restricts every thread of the process to cpus. Threads the Go
// runtime starts later inherit the mask from the thread that creates them.
func pinCPUs(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("sched_setaffinity(%d): %w", tid, err)
		}
	}
	return nil
}

// watchLinks logs when a port's link goes down and when it returns, until
// ctx is done. The port keeps its sockets meanwhile: frames it cannot send
// are counted as tx_error drops, and traffic resumes when the link is up.
// An interface that is deleted (or moved to another namespace, or replaced
// by a new one of the same name) takes the port's sockets and XDP program
// with it, and nothing would drive its successor: watchLinks then calls
// gone once, with an error that names the port and the cure.
func watchLinks(ctx context.Context, ifaces map[string]string, log *zap.Logger, gone func(error)) error {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{
		ErrorCallback: func(err error) {
			if ctx.Err() == nil { // closing the subscription at shutdown fails a last Receive
				log.Warn("link watch", zap.Error(err))
			}
		},
	})
	if err != nil {
		return err
	}
	up := map[string]bool{}
	index := map[string]int{}
	for name := range ifaces {
		if l, err := netlink.LinkByName(name); err == nil {
			up[name], index[name] = linkUp(l), l.Attrs().Index
		}
	}
	go func() {
		defer close(done)
		lost := false
		for {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-updates:
				if !ok {
					return
				}
				name := u.Attrs().Name
				port, ours := ifaces[name]
				if !ours || lost {
					continue
				}
				if idx, known := index[name]; known && (u.Header.Type == unix.RTM_DELLINK || u.Attrs().Index != idx) {
					lost = true
					gone(fmt.Errorf("port %s: interface %s (ifindex %d) was deleted, and its AF_XDP sockets and XDP program with it: "+
						"restart ecnswitch once the interface exists again (the systemd unit restarts it on failure)",
						port, name, index[name]))
					continue
				}
				now := linkUp(u.Link)
				if was, known := up[name]; known && was == now {
					continue
				}
				up[name] = now
				if now {
					log.Info("link up; port resumes", zap.String("port", port), zap.String("interface", name))
				} else {
					log.Warn("link down; frames for it are dropped as tx_error until it returns",
						zap.String("port", port), zap.String("interface", name), zap.String("state", u.Attrs().OperState.String()))
				}
			}
		}
	}()
	return nil
}

// linkUp reports whether a link is administratively up and its carrier is
// on (operstate up, or unknown for devices that do not report it).
func linkUp(l netlink.Link) bool {
	a := l.Attrs()
	if a.Flags&unix.IFF_UP == 0 || a.RawFlags&unix.IFF_LOWER_UP == 0 {
		return false
	}
	return a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown
}
