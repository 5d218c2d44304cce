//go:build linux

package afxdp

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ethFlagLRO is ETH_FLAG_LRO in ETHTOOL_GFLAGS.
const ethFlagLRO = 1 << 15

// withIoctlSocket runs f with a datagram socket for SIOCETHTOOL.
func withIoctlSocket(f func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

// rxQueueCount returns the interface's RX queue count: ETHTOOL_GCHANNELS
// rx + combined where the driver answers, else the rx-* entries of
// /sys/class/net/<if>/queues, else 1.
func rxQueueCount(ifname string) (int, error) {
	n := 0
	_ = withIoctlSocket(func(fd int) error {
		var err error
		n, err = rxChannels(fd, ifname)
		return err
	})
	if n > 0 {
		return n, nil
	}
	ents, err := os.ReadDir("/sys/class/net/" + ifname + "/queues")
	if err != nil {
		return 1, nil // no sysfs here: every device has queue 0
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "rx-") {
			n++
		}
	}
	return max(n, 1), nil
}

// checkAggregation refuses GRO and LRO in generic mode: the generic hook
// runs after them, so it would see aggregates far larger than a UMEM
// frame, and the XDP program would drop them all.
func checkAggregation(ifname string, usable int) error {
	var gro, lro bool
	_ = withIoctlSocket(func(fd int) error {
		if v, err := ethtoolValue(fd, ifname, unix.ETHTOOL_GGRO, 0); err == nil {
			gro = v != 0
		}
		if v, err := ethtoolValue(fd, ifname, unix.ETHTOOL_GFLAGS, 0); err == nil {
			lro = v&ethFlagLRO != 0
		}
		return nil
	})
	if gro || lro {
		return fmt.Errorf("afxdp: %s has GRO or LRO on (gro=%v lro=%v): in generic XDP mode the program then sees aggregated "+
			"frames larger than the %d-byte usable frame and drops them; turn them off (ethtool -K %s gro off lro off) "+
			"or attach natively", ifname, gro, lro, usable, ifname)
	}
	return nil
}

// deviceTxDropped returns the device's tx_dropped counter (rtnetlink
// statistics), 0 if it cannot be read.
func deviceTxDropped(ifindex int) uint64 {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil || l.Attrs().Statistics == nil {
		return 0
	}
	return l.Attrs().Statistics.TxDropped
}
