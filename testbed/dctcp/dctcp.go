package dctcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Name is the congestion control's name, in the kernel's lists and in
// net.ipv4.tcp_congestion_control.
const Name = "dctcp"

// Defaults for the zero values of Options.
const (
	// DefaultPinDir holds the pins: holders/HOLDER (the link, once per
	// holder) and alpha (the α map). It lies in bpffs, which Acquire
	// mounts at /sys/fs/bpf if nothing is mounted there.
	DefaultPinDir = "/sys/fs/bpf/ecnswitch/dctcp"
	// DefaultUnloadWait bounds how long Release and Unload wait for the
	// kernel to unregister the algorithm once its last pin is gone (it
	// frees an unpinned link from a work queue, so not at once).
	DefaultUnloadWait = 5 * time.Second
)

// bpffsRoot is where bpffs is mounted by convention (systemd, iproute2,
// bpftool), and where Acquire mounts it when it is missing.
const bpffsRoot = "/sys/fs/bpf"

// The kernel's congestion-control lists.
const (
	availablePath = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	// moduleDir exists when the kernel's own tcp_dctcp is built in or loaded.
	moduleDir = "/sys/module/tcp_dctcp"
)

// Source says where the kernel's dctcp comes from.
type Source int

// Sources.
const (
	Missing  Source = iota // the kernel has no dctcp
	Kernel                 // the kernel's own tcp_dctcp, built in or a module
	BPF                    // this package's program, pinned under Options.PinDir
	OtherBPF               // a congestion control named dctcp that is neither: used, never unloaded
)

