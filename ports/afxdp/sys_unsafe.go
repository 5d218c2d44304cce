//go:build linux

package afxdp

// Every use of package unsafe in ports/afxdp is in this file: turning ring
// mappings into typed views, and the socket options and ioctls x/sys has no
// typed wrapper for.

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// u32At returns a pointer to the uint32 at mem[off]; the kernel aligns
// every ring index and flags word.
func u32At(mem []byte, off uint64) *uint32 {
	return (*uint32)(unsafe.Pointer(&mem[off]))
}

// addrsAt views mem[off:] as n UMEM addresses (fill and completion rings);
// the caller has checked that the mapping holds them.
func addrsAt(mem []byte, off uint64, n uint32) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off])), n)
}

// descsAt views mem[off:] as n XDP descriptors (RX and TX rings); the
// caller has checked that the mapping holds them.
func descsAt(mem []byte, off uint64, n uint32) []unix.XDPDesc {
	return unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off])), n)
}

const sizeofXDPDesc = uint64(unsafe.Sizeof(unix.XDPDesc{}))

func getsockopt(fd, opt int, p unsafe.Pointer, size uintptr) (uintptr, error) {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return uintptr(l), nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n, err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	if err != nil {
		return off, err
	}
	if n != unsafe.Sizeof(off) {
		// Kernels before 5.4 have no flags offsets and so no need-wakeup.
		return off, fmt.Errorf("XDP_MMAP_OFFSETS returned %d bytes, want %d (kernel older than 5.4): %w",
			n, unsafe.Sizeof(off), ErrNotSupported)
	}
	return off, nil
}

func statistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	_, err := getsockopt(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

func xdpOptions(fd int) (uint32, error) {
	var flags uint32
	_, err := getsockopt(fd, unix.XDP_OPTIONS, unsafe.Pointer(&flags), unsafe.Sizeof(flags))
	return flags, err
}

func registerUMEM(fd int, mem []byte, frameSize int) error {
	return registerUMEMMeta(fd, mem, frameSize, 0, 0)
}

// registerUMEMMeta registers mem with TX metadata of txMetaLen bytes in
// front of every TX frame (XSK TX metadata; 0 for none).
func registerUMEMMeta(fd int, mem []byte, frameSize int, flags, txMetaLen uint32) error {
	reg := unix.XDPUmemReg{
		Addr:            uint64(uintptr(unsafe.Pointer(&mem[0]))),
		Len:             uint64(len(mem)),
		Size:            uint32(frameSize),
		Flags:           flags,
		Tx_metadata_len: txMetaLen,
	}
	return setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
}

// ifreqData is struct ifreq with ifr_data, the layout SIOCETHTOOL takes.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

func ethtool(fd int, ifname string, data unsafe.Pointer) error {
	var ifr ifreqData
	if len(ifname) >= len(ifr.name) {
		return unix.EINVAL
	}
	copy(ifr.name[:], ifname)
	ifr.data = data
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e != 0 {
		return e
	}
	return nil
}

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                         uint32
	maxRx, maxTx, maxOther, maxCombined         uint32
	rxCount, txCount, otherCount, combinedCount uint32
}

// rxChannels returns the RX queue count ETHTOOL_GCHANNELS reports
// (rx + combined).
func rxChannels(fd int, ifname string) (int, error) {
	ch := ethtoolChannels{cmd: unix.ETHTOOL_GCHANNELS}
	if err := ethtool(fd, ifname, unsafe.Pointer(&ch)); err != nil {
		return 0, err
	}
	return int(ch.rxCount + ch.combinedCount), nil
}

// ethtoolValue reads (get) or writes (set) a struct ethtool_value command
// such as ETHTOOL_GGRO / ETHTOOL_SGRO.
func ethtoolValue(fd int, ifname string, cmd, value uint32) (uint32, error) {
	v := [2]uint32{cmd, value}
	if err := ethtool(fd, ifname, unsafe.Pointer(&v)); err != nil {
		return 0, err
	}
	return v[1], nil
}

// offsetIn returns the offset of b's first byte in mem when it lies inside
// mem: how a Port recognises a frame of its UMEM in a caller's descriptor.
func offsetIn(mem, b []byte) (uint64, bool) {
	if len(mem) == 0 || cap(b) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base >= uintptr(len(mem)) {
		return 0, false
	}
	return uint64(p - base), true
}

// testRunAttr is the BPF_PROG_TEST_RUN part of union bpf_attr.
type testRunAttr struct {
	progFD, retval    uint32
	dataSizeIn        uint32
	dataSizeOut       uint32
	dataIn, dataOut   uint64
	repeat, duration  uint32
	ctxSizeIn         uint32
	ctxSizeOut        uint32
	ctxIn, ctxOut     uint64
	flags, cpu, batch uint32
	_                 uint32
}

// xdpMD is struct xdp_md, the context BPF_PROG_TEST_RUN takes for XDP.
type xdpMD struct {
	data, dataEnd, dataMeta uint32
	ingressIfindex, rxQueue uint32
	egressIfindex           uint32
}

// setInput points a at data (metadata of metaLen bytes, then the frame)
// and at ctx, which it fills to match.
func (a *testRunAttr) setInput(data []byte, metaLen int, ctx *xdpMD) {
	ctx.data, ctx.dataEnd = uint32(metaLen), uint32(len(data))
	a.dataIn, a.dataSizeIn = uint64(uintptr(unsafe.Pointer(&data[0]))), uint32(len(data))
	a.ctxIn, a.ctxSizeIn = uint64(uintptr(unsafe.Pointer(ctx))), uint32(unsafe.Sizeof(*ctx))
}

