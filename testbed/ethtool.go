package testbed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Constants of <linux/ethtool.h> that x/sys does not define.
const (
	ethSSFeatures  = 4  // ETH_SS_FEATURES: the string set of feature names
	ethGStringLen  = 32 // ETH_GSTRING_LEN
	featureBlockSz = 32 // features per ethtool_{get,set}_features_block
)

// featureSet is an interface's netdev features as the ETHTOOL_GFEATURES
// ioctl reports them, by the names `ethtool -k` prints.
type featureSet struct {
	names             []string
	available, active []bool // available: in hw_features, so changeable
}

// switchOffload reports whether a feature is one that must be off on the
// switch ends: anything that lets frames larger than the MTU reach or leave
// the interface (GRO of any kind, LRO, segmentation offloads), since the
// AF_XDP socket drops what does not fit a UMEM frame (notes/afxdp.md
// pitfalls 4 and 5). Matching by name catches features newer than this
// code (6.18 added tx-tcp-accecn-segmentation, which the legacy
// ETHTOOL_STSO does not clear).
func switchOffload(name string) bool {
	switch name {
	case "rx-gro", "rx-gro-hw", "rx-gro-list", "rx-udp-gro-forwarding", "rx-lro", "tx-gso-list", "tx-gso-partial":
		return true
	}
	return strings.HasSuffix(name, "-segmentation")
}

// hostOffload reports whether a feature must be off on the host ends: the
// switch-end set plus TX checksum offload, because with it on the host
// stack hands veth CHECKSUM_PARTIAL packets whose TCP checksum an AF_XDP
// forwarder copies unfinished, and the receiver drops them
// (notes/afxdp.md, Addendum) — but not plain GRO (hostGRO).
func hostOffload(name string) bool {
	return name != hostGRO && (switchOffload(name) || strings.HasPrefix(name, "tx-checksum-"))
}

// hostGRO is the one aggregation the host ends keep on. It merges only
// what a host receives, which no AF_XDP socket sees, and on veth it starts
// the host end's NAPI, without which the switch end cannot take redirected
// frames: the switch's ports then transmit as XDP live frames (afxdp,
// Options.Transmit), and the hosts' TCP receives fewer, larger skbs.
const hostGRO = "rx-gro"

// disableOffloads turns off every feature of ifname that off selects, in the
// network namespace of the calling thread (ethtool -K), and reads the
// features back: it fails if any selected feature is still active.
func disableOffloads(ifname string, off func(string) bool) error {
	return setOffloads(ifname, off, nil)
}

// setOffloads turns off every feature of ifname that off selects and on
// every one that on selects (nil: none), and reads them back.
func setOffloads(ifname string, off, on func(string) bool) error {
	if on == nil {
		on = func(string) bool { return false }
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	fs, err := readFeatures(fd, ifname)
	if err != nil {
		return err
	}
	n := len(fs.names)
	blocks := (n + featureBlockSz - 1) / featureBlockSz
	// struct ethtool_sfeatures: cmd, size, then {valid, requested} per block.
	req := make([]byte, 8+8*blocks)
	binary.NativeEndian.PutUint32(req[0:], unix.ETHTOOL_SFEATURES)
	binary.NativeEndian.PutUint32(req[4:], uint32(blocks))
	changed := false
	for i, name := range fs.names {
		if (off(name) || on(name)) && fs.available[i] {
			block := req[8+8*(i/featureBlockSz):]
			bit := uint32(1) << (i % featureBlockSz)
			binary.NativeEndian.PutUint32(block, binary.NativeEndian.Uint32(block)|bit) // valid
			if on(name) {
				binary.NativeEndian.PutUint32(block[4:], binary.NativeEndian.Uint32(block[4:])|bit) // requested
			}
			changed = true
		}
	}
	if changed {
		if err := ethtoolIoctl(fd, ifname, req); err != nil {
			return fmt.Errorf("ethtool -K %s: %w", ifname, err)
		}
	}
	if fs, err = readFeatures(fd, ifname); err != nil {
		return err
	}
	var stillOn, stillOff []string
	for i, name := range fs.names {
		switch {
		case off(name) && fs.active[i]:
			stillOn = append(stillOn, name)
		case on(name) && fs.available[i] && !fs.active[i]:
			stillOff = append(stillOff, name)
		}
	}
	if len(stillOn) > 0 {
		return fmt.Errorf("ethtool -K %s: still on after turning them off: %s", ifname, strings.Join(stillOn, ", "))
	}
	if len(stillOff) > 0 {
		return fmt.Errorf("ethtool -K %s: still off after turning them on: %s", ifname, strings.Join(stillOff, ", "))
	}
	return nil
}

// readFeatures reads ifname's feature names (ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS) and their state (ETHTOOL_GFEATURES).
func readFeatures(fd int, ifname string) (featureSet, error) {
	// struct ethtool_sset_info: cmd, reserved, sset_mask, data[1].
	info := make([]byte, 20)
	binary.NativeEndian.PutUint32(info[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtoolIoctl(fd, ifname, info); err != nil {
		return featureSet{}, fmt.Errorf("ethtool -k %s: feature count: %w", ifname, err)
	}
	if binary.NativeEndian.Uint64(info[8:]) == 0 {
		return featureSet{}, fmt.Errorf("ethtool -k %s: no feature names", ifname)
	}
	n := int(binary.NativeEndian.Uint32(info[16:]))

	// struct ethtool_gstrings: cmd, string_set, len, then len names.
	strs := make([]byte, 12+n*ethGStringLen)
	binary.NativeEndian.PutUint32(strs[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(strs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(strs[8:], uint32(n))
	if err := ethtoolIoctl(fd, ifname, strs); err != nil {
		return featureSet{}, fmt.Errorf("ethtool -k %s: feature names: %w", ifname, err)
	}

	// struct ethtool_gfeatures: cmd, size, then {available, requested,
	// active, never_changed} per block.
	blocks := (n + featureBlockSz - 1) / featureBlockSz
	feats := make([]byte, 8+16*blocks)
	binary.NativeEndian.PutUint32(feats[0:], unix.ETHTOOL_GFEATURES)
	binary.NativeEndian.PutUint32(feats[4:], uint32(blocks))
	if err := ethtoolIoctl(fd, ifname, feats); err != nil {
		return featureSet{}, fmt.Errorf("ethtool -k %s: features: %w", ifname, err)
	}

	fs := featureSet{names: make([]string, n), available: make([]bool, n), active: make([]bool, n)}
	for i := range n {
		s := strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		fs.names[i] = string(s)
		block := feats[8+16*(i/featureBlockSz):]
		bit := uint32(1) << (i % featureBlockSz)
		fs.available[i] = binary.NativeEndian.Uint32(block[0:])&bit != 0
		fs.active[i] = binary.NativeEndian.Uint32(block[8:])&bit != 0
	}
	return fs, nil
}