func (s Source) String() string {
	switch s {
	case Missing:
		return "missing"
	case Kernel:
		return "kernel"
	case BPF:
		return "bpf"
	case OtherBPF:
		return "other"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Options locate the pins. The zero value selects the defaults.
type Options struct {
	// PinDir is the directory of the pins, in bpffs. Every process on a
	// machine must use the same one: it is where they find each other's
	// holds. Default DefaultPinDir.
	PinDir string

	// UnloadWait bounds the wait for the kernel to unregister the
	// algorithm once its last pin is gone. Default DefaultUnloadWait.
	UnloadWait time.Duration

	// Logger receives one line per registration, hold and release.
	// Default: none.
	Logger *zap.Logger

	// name replaces Name, so that a test can register a congestion
	// control of its own, beside whatever the machine uses.
	name string
}

func (o Options) withDefaults() Options {
	if o.PinDir == "" {
		o.PinDir = DefaultPinDir
	}
	if o.UnloadWait == 0 {
		o.UnloadWait = DefaultUnloadWait
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.Logger = o.Logger.Named("dctcp")
	if o.name == "" {
		o.name = Name
	}
	return o
}

func (o Options) holdersDir() string        { return filepath.Join(o.PinDir, "holders") }
func (o Options) holderPin(h string) string { return filepath.Join(o.holdersDir(), h) }
func (o Options) alphaPin() string          { return filepath.Join(o.PinDir, "alpha") }

// checkHolder accepts holder names that are safe as file names:
// lowercase letters, digits and '-', 1 to 64 of them.
func checkHolder(h string) error {
	ok := len(h) > 0 && len(h) <= 64
	for i := 0; ok && i < len(h); i++ {
		c := h[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("dctcp: holder %q: want 1 to 64 lowercase letters, digits and '-'", h)
	}
	return nil
}

// Acquire makes dctcp available to the machine's sockets and namespaces
// and returns where it comes from. When the kernel has its own (or a
// module it loads on request), or another program is registered under
// the name, Acquire only reports it. Otherwise it registers this
// package's BPF congestion control, if it is not registered yet, and pins
// it for holder, so that it stays registered until holder, and every
// other holder, calls Release. Acquiring twice for one holder holds once.
// It needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN to mount bpffs).
func Acquire(holder string, opts Options) (Source, error) {
	o := opts.withDefaults()
	if err := checkHolder(holder); err != nil {
		return Missing, err
	}
	if src, err := registered(o); err != nil || src != Missing && src != BPF {
		return src, err
	}
	if err := mountBPFFS(o); err != nil {
		return Missing, err
	}
	unlock, err := lock(o)
	if err != nil {
		return Missing, err
	}
	defer unlock()

	src, err := registered(o)
	if err != nil {
		return Missing, err
	}
	switch src {
	case BPF:
		if err := addHolder(o, holder); err != nil {
			return BPF, err
		}
		o.Logger.Info("holding the BPF congestion control", zap.String("holder", holder))
		return BPF, nil
	case Missing:
	default:
		return src, nil
	}
	// The kernel's module, if it has one, comes first.
	requestModule(o.name)
	if src, err := registered(o); err != nil || src != Missing {
		return src, err
	}
	if err := removeStalePins(o); err != nil {
		return Missing, err
	}
	if err := load(o, holder); err != nil {
		return Missing, err
	}
	return BPF, nil
}

// Release drops holder's hold on the BPF congestion control and, when it
// was the last, waits for the kernel to unregister it. It reports whether
// the algorithm was unregistered. Releasing what holder does not hold
// (because the kernel's own dctcp served it, or it released already) does
// nothing.
func Release(holder string, opts Options) (unloaded bool, err error) {
	o := opts.withDefaults()
	if err := checkHolder(holder); err != nil {
		return false, err
	}
	if _, err := os.Lstat(o.holderPin(holder)); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	unlock, err := lock(o)
	if err != nil {
		return false, err
	}
	defer unlock()
	if err := os.Remove(o.holderPin(holder)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("dctcp: release %s: %w", holder, err)
	}
	left, err := holders(o)
	if err != nil {
		return false, err
	}
	o.Logger.Info("released the BPF congestion control", zap.String("holder", holder), zap.Strings("still held by", left))
	if len(left) > 0 {
		return false, nil
	}
	return true, unregister(o)
}

// Unload unregisters the BPF congestion control whoever holds it, and
// returns the holders it had. It does nothing to a dctcp that is not this
// package's.
func Unload(opts Options) (held []string, err error) {
	o := opts.withDefaults()
	if _, err := os.Stat(o.holdersDir()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := lock(o)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if held, err = holders(o); err != nil {
		return nil, err
	}
	for _, h := range held {
		if err := os.Remove(o.holderPin(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return held, fmt.Errorf("dctcp: unload: %w", err)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	o.Logger.Info("unloading the BPF congestion control", zap.Strings("held by", held))
	return held, unregister(o)
}

// Status is what Stat found, under the lock that Acquire and Release take,
// so that Source and Holders agree.
type Status struct {
	Source  Source
	Holders []string // the holders of this package's program (Source BPF)
	Link    link.ID  // its struct_ops link (bpftool link show id N)
}

// Stat reports where the kernel's dctcp comes from and who holds it.
func Stat(opts Options) (Status, error) {
	o := opts.withDefaults()
	if _, err := os.Stat(o.PinDir); err == nil {
		unlock, err := lockMode(o, unix.LOCK_SH)
		if err != nil {
			return Status{}, err
		}
		defer unlock()
	}
	src, err := registered(o)
	if err != nil || src != BPF {
		return Status{Source: src}, err
	}
	st := Status{Source: src}
	if st.Holders, err = holders(o); err != nil {
		return st, err
	}
	if len(st.Holders) == 0 {
		return st, nil
	}
	l, err := link.LoadPinnedLink(o.holderPin(st.Holders[0]), nil)
	if err != nil {
		return st, fmt.Errorf("dctcp: %w", err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return st, fmt.Errorf("dctcp: link info: %w", err)
	}
	st.Link = info.ID
	return st, nil
}

// Stats are a socket's α as the BPF congestion control computed it, over
// the windows (about one round trip each) it has seen.
type Stats struct {
	Alpha        float64 // α after the last window, in [0, 1]
	Windows      uint32  // windows so far: α updates
	MeanAlpha    float64 // mean α over the windows
	MeanFraction float64 // mean marked fraction F over the windows
	// Repairs counts the times the program found the kernel's snd_ssthresh
	// above TCP_INFINITE_SSTHRESH, a value the kernel never computes, and
	// put back the window the last callback left (bpf/dctcp.c, dctcp_guard).
	Repairs uint32
}

// ReadStats returns the α of conn, a TCP socket of the calling process
// that runs the BPF congestion control. It fails with an error wrapping
// ebpf.ErrKeyNotExist until the socket has completed a window.
func ReadStats(conn syscall.Conn, opts Options) (Stats, error) {
	o := opts.withDefaults()
	m, err := ebpf.LoadPinnedMap(o.alphaPin(), nil)
	if err != nil {
		return Stats{}, fmt.Errorf("dctcp: α map: %w", err)
	}
	defer m.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return Stats{}, fmt.Errorf("dctcp: %w", err)
	}
	var v dctcpDctcpStats
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = m.Lookup(int32(fd), &v) }); err != nil {
		return Stats{}, fmt.Errorf("dctcp: %w", err)
	}
	if lerr != nil {
		return Stats{}, fmt.Errorf("dctcp: α of socket: %w", lerr)
	}
	s := Stats{Alpha: float64(v.Alpha) / maxAlpha, Windows: v.Windows, Repairs: v.Repairs}
	if v.Windows > 0 {
		s.MeanAlpha = float64(v.AlphaSum) / float64(v.Windows) / maxAlpha
		s.MeanFraction = float64(v.FracSum) / float64(v.Windows) / maxAlpha
	}
	return s, nil
}

// maxAlpha is α = 1 in the program's fixed point (DCTCP_MAX_ALPHA).
const maxAlpha = 1024

// registered reports who, if anyone, has dctcp registered.
func registered(o Options) (Source, error) {
	avail, err := available()
	if err != nil {
		return Missing, err
	}
	if !slices.Contains(avail, o.name) {
		return Missing, nil
	}
	if hs, err := holders(o); err == nil && len(hs) > 0 {
		return BPF, nil
	}
	if _, err := os.Stat(moduleDir); err == nil && o.name == Name {
		return Kernel, nil
	}
	return OtherBPF, nil
}

// available returns net.ipv4.tcp_available_congestion_control.
func available() ([]string, error) {
	b, err := os.ReadFile(availablePath)
	if err != nil {
		return nil, fmt.Errorf("dctcp: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// holders lists the pins under holders/.
func holders(o Options) ([]string, error) {
	ents, err := os.ReadDir(o.holdersDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dctcp: holders: %w", err)
	}
	hs := make([]string, 0, len(ents))
	for _, e := range ents {
		hs = append(hs, e.Name())
	}
	return hs, nil
}

// requestModule asks for name on a throwaway socket: as root, the kernel
// loads tcp_NAME if it has the module (tcp_set_congestion_control's
// request_module).
func requestModule(name string) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	unix.Close(fd)
}

// load registers the program and pins it for holder, and its α map. The
// caller holds the lock.
func load(o Options, holder string) error {
	spec, err := loadDctcp()
	if err != nil {
		return fmt.Errorf("dctcp: %w", err)
	}
	if err := setName(spec, o.name); err != nil {
		return fmt.Errorf("dctcp: %w", err)
	}
	var objs dctcpObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return fmt.Errorf("dctcp: load the BPF congestion control: %w", explain(err))
	}
	defer objs.Close()
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: objs.Dctcp})
	if err != nil {
		return fmt.Errorf("dctcp: register the BPF congestion control: %w", explain(err))
	}
	defer l.Close()
	if err := os.MkdirAll(o.holdersDir(), 0o700); err != nil {
		return fmt.Errorf("dctcp: %w", err)
	}
	// The α map first: a pinned link with no α map would be a holder
	// whose sockets cannot be read.
	if err := objs.DctcpAlpha.Pin(o.alphaPin()); err != nil {
		return fmt.Errorf("dctcp: pin the α map: %w", err)
	}
	if err := l.Pin(o.holderPin(holder)); err != nil {
		return errors.Join(fmt.Errorf("dctcp: pin for %s: %w", holder, err), os.Remove(o.alphaPin()))
	}
	o.Logger.Info("registered the BPF congestion control",
		zap.String("holder", holder), zap.String("pins", o.PinDir))
	return nil
}

// addHolder pins the registered program's link once more, for holder.
// The caller holds the lock.
func addHolder(o Options, holder string) error {
	p := o.holderPin(holder)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	hs, err := holders(o)
	if err != nil || len(hs) == 0 {
		return fmt.Errorf("dctcp: hold for %s: no pinned link to share (%v)", holder, err)
	}
	l, err := link.LoadPinnedLink(o.holderPin(hs[0]), nil)
	if err != nil {
		return fmt.Errorf("dctcp: hold for %s: %w", holder, err)
	}
	defer l.Close()
	// A link loaded from a pin moves its pin when pinned again; a link
	// made from a duplicate of its descriptor pins anew.
	fder, ok := l.(interface{ FD() int })
	if !ok {
		return fmt.Errorf("dctcp: hold for %s: %T has no descriptor", holder, l)
	}
	dup, err := unix.FcntlInt(uintptr(fder.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dctcp: hold for %s: %w", holder, err)
	}
	d, err := link.NewFromFD(dup)
	if err != nil {
		return fmt.Errorf("dctcp: hold for %s: %w", holder, err)
	}
	defer d.Close()
	if err := d.Pin(p); err != nil {
		return fmt.Errorf("dctcp: hold for %s: %w", holder, err)
	}
	return nil
}

// removeStalePins removes pins whose link no longer registers dctcp (a
// link detached by hand: `bpftool link detach`). The caller holds the
// lock and has seen that dctcp is not registered.
func removeStalePins(o Options) error {
	hs, err := holders(o)
	if err != nil {
		return err
	}
	for _, h := range hs {
		o.Logger.Warn("removing a stale pin: its link no longer registers dctcp", zap.String("pin", o.holderPin(h)))
		if err := os.Remove(o.holderPin(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dctcp: stale pin: %w", err)
		}
	}
	if err := os.Remove(o.alphaPin()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dctcp: stale pin: %w", err)
	}
	return nil
}

// unregister removes the α map's pin once the last holder is gone and
// waits, up to o.UnloadWait, for the kernel to take dctcp out of its
// list. The caller holds the lock.
func unregister(o Options) error {
	if err := os.Remove(o.alphaPin()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dctcp: unpin the α map: %w", err)
	}
	start := time.Now()
	deadline := start.Add(o.UnloadWait)
	for {
		avail, err := available()
		if err != nil {
			return err
		}
		if !slices.Contains(avail, o.name) {
			o.Logger.Info("unregistered the BPF congestion control", zap.Duration("after", time.Since(start)))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dctcp: %s still in net.ipv4.tcp_available_congestion_control %v after its last pin was removed", o.name, o.UnloadWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lock takes an exclusive flock on o.PinDir, creating it, and returns its
// release. Registering, holding and releasing run under it, so that two
// processes never register twice or unregister what the other just held.
func lock(o Options) (func(), error) { return lockMode(o, unix.LOCK_EX) }

// lockMode takes a flock of mode (LOCK_EX or LOCK_SH) on o.PinDir.
func lockMode(o Options, mode int) (func(), error) {
	if err := os.MkdirAll(o.PinDir, 0o700); err != nil {
		return nil, fmt.Errorf("dctcp: %w", err)
	}
	fd, err := unix.Open(o.PinDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dctcp: open %s: %w", o.PinDir, err)
	}
	for {
		err = unix.Flock(fd, mode)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("dctcp: lock %s: %w", o.PinDir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// mountBPFFS makes sure o.PinDir lies on a BPF file system, mounting one
// at /sys/fs/bpf if that is where it should lie and nothing is mounted
// there (a machine without systemd, a container).
func mountBPFFS(o Options) error {
	dir := o.PinDir
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("dctcp: PinDir %s: %w", o.PinDir, err)
	}
	if st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if dir != bpffsRoot {
		return fmt.Errorf("dctcp: PinDir %s: %s is not a BPF file system (mount one: mount -t bpf bpf DIR)", o.PinDir, dir)
	}
	if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("dctcp: mount bpffs at %s: %w", bpffsRoot, err)
	}
	o.Logger.Info("mounted bpffs", zap.String("at", bpffsRoot))
	return nil
}

// explain adds what a load or attach error most likely means on this
// kind of machine, and the verifier's log when there is one.
func explain(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.As(err, &ve):
		return fmt.Errorf("%w\n%+v", err, ve)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w (needs root: CAP_BPF and CAP_NET_ADMIN)", err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%w (the kernel needs BPF struct_ops for tcp_congestion_ops: CONFIG_BPF_JIT, CONFIG_DEBUG_INFO_BTF, Linux ≥ 6.4 for links)", err)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%w (another congestion control of the same name registered meanwhile)", err)
	}
	return err
}

// setName makes name the name of the tcp_congestion_ops the kernel
// registers: the struct_ops map's initial value is the struct the
// program declares, which the loader copies into the kernel's by member.
func setName(spec *ebpf.CollectionSpec, name string) error {
	if name == Name {
		return nil
	}
	ms := spec.Maps[dctcpMapDctcp]
	st, ok := ms.Value.(*btf.Struct)
	if !ok || len(ms.Contents) != 1 {
		return fmt.Errorf("struct_ops map %s: unexpected layout", dctcpMapDctcp)
	}
	v, ok := ms.Contents[0].Value.([]byte)
	if !ok {
		return fmt.Errorf("struct_ops map %s: unexpected value %T", dctcpMapDctcp, ms.Contents[0].Value)
	}
	for _, m := range st.Members {
		if m.Name != "name" {
			continue
		}
		off := int(m.Offset.Bytes())
		if len(name) >= tcpCANameMax || off+tcpCANameMax > len(v) {
			return fmt.Errorf("congestion control name %q: want at most %d bytes", name, tcpCANameMax-1)
		}
		v = slices.Clone(v)
		clear(v[off : off+tcpCANameMax])
		copy(v[off:], name)
		ms.Contents[0].Value = v
		return nil
	}
	return fmt.Errorf("struct_ops map %s: no member name", dctcpMapDctcp)
}

// tcpCANameMax is the size of tcp_congestion_ops.name (TCP_CA_NAME_MAX).
const tcpCANameMax = 16
