//go:build linux

package afxdp

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The netdev generic-netlink family (Documentation/netlink/specs/netdev.yaml,
// Linux 6.3+): what a driver can do with XDP and AF_XDP.
const (
	netdevCmdDevGet = 1

	netdevADevIfindex            = 1
	netdevADevXDPFeatures        = 3
	netdevADevXDPRxMetadataFeats = 5
	netdevADevXSKFeatures        = 6

	// NETDEV_XDP_ACT_NDO_XMIT: the driver implements ndo_xdp_xmit, so
	// frames can be redirected out of it (on veth: while the peer has an
	// XDP program or GRO on, which start its NAPI).
	xdpActNdoXmit = 1 << 2
)

// genlHeader is struct genlmsghdr: command, version and two reserved
// bytes, which must be zero. (nl.Genlmsg serializes its 2-byte struct as
// 4 bytes, so its reserved bytes are whatever follows it in memory, and
// the kernel's strict validation refuses the message.)
type genlHeader [4]byte

func (h genlHeader) Len() int          { return len(h) }
func (h genlHeader) Serialize() []byte { return h[:] }

// devFeatures are a device's XDP capabilities as the netdev family reports them.
type devFeatures struct {
	xdp        uint64 // NETDEV_A_DEV_XDP_FEATURES: enum netdev_xdp_act bits
	rxMetadata uint64 // NETDEV_A_DEV_XDP_RX_METADATA_FEATURES
	xsk        uint64 // NETDEV_A_DEV_XSK_FEATURES
}

// deviceFeatures asks the netdev family about the device ifindex in the
// calling thread's network namespace.
func deviceFeatures(ifindex int) (devFeatures, error) {
	var f devFeatures
	replies, err := netdevQuery(netdevCmdDevGet, "dev-get", 0, netdevADevIfindex, ifindex)
	if err != nil {
		return f, err
	}
	for _, attrs := range replies {
		for _, a := range attrs {
			if len(a.Value) != 8 {
				continue
			}
			v := binary.NativeEndian.Uint64(a.Value)
			switch a.Attr.Type {
			case netdevADevXDPFeatures:
				f.xdp = v
			case netdevADevXDPRxMetadataFeats:
				f.rxMetadata = v
			case netdevADevXSKFeatures:
				f.xsk = v
			}
		}
	}
	return f, nil
}

// netdevQuery sends the netdev family command cmd (named op, for errors)
// about the device ifindex, given as attribute attr, in the calling
// thread's network namespace, and returns the attributes of each reply.
// flags may add unix.NLM_F_DUMP.
func netdevQuery(cmd uint8, op string, flags int, attr uint16, ifindex int) ([][]syscall.NetlinkRouteAttr, error) {
	fam, err := genlFamily("netdev")
	if err != nil {
		return nil, fmt.Errorf("afxdp: netdev netlink family (Linux 6.3+): %w", err)
	}
	req := nl.NewNetlinkRequest(int(fam), unix.NLM_F_REQUEST|flags)
	req.AddData(genlHeader{cmd, 1})
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, uint32(ifindex))
	req.AddData(nl.NewRtAttr(int(attr), idx))
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: netdev %s ifindex %d: %w", op, ifindex, err)
	}
	var replies [][]syscall.NetlinkRouteAttr
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return nil, fmt.Errorf("afxdp: netdev %s ifindex %d: %w", op, ifindex, err)
		}
		replies = append(replies, attrs)
	}
	return replies, nil
}

// genlFamily resolves a generic netlink family's ID by name. It does not
// use netlink.GenlFamilyGet, whose request carries nl.Genlmsg and so reads
// two bytes past a heap object (the race detector caught it reading
// another goroutine's allocation).
func genlFamily(name string) (uint16, error) {
	req := nl.NewNetlinkRequest(unix.GENL_ID_CTRL, unix.NLM_F_REQUEST)
	req.AddData(genlHeader{unix.CTRL_CMD_GETFAMILY, 1})
	req.AddData(nl.NewRtAttr(unix.CTRL_ATTR_FAMILY_NAME, nl.ZeroTerminated(name)))
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.CTRL_ATTR_FAMILY_ID && len(a.Value) == 2 {
				return binary.NativeEndian.Uint16(a.Value), nil
			}
		}
	}
	return 0, fmt.Errorf("no family ID in the reply for %q", name)
}

// TakesRedirects reports whether the device ifindex, in the calling
// thread's network namespace, takes redirected XDP frames now (its
// xdp-features have ndo-xmit): what XDP_TX from BPF_PROG_RUN live frames
// needs. A veth has it while its peer has an XDP program or GRO on.
func TakesRedirects(ifindex int) (bool, error) {
	f, err := deviceFeatures(ifindex)
	if err != nil {
		return false, err
	}
	return f.xdp&xdpActNdoXmit != 0, nil
}

// Names of the netdev family's feature bits (Documentation/netlink/specs/netdev.yaml).
var (
	rxMetadataNames = []string{"timestamp", "hash", "vlan-tag"}                      // xdp-rx-metadata
	xskFeatureNames = []string{"tx-timestamp", "tx-checksum", "tx-launch-time-fifo"} // xsk-flags
)

// featureNames names the set bits of v; bits without a name show as bitN.
func featureNames(v uint64, names []string) []string {
	var out []string
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 == 0 {
			continue
		}
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}
