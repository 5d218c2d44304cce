package bench

import (
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
)

// upBridge enslaves the switch ends to a new Linux bridge (STP off, so
// its ports forward at once; no IPv6, so it sends nothing of its own) and
// returns the function that deletes it and the one that sums the dropped
// counters of its ports.
func upBridge(name string, members []string) (func() error, func() map[string]uint64, error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, nil, fmt.Errorf("add bridge %s: %w", name, err)
	}
	del := func() error {
		if err := netlink.LinkDel(br); err != nil {
			return fmt.Errorf("delete bridge %s: %w", name, err)
		}
		return nil
	}
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	for _, m := range members {
		l, err := netlink.LinkByName(m)
		if err == nil {
			err = netlink.LinkSetMaster(l, br)
		}
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("add %s to bridge %s: %w", m, name, err), del())
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("set bridge %s up: %w", name, err), del())
	}
	drops := func() map[string]uint64 {
		d := map[string]uint64{}
		for _, m := range append([]string{name}, members...) {
			if l, err := netlink.LinkByName(m); err == nil && l.Attrs().Statistics != nil {
				st := l.Attrs().Statistics
				d[m+"_rx"] += st.RxDropped
				d[m+"_tx"] += st.TxDropped
			}
		}
		return d
	}
	return del, drops, nil
}
