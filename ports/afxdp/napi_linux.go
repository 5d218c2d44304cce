//go:build linux

package afxdp

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The netdev family's napi-get (Linux 6.9+): a device's NAPI instances,
// with the PID of the kernel thread that polls one when the device runs
// threaded NAPI.
const (
	netdevCmdNAPIGet = 11

	netdevANAPIIfindex = 1
	netdevANAPIPID     = 4
)

// napiThreads returns the PIDs of the threads polling the NAPI instances of
// the device ifindex, in the calling thread's network namespace: none when
// its NAPI runs in softirq on the CPU that scheduled it (or it has none).
func napiThreads(ifindex int) ([]int, error) {
	fam, err := genlFamily("netdev")
	if err != nil {
		return nil, fmt.Errorf("afxdp: netdev netlink family (Linux 6.3+): %w", err)
	}
	req := nl.NewNetlinkRequest(int(fam), unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	req.AddData(genlHeader{netdevCmdNAPIGet, 1})
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, uint32(ifindex))
	req.AddData(nl.NewRtAttr(netdevANAPIIfindex, idx))
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: netdev napi-get ifindex %d: %w", ifindex, err)
	}
	var pids []int
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return nil, fmt.Errorf("afxdp: netdev napi-get ifindex %d: %w", ifindex, err)
		}
		for _, a := range attrs {
			if a.Attr.Type == netdevANAPIPID && len(a.Value) == 4 {
				pids = append(pids, int(binary.NativeEndian.Uint32(a.Value)))
			}
		}
	}
	return pids, nil
}
