//go:build !linux

package afxdp

import "fmt"

// Kfuncs of the XDP RX metadata.
const (
	RxTimestampKfunc = "bpf_xdp_metadata_rx_timestamp"
	RxHashKfunc      = "bpf_xdp_metadata_rx_hash"
)

// DeviceFeatures are what a device's driver can do with XDP and AF_XDP;
// none outside Linux.
type DeviceFeatures struct {
	XDP, RxMetadata, XSK []string
}

func notLinux(what string) error {
	return fmt.Errorf("afxdp: %s needs Linux: %w", what, ErrNotSupported)
}

// ProbeDevice reports ErrNotSupported: XDP is Linux's.
func ProbeDevice(ifname string) (DeviceFeatures, error) {
	return DeviceFeatures{}, notLinux("XDP")
}

// PHCIndex returns -1.
func PHCIndex(ifname string) int { return -1 }

// NAPIThreads reports ErrNotSupported.
func NAPIThreads(ifname string) ([]int, error) { return nil, notLinux("NAPI") }

// ProbeKfunc reports ErrNotSupported.
func ProbeKfunc(name string) error { return notLinux("BPF") }

// ProbeSockets reports ErrNotSupported.
func ProbeSockets() error { return notLinux("AF_XDP") }

// ProbeTxMetadata reports ErrNotSupported.
func ProbeTxMetadata() error { return notLinux("AF_XDP") }

// ProbeLiveFrames reports ErrNotSupported.
func ProbeLiveFrames() error { return notLinux("XDP") }
