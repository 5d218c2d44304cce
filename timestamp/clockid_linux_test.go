package timestamp

import "golang.org/x/sys/unix"

const (
	clockMonotonic = unix.CLOCK_MONOTONIC
	clockTAI       = unix.CLOCK_TAI
)
