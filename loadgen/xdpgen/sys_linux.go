//go:build linux

package xdpgen

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

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

// xdpMD is struct xdp_md, the context BPF_PROG_TEST_RUN takes for XDP:
// data is the metadata's length in the input.
type xdpMD struct {
	data, dataEnd, dataMeta uint32
	ingressIfindex, rxQueue uint32
	egressIfindex           uint32
}

// setInput points a at data and ctx.
func (a *testRunAttr) setInput(data []byte, ctx *xdpMD) {
	a.dataIn, a.dataSizeIn = uint64(uintptr(unsafe.Pointer(&data[0]))), uint32(len(data))
	a.ctxIn, a.ctxSizeIn = uint64(uintptr(unsafe.Pointer(ctx))), uint32(unsafe.Sizeof(*ctx))
}

// testRun issues BPF_PROG_TEST_RUN. cilium/ebpf's Program.Run retries a
// run a signal interrupted; this returns EINTR, which is how a long run is
// stopped. It is a blocking system call to the Go scheduler (a long run
// takes seconds), so the thread's P goes to other goroutines meanwhile.
func testRun(a *testRunAttr) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a))
	return e
}
