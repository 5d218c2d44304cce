package dataplane

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ppollRaw sleeps in ppoll(2) on fds for at most ts as a raw system call:
// the worker keeps its P (the Go scheduler's slot to run Go code), so that
// when its ports or its timer wake it, it runs at once instead of waiting
// for a P behind the process's other goroutines. The caller must leave the
// process enough Ps for everything else (Switch.Run does).
func ppollRaw(fds []unix.PollFd, ts *unix.Timespec) {
	unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
}

// nanosleepRaw sleeps for ts as a raw system call, keeping the P (see
// ppollRaw).
func nanosleepRaw(ts *unix.Timespec) {
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(ts)), 0, 0)
}
