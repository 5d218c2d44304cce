package timestamp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// correlateTries is how many brackets an offset measurement takes.
const correlateTries = 9

// ReadClock reads a kernel clock (unix.CLOCK_MONOTONIC, CLOCK_TAI, a
// PHC's clock ID) in ns. It is a system call: not for per-packet use.
func ReadClock(id int32) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// measureOrigin returns CLOCK_MONOTONIC at m's zero. Go's monotonic
// readings are CLOCK_MONOTONIC, so the origin is a constant; it is
// measured once by bracketing.
func measureOrigin(m *Monotonic) int64 {
	off, _ := Correlate(m.Now, func() int64 {
		t, err := ReadClock(unix.CLOCK_MONOTONIC)
		if err != nil {
			panic("timestamp: CLOCK_MONOTONIC: " + err.Error()) // cannot fail on Linux
		}
		return t
	}, correlateTries)
	return off
}

// OffsetTo returns the offset of kernel clock id from CLOCK_MONOTONIC
// (id − CLOCK_MONOTONIC, in ns) and the width of the bracket measuring
// it. CLOCK_TAI's offset moves only when the wall clock is stepped.
func OffsetTo(id int32) (offset, width int64, err error) {
	var rerr error
	read := func(id int32) func() int64 {
		return func() int64 {
			t, err := ReadClock(id)
			if err != nil && rerr == nil {
				rerr = err
			}
			return t
		}
	}
	offset, width = Correlate(read(unix.CLOCK_MONOTONIC), read(id), correlateTries)
	return offset, width, rerr
}

// PHC is a PTP hardware clock, /dev/ptpN: the clock a NIC's hardware
// timestamps are read from.
type PHC struct {
	f     *os.File
	index int
	id    int32
}

// OpenPHC opens /dev/ptp<index>; ethtool -T names a device's index
// ("PTP Hardware Clock: N").
func OpenPHC(index int) (*PHC, error) {
	if index < 0 {
		return nil, fmt.Errorf("timestamp: PHC index %d: must be ≥ 0 (ethtool -T reports none for this device)", index)
	}
	path := "/dev/ptp" + strconv.Itoa(index)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("timestamp: open PHC: %w", err)
	}
	return &PHC{f: f, index: index, id: unix.FdToClockID(int(f.Fd()))}, nil
}

// Name returns "phcN".
func (p *PHC) Name() string { return "phc" + strconv.Itoa(p.index) }

// Now reads the PHC, in ns.
func (p *PHC) Now() (int64, error) { return ReadClock(p.id) }

// Offset returns PHC − CLOCK_MONOTONIC in ns and the width of the
// narrowest bracket that measured it. It asks the driver for brackets
// (PTP_SYS_OFFSET_EXTENDED with a CLOCK_MONOTONIC system clock, Linux
// 6.11+), and brackets clock_gettime calls itself where the driver or
// kernel cannot.
func (p *PHC) Offset() (offset, width int64, err error) {
	req := unix.PtpSysOffsetExtended{Samples: correlateTries, Clockid: unix.CLOCK_MONOTONIC}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, p.f.Fd(), unix.PTP_SYS_OFFSET_EXTENDED, uintptr(unsafe.Pointer(&req)))
	if e == 0 {
		var bs [correlateTries]Bracket
		for i := range bs {
			t := req.Ts[i]
			bs[i] = Bracket{Before: ptpNanos(t[0]), Foreign: ptpNanos(t[1]), After: ptpNanos(t[2])}
		}
		if o, w, ok := BestOffset(bs[:]); ok {
			return o, w, nil
		}
	}
	if e != 0 && !errors.Is(e, unix.EINVAL) && !errors.Is(e, unix.EOPNOTSUPP) && !errors.Is(e, unix.ENOTTY) {
		return 0, 0, fmt.Errorf("timestamp: %s: PTP_SYS_OFFSET_EXTENDED: %w", p.Name(), e)
	}
	return OffsetTo(p.id)
}

// Close closes the device.
func (p *PHC) Close() error { return p.f.Close() }

func ptpNanos(t unix.PtpClockTime) int64 { return t.Sec*int64(time.Second) + int64(t.Nsec) }
