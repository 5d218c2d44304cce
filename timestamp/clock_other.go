//go:build !linux

package timestamp

// measureOrigin has no CLOCK_MONOTONIC to read outside Linux: hardware
// stamps are a Linux feature.
func measureOrigin(*Monotonic) int64 { return 0 }
