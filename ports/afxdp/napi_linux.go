//go:build linux

package afxdp

import (
	"encoding/binary"

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
	replies, err := netdevQuery(netdevCmdNAPIGet, "napi-get", unix.NLM_F_DUMP, netdevANAPIIfindex, ifindex)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, attrs := range replies {
		for _, a := range attrs {
			if a.Attr.Type == netdevANAPIPID && len(a.Value) == 4 {
				pids = append(pids, int(binary.NativeEndian.Uint32(a.Value)))
			}
		}
	}
	return pids, nil
}
