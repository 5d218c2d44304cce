package testbed

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqData is struct ifreq with its union read as ifr_data (a pointer).
// The field is an unsafe.Pointer, not a uintptr, so the buffer it points to
// stays alive and in place while the kernel reads and writes it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolIoctl issues one SIOCETHTOOL request on fd, whose network namespace
// picks the interface. buf is the command's struct (it starts with the
// command number) and receives the kernel's answer.
func ethtoolIoctl(fd int, ifname string, buf []byte) error {
	ifr := &ifreqData{data: unsafe.Pointer(&buf[0])}
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}
