//go:build linux

package afxdp

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// warnPeerOffloads warns when l is a veth whose peer segments large sends
// in the device (TSO) or late (GSO): the peer's stack then hands veth
// segments of up to 64 KB, which arrive here whole, and the XDP program
// drops every one as larger than the usable frame (rx_oversize), so a TCP
// flow through the switch stalls. It only warns: the peer is someone
// else's interface, often in another network namespace. Whatever it cannot
// read it leaves unsaid. Open calls it after attaching, because a native
// program without multi-buffer support makes veth turn the peer's
// segmentation offloads off itself (veth_fix_features): the warning is
// for generic mode, where the peer keeps them.
func warnPeerOffloads(l netlink.Link, usable int, log *zap.Logger) {
	ns, where, peerIndex, err := vethPeer(l)
	if err != nil {
		return
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return
	}
	defer h.Close()
	peer, err := h.LinkByIndex(peerIndex)
	if err != nil {
		return
	}
	name := peer.Attrs().Name
	fd, err := socketIn(ns)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	tso, err1 := ethtoolValue(fd, name, unix.ETHTOOL_GTSO, 0)
	gso, err2 := ethtoolValue(fd, name, unix.ETHTOOL_GGSO, 0)
	if err1 != nil || err2 != nil || tso == 0 && gso == 0 {
		return
	}
	cmd := "ethtool -K " + name + " tso off gso off"
	if where != "" {
		cmd = "ip netns exec " + where + " " + cmd
	}
	log.Warn(fmt.Sprintf("the veth peer %s has TSO or GSO on: its stack sends segments larger than the %d-byte usable frame, "+
		"which the XDP program drops (rx_oversize); turn them off: %s", name, usable, cmd),
		zap.String("interface", l.Attrs().Name), zap.String("peer", name), zap.Bool("tso", tso != 0), zap.Bool("gso", gso != 0))
}

// vethPeer returns the network namespace of l's veth peer (the caller
// closes it), the namespace's name under /run/netns if it has one, and the
// peer's ifindex there.
func vethPeer(l netlink.Link) (netns.NsHandle, string, int, error) {
	v, ok := l.(*netlink.Veth)
	if !ok {
		return 0, "", 0, fmt.Errorf("%s is a %s, not a veth", l.Attrs().Name, l.Type())
	}
	peerIndex, err := netlink.VethPeerIndex(v)
	if err != nil {
		return 0, "", 0, err
	}
	ns, where, err := linkNamespace(l.Attrs().NetNsID)
	if err != nil {
		return 0, "", 0, err
	}
	return ns, where, peerIndex, nil
}

// linkNamespace returns the network namespace a link's IFLA_LINK_NETNSID
// names (nsid < 0: this thread's own), and its name under /run/netns if it
// has one. The kernel gives no handle for an nsid, so it looks for the
// namespace among the named ones, then among the processes'.
func linkNamespace(nsid int) (netns.NsHandle, string, error) {
	if nsid < 0 {
		h, err := netns.Get()
		return h, "", err
	}
	named, _ := filepath.Glob("/run/netns/*")
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for i, path := range append(named, procs...) {
		h, err := netns.GetFromPath(path)
		if err != nil {
			continue
		}
		if id, err := netlink.GetNetNsIdByFd(int(h)); err == nil && id == nsid {
			name := ""
			if i < len(named) {
				name = filepath.Base(path)
			}
			return h, name, nil
		}
		h.Close()
	}
	return 0, "", os.ErrNotExist
}

// socketIn returns a datagram socket in network namespace ns, for ethtool
// ioctls on its interfaces. A socket stays in the namespace it was made
// in, whatever thread uses it later.
func socketIn(ns netns.NsHandle) (int, error) {
	fd := -1
	err := inNamespace(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	return fd, err
}
