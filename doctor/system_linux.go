//go:build linux

package doctor

import (
	"fmt"
	"net"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// System returns this machine as the checks read it.
func System() Host {
	return Host{
		FS:         os.DirFS("/"),
		Kernel:     buildinfo.KernelRelease(),
		Privileged: os.Geteuid() == 0,
		Interfaces: interfaces,
		Sockets:    afxdp.ProbeSockets,
		XDP:        func() error { return features.HaveProgramType(ebpf.XDP) },
		LiveFrames: afxdp.ProbeLiveFrames,
		TxMetadata: afxdp.ProbeTxMetadata,
		StructOps:  structOps,
		Kfunc:      afxdp.ProbeKfunc,
		Device:     afxdp.ProbeDevice,
		PHC:        afxdp.PHCIndex,
	}
}

// interfaces returns the names of this namespace's interfaces but
// loopback.
func interfaces() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			names = append(names, i.Name)
		}
	}
	return names, nil
}

// structOps reports whether the kernel loads struct_ops programs and its
// BTF describes tcp_congestion_ops, what a congestion control in BPF
// implements.
func structOps() error {
	if err := features.HaveProgramType(ebpf.StructOps); err != nil {
		return err
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("kernel BTF: %w", err)
	}
	var ops *btf.Struct
	if err := spec.TypeByName("tcp_congestion_ops", &ops); err != nil {
		return fmt.Errorf("tcp_congestion_ops in the kernel's BTF: %w", err)
	}
	return nil
}
