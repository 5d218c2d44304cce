package ect1

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
)

// AnyPort among the ports chooses every TCP packet.
const AnyPort = 0

// MaxPorts is the most ports a Rewriter chooses (the program's map).
const MaxPorts = 64

// DefaultPinDir is where testbeds pin their rewriters, in bpffs.
const DefaultPinDir = "/sys/fs/bpf/ecnswitch/ect1"

// bpffsRoot is where bpffs is mounted by convention, and where Pin mounts
// it when nothing is mounted there.
const bpffsRoot = "/sys/fs/bpf"

// Counts are what a Rewriter did to its chosen flows' packets, summed
// over the CPUs.
type Counts struct {
	Rewritten uint64 // ECT(0) packets sent on as ECT(1)
	Left      uint64 // packets that were not ECT(0) (Not-ECT, ECT(1), CE): left as they were
}

// Rewriter is the program attached at the egress of one interface.
type Rewriter struct {
	objs ect1Objects
	link link.Link
}

// Attach loads the program and attaches it at the tcx egress of interface
// ifname in network namespace netns (by name, as `ip netns` lists it; ""
// for the caller's), choosing the TCP flows of ports (AnyPort for every
// one; 1 to MaxPorts of them). It needs root (CAP_BPF, CAP_NET_ADMIN)
// and Linux ≥ 6.6 for tcx.
func Attach(netns, ifname string, ports []uint16) (*Rewriter, error) {
	r, err := load(ports)
	if err != nil {
		return nil, err
	}
	attach := func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		r.link, err = link.AttachTCX(link.TCXOptions{
			Interface: ifc.Index,
			Program:   r.objs.Ect1Egress,
			Attach:    ebpf.AttachTCXEgress,
		})
		return err
	}
	if netns == "" {
		err = attach()
	} else {
		err = nsenter.Do(netns, attach)
	}
	if err != nil {
		r.objs.Close()
		return nil, fmt.Errorf("ect1: attach to %s egress (netns %q): %w", ifname, netns, explain(err))
	}
	return r, nil
}

// load loads the program with ports chosen, unattached.
func load(ports []uint16) (*Rewriter, error) {
	if len(ports) == 0 || len(ports) > MaxPorts {
		return nil, fmt.Errorf("ect1: %d ports: want 1 to %d (%d for every TCP packet)", len(ports), MaxPorts, AnyPort)
	}
	r := &Rewriter{}
	if err := loadEct1Objects(&r.objs, nil); err != nil {
		return nil, fmt.Errorf("ect1: load the program: %w", explain(err))
	}
	for _, p := range ports {
		if err := r.objs.Ect1Ports.Put(p, uint8(1)); err != nil {
			r.objs.Close()
			return nil, fmt.Errorf("ect1: choose port %d: %w", p, err)
		}
	}
	return r, nil
}

// Counts returns what the rewriter did so far.
func (r *Rewriter) Counts() (Counts, error) {
	var c Counts
	for i, n := range []*uint64{&c.Rewritten, &c.Left} {
		var per []uint64
		if err := r.objs.Ect1Counts.Lookup(uint32(i), &per); err != nil {
			return Counts{}, fmt.Errorf("ect1: counts: %w", err)
		}
		for _, v := range per {
			*n += v
		}
	}
	return c, nil
}

// Pin pins the rewriter's link at path, in bpffs, creating its directory
// (and mounting bpffs at /sys/fs/bpf if path lies there and nothing is
// mounted): the rewrite then outlives this process, until Unpin removes
// the pin or the interface goes away.
func (r *Rewriter) Pin(path string) error {
	if err := mountBPFFS(filepath.Dir(path)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("ect1: %w", err)
	}
	if err := r.link.Pin(path); err != nil {
		return fmt.Errorf("ect1: pin at %s: %w", path, err)
	}
	return nil
}

// Close releases the process's hold: the rewrite stops unless the
// rewriter is pinned.
func (r *Rewriter) Close() error {
	var err error
	if r.link != nil {
		err = r.link.Close()
	}
	return errors.Join(err, r.objs.Close())
}

// Unpin removes a pin that Pin made, and the rewrite stops unless a
// process still holds it. A pin that is not there is no error.
func Unpin(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ect1: unpin: %w", err)
	}
	return nil
}

// mountBPFFS makes sure dir lies on a BPF file system, mounting one at
// /sys/fs/bpf if that is where it should lie and nothing is mounted there
// (a machine without systemd, a container).
func mountBPFFS(dir string) error {
	at := dir
	for {
		if _, err := os.Stat(at); err == nil {
			break
		}
		parent := filepath.Dir(at)
		if parent == at {
			break
		}
		at = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(at, &st); err != nil {
		return fmt.Errorf("ect1: pin directory %s: %w", dir, err)
	}
	if st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if at != bpffsRoot {
		return fmt.Errorf("ect1: pin directory %s: %s is not a BPF file system (mount one: mount -t bpf bpf DIR)", dir, at)
	}
	if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("ect1: mount bpffs at %s: %w", bpffsRoot, err)
	}
	return nil
}

// explain adds what a load or attach error most likely means, and the
// verifier's log when there is one.
func explain(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.As(err, &ve):
		return fmt.Errorf("%w\n%+v", err, ve)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w (needs root: CAP_BPF and CAP_NET_ADMIN)", err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%w (tcx needs Linux ≥ 6.6)", err)
	}
	return err
}
