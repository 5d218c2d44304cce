//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// The probes below ask the kernel and a device's driver what they can do,
// as Open does before it relies on a feature, for `ecnswitch doctor`. They
// change nothing: no program is attached, no interface touched, and every
// socket, map and program they make is closed before they return. Those
// that load a program or make a socket need CAP_BPF or CAP_NET_RAW; without,
// they return the kernel's EPERM.

// Kfuncs of the XDP RX metadata (Documentation/networking/xdp-rx-metadata.rst)
// that a device-bound program calls to read what the NIC put beside a frame.
const (
	RxTimestampKfunc = rxTimestampKfunc // the hardware receive stamp, which Open's stamping program reads
	RxHashKfunc      = "bpf_xdp_metadata_rx_hash"
)

// DeviceFeatures are what a device's driver can do with XDP and AF_XDP, as
// the netdev netlink family reports them (Linux 6.3+): the names of the
// set bits of its xdp-features, xdp-rx-metadata-features and xsk-features.
type DeviceFeatures struct {
	// XDP: basic (native XDP), redirect, ndo-xmit (takes redirected
	// frames: XDP_TX of live frames), xsk-zerocopy, hw-offload, rx-sg,
	// ndo-xmit-sg.
	XDP []string
	// RxMetadata: timestamp, hash, vlan-tag (the kfuncs the driver
	// implements).
	RxMetadata []string
	// XSK: tx-timestamp, tx-checksum, tx-launch-time-fifo (XSK TX
	// metadata the driver acts on).
	XSK []string
}

// xdpActNames name the bits of the netdev family's xdp-act enum.
var xdpActNames = []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}

// ProbeDevice returns the features of the device ifname, in the calling
// thread's network namespace.
func ProbeDevice(ifname string) (DeviceFeatures, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return DeviceFeatures{}, fmt.Errorf("afxdp: %w", err)
	}
	f, err := deviceFeatures(ifi.Index)
	if err != nil {
		return DeviceFeatures{}, err
	}
	return DeviceFeatures{
		XDP:        featureNames(f.xdp, xdpActNames),
		RxMetadata: featureNames(f.rxMetadata, rxMetadataNames),
		XSK:        featureNames(f.xsk, xskFeatureNames),
	}, nil
}

// PHCIndex returns the index of ifname's PTP hardware clock (/dev/ptpN),
// as ethtool -T reports it, or -1 when it has none.
func PHCIndex(ifname string) int { return phcIndex(ifname) }

// NAPIThreads returns the PIDs of the kernel threads that poll the NAPI
// instances of ifname, in the calling thread's network namespace: none
// when its NAPI runs in softirq (threaded NAPI off). It needs the netdev
// family's napi-get (Linux 6.9+).
func NAPIThreads(ifname string) ([]int, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afxdp: %w", err)
	}
	return napiThreads(ifi.Index)
}

// ProbeKfunc reports whether the running kernel's BTF has the kfunc name.
func ProbeKfunc(name string) error {
	_, err := kfuncID(name)
	return err
}

// ProbeSockets reports whether the kernel has AF_XDP sockets
// (CONFIG_XDP_SOCKETS): it opens one and closes it.
func ProbeSockets() error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		return fmt.Errorf("afxdp: socket(AF_XDP): %w (%w): the kernel lacks CONFIG_XDP_SOCKETS", err, ErrNotSupported)
	case err != nil:
		return fmt.Errorf("afxdp: socket(AF_XDP): %w%s", err, permissionCure(err))
	}
	return unix.Close(fd)
}

// ProbeTxMetadata reports whether the kernel takes XSK TX metadata, which
// TX completion stamps need (Linux 6.8+): it registers a two-frame UMEM
// with tx_metadata_len on a socket bound to no interface.
func ProbeTxMetadata() error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("afxdp: socket(AF_XDP): %w%s", err, permissionCure(err))
	}
	defer unix.Close(fd)
	const frameSize = 4096
	mem, err := unix.Mmap(-1, 0, 2*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("afxdp: mmap: %w", err)
	}
	defer unix.Munmap(mem)
	ok, err := registerWithTxMeta(fd, mem, frameSize)
	switch {
	case err != nil:
		return fmt.Errorf("afxdp: register UMEM: %w%s", err, permissionCure(err))
	case !ok:
		return fmt.Errorf("afxdp: the kernel refuses tx_metadata_len on a UMEM (XSK TX metadata, Linux 6.8+): %w", ErrNotSupported)
	}
	return nil
}

// ProbeLiveFrames reports whether the kernel runs XDP programs on live
// frames (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+),
// which Transmit = xdp and the load generator send with. It runs a
// program that drops its one frame, in the calling thread's network
// namespace on its loopback device: nothing is sent, and no program is
// attached anywhere.
func ProbeLiveFrames() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "ecnsw_probe",
		Type:         ebpf.XDP,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()},
	})
	if err != nil {
		return fmt.Errorf("afxdp: load an XDP program: %w%s", err, permissionCure(err))
	}
	defer prog.Close()
	frame := make([]byte, 64)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	_, err = prog.Run(&ebpf.RunOptions{Data: frame, Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("afxdp: BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: %w (%w): live frames need Linux 5.18+", err, ErrNotSupported)
	}
	if err != nil {
		return fmt.Errorf("afxdp: BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: %w", err)
	}
	return nil
}
