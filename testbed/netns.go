package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
)

// netnsDir is where named network namespaces are bind-mounted, as
// `ip netns` does.
const netnsDir = "/run/netns"

// netnsID identifies a network namespace: the inode of its nsfs file,
// which the kernel hands out again once the namespace is freed, and its
// cookie (SO_NETNS_COOKIE), which it never reuses while it runs. A
// namespace deleted and created again under the same name (by someone
// else, say) can get the old inode, never the old cookie.
type netnsID struct {
	ino, cookie uint64
}

// createNetns creates the named network namespace name and returns its
// identity. It fails, touching nothing, if a namespace of that name
// already exists.
//
// netns.NewNamed moves the calling thread into the new namespace, so it runs
// on a goroutine of its own whose locked thread is thrown away rather than
// returned to the scheduler: no other goroutine ever runs in the wrong
// namespace.
func createNetns(name string) (netnsID, error) {
	type result struct {
		id  netnsID
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		h, err := netns.NewNamed(name)
		if err != nil {
			done <- result{err: fmt.Errorf("create netns %s: %w", name, err)}
			return
		}
		h.Close()
		var id netnsID
		id.cookie, err = netnsCookie()
		if err == nil {
			id.ino, err = netnsInode(name)
		}
		done <- result{id, err}
	}()
	r := <-done
	return r.id, r.err
}

// netnsCookie returns the cookie of the calling thread's network namespace.
func netnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("netns cookie: socket: %w", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("netns cookie: getsockopt SO_NETNS_COOKIE (Linux 5.14+): %w", err)
	}
	return c, nil
}

// netnsInode returns the inode of the named namespace's bind mount, or an
// error wrapping fs.ErrNotExist when there is none.
func netnsInode(name string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(netnsDir, name), &st); err != nil {
		return 0, fmt.Errorf("stat netns %s: %w", name, err)
	}
	return st.Ino, nil
}

// deleteNetns removes the named namespace if it is still the one id
// identifies: it unmounts and removes /run/netns/<name>, as `ip netns del`
// does. A namespace that is already gone is not an error; one replaced by
// another of the same name is left alone and reported. A zero cookie (a
// state file written before cookies were recorded) checks the inode only.
func deleteNetns(name string, id netnsID) error {
	got, err := netnsInode(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if got != id.ino {
		return fmt.Errorf("netns %s is not the one this testbed created (inode %d, recorded %d): left alone", name, got, id.ino)
	}
	if id.cookie != 0 {
		var cookie uint64
		if err := nsenter.Do(name, func() (err error) { cookie, err = netnsCookie(); return err }); err != nil {
			return err
		}
		if cookie != id.cookie {
			return fmt.Errorf("netns %s is not the one this testbed created (cookie %d, recorded %d; the inode was reused): left alone", name, cookie, id.cookie)
		}
	}
	path := filepath.Join(netnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount netns %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", name, err)
	}
	return nil
}

// setRPS steers the receive processing of ifname's queues in the named
// namespace to cpus (Receive Packet Steering: rps_cpus of every
// queues/rx-N): the protocol stack then runs there, whatever CPU the
// packet arrived on. On veth a frame is received on the sender's CPU (its
// transmit runs the peer's NAPI), which for a host end is the switch
// worker's; RPS moves the host's TCP receive off it.
//
// /sys/class/net shows the namespace of the sysfs mount, not of the
// caller, so this runs, like `ip netns exec`, on a throwaway thread in the
// namespace with a mount namespace of its own and a fresh sysfs in it.
func setRPS(netnsName, ifname string, queues int, cpus []int) error {
	mask := cpuMask(cpus)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		done <- func() error {
			ns, err := netns.GetFromName(netnsName)
			if err != nil {
				return fmt.Errorf("open netns %s: %w", netnsName, err)
			}
			defer ns.Close()
			if err := netns.Set(ns); err != nil {
				return fmt.Errorf("enter netns %s: %w", netnsName, err)
			}
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
				return fmt.Errorf("make mounts private: %w", err)
			}
			dir, err := os.MkdirTemp("", "ecnswitch-sysfs-")
			if err != nil {
				return err
			}
			defer os.Remove(dir)
			if err := unix.Mount("sysfs", dir, "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mount sysfs of netns %s: %w", netnsName, err)
			}
			defer unix.Unmount(dir, unix.MNT_DETACH)
			for q := range queues {
				p := filepath.Join(dir, "class/net", ifname, "queues", fmt.Sprintf("rx-%d", q), "rps_cpus")
				if err := os.WriteFile(p, []byte(mask), 0); err != nil {
					return fmt.Errorf("set RPS of %s/%s rx-%d to CPUs %v: %w", netnsName, ifname, q, cpus, err)
				}
			}
			return nil
		}()
	}()
	return <-done
}

// cpuMask writes a set of CPUs as the comma-separated 32-bit hex words of
// a sysfs CPU mask, most significant first.
func cpuMask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%08x", words[i])
	}
	return b.String()
}