// testRun issues BPF_PROG_TEST_RUN. It cannot block for long (the kernel
// runs the program repeat times, yielding the CPU when asked to), so it is
// a raw system call: the worker keeps its P, and the Go scheduler does not
// hand it off mid-batch.
func testRun(a *testRunAttr) unix.Errno {
	_, _, e := unix.RawSyscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a))
	return e
}

// txqAt views the mmapped transmit queue: its next-descriptor word and n
// descriptors from off.
func txqAt(mem []byte, off uint64, n int) (*uint32, []txDesc) {
	return u32At(mem, 0), unsafe.Slice((*txDesc)(unsafe.Pointer(&mem[off])), n)
}

// nsID names a network namespace: the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

// threadNSPath is the calling thread's network namespace, NUL-terminated
// so that threadNetns allocates nothing. It is never written.
var threadNSPath = [...]byte{'/', 'p', 'r', 'o', 'c', '/', 't', 'h', 'r', 'e', 'a', 'd', '-', 's', 'e', 'l', 'f',
	'/', 'n', 's', '/', 'n', 'e', 't', 0}

// threadNetns returns the calling thread's network namespace.
func threadNetns() (nsID, error) {
	var st unix.Stat_t
	cwd := unix.AT_FDCWD // a variable: the negative constant does not convert to uintptr
	_, _, e := unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(cwd), uintptr(unsafe.Pointer(&threadNSPath[0])),
		uintptr(unsafe.Pointer(&st)), 0, 0, 0)
	if e != 0 {
		return nsID{}, e
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// ethtoolStats reads ifname's driver statistics (ethtool -S): the names
// of string set ETH_SS_STATS and their values.
func ethtoolStats(fd int, ifname string) (map[string]uint64, error) {
	n, names, err := ethtoolStatNames(fd, ifname)
	if err != nil || n == 0 {
		return nil, err
	}
	vals := make([]uint64, 1+n) // cmd and n_stats in the first word, then the values
	*(*[2]uint32)(unsafe.Pointer(&vals[0])) = [2]uint32{unix.ETHTOOL_GSTATS, uint32(n)}
	if err := ethtool(fd, ifname, unsafe.Pointer(&vals[0])); err != nil {
		return nil, err
	}
	m := make(map[string]uint64, n)
	for i, name := range names {
		m[name] = vals[1+i]
	}
	return m, nil
}

// refusals reads a device's count of redirected frames it refused
// (ethtool -S counters ending in xdp_xmit_errors: veth's peer ring was
// full) from the data path, without allocating: the counters' indices in
// the device's statistics are found once, and ETHTOOL_GSTATS fills a
// buffer kept for it.
type refusals struct {
	fd  int
	ifr ifreqData
	buf []uint64 // ethtool_stats: cmd and n_stats, then the values
	idx []int
}

// newRefusals returns nil when the device keeps no such counters.
func newRefusals(ifname string) (*refusals, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	st, names, err := ethtoolStatNames(fd, ifname)
	if err != nil || st == 0 {
		unix.Close(fd)
		return nil, err
	}
	r := &refusals{fd: fd, buf: make([]uint64, 1+st)}
	for i, n := range names {
		if strings.HasSuffix(n, "xdp_xmit_errors") {
			r.idx = append(r.idx, i)
		}
	}
	if len(r.idx) == 0 {
		unix.Close(fd)
		return nil, nil
	}
	copy(r.ifr.name[:], ifname)
	r.ifr.data = unsafe.Pointer(&r.buf[0])
	return r, nil
}

// read returns the sum of the counters, or 0 if the ioctl fails.
func (r *refusals) read() uint64 {
	*(*[2]uint32)(unsafe.Pointer(&r.buf[0])) = [2]uint32{unix.ETHTOOL_GSTATS, uint32(len(r.buf) - 1)}
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(r.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&r.ifr))); e != 0 {
		return 0
	}
	var n uint64
	for _, i := range r.idx {
		n += r.buf[1+i]
	}
	return n
}

func (r *refusals) close() { unix.Close(r.fd) }

// ethtoolStatNames returns the number of ifname's driver statistics and
// their names.
func ethtoolStatNames(fd int, ifname string) (int, []string, error) {
	const ethSSStats, gstringLen = 1, 32
	info := struct {
		cmd, reserved uint32
		mask          uint64
		n             uint32
	}{cmd: unix.ETHTOOL_GSSET_INFO, mask: 1 << ethSSStats}
	if err := ethtool(fd, ifname, unsafe.Pointer(&info)); err != nil {
		return 0, nil, err
	}
	if info.mask == 0 || info.n == 0 {
		return 0, nil, nil
	}
	n := int(info.n)
	strs := make([]byte, 12+n*gstringLen)
	*(*[3]uint32)(unsafe.Pointer(&strs[0])) = [3]uint32{unix.ETHTOOL_GSTRINGS, ethSSStats, uint32(n)}
	if err := ethtool(fd, ifname, unsafe.Pointer(&strs[0])); err != nil {
		return 0, nil, err
	}
	names := make([]string, n)
	for i := range n {
		name := strs[12+i*gstringLen : 12+(i+1)*gstringLen]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		names[i] = string(name)
	}
	return n, names, nil
}
