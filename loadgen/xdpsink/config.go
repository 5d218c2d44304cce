package xdpsink

import (
	"fmt"
	"os"
)

// Defaults and limits of a Config.
const (
	DefaultFlows    = 1024
	DefaultWindow   = 8192
	DefaultRingSize = 1 << 20
	MaxFlows        = 1 << 16 // flow ids are 16 bits on the wire
	MinWindow       = 64
	MaxWindow       = 1 << 16 // a per-CPU map value holds at most 32 KiB (PCPU_MIN_UNIT_SIZE): Window/2 bytes
	// MaxWindowBytes bounds the windows' memory, Flows × CPUs × Window/2
	// bytes (2·Window/64 blocks of 16 bytes per flow and CPU).
	MaxWindowBytes = 1 << 30
)

// Config describes what a Program counts.
type Config struct {
	// Magic is the first two bytes of a generator's header.
	Magic uint16
	// Flows is how many flow ids are counted, 0..Flows−1; frames of a
	// higher flow id are counted as Unknown. 1 to MaxFlows; default
	// DefaultFlows.
	Flows int
	// Window is how many sequence numbers below the highest seen a flow
	// remembers to tell duplicates from reordered frames, a power of two
	// from MinWindow to MaxWindow; default DefaultWindow.
	Window int
	// Sample is the fraction of counted frames whose one-way latency is
	// sent to user space, 0 (none) to 1 (every frame).
	Sample float64
	// RingSize is the bytes of the sample ring, a power of two of at
	// least a page; default DefaultRingSize (43690 samples).
	RingSize int
}

// setDefaults fills in defaults and checks cfg for a machine of cpus
// possible CPUs.
func (c *Config) setDefaults(cpus int) error {
	if c.Flows == 0 {
		c.Flows = DefaultFlows
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	page := os.Getpagesize()
	switch {
	case c.Flows < 1 || c.Flows > MaxFlows:
		return fmt.Errorf("flows: %d: want 1 to %d", c.Flows, MaxFlows)
	case c.Window < MinWindow || c.Window > MaxWindow || c.Window&(c.Window-1) != 0:
		return fmt.Errorf("window: %d: want a power of two from %d to %d", c.Window, MinWindow, MaxWindow)
	case c.Sample < 0 || c.Sample > 1 || c.Sample != c.Sample:
		return fmt.Errorf("sample: %v: want a fraction from 0 to 1", c.Sample)
	case c.RingSize < page || c.RingSize > 1<<30 || c.RingSize&(c.RingSize-1) != 0:
		return fmt.Errorf("ring_size: %d bytes: want a power of two from %d to %d", c.RingSize, page, 1<<30)
	}
	if b := int64(c.Flows) * int64(cpus) * int64(c.Window) / 2; b > MaxWindowBytes {
		return fmt.Errorf("flows × window: %d × %d on %d CPUs take %d MiB of windows: want at most %d MiB (fewer flows or a smaller window)",
			c.Flows, c.Window, cpus, b>>20, MaxWindowBytes>>20)
	}
	return nil
}

// blocks is the number of 64-bit blocks in a flow's window ring.
func (c *Config) blocks() int { return 2 * c.Window / 64 }

// threshold is the sample fraction as a bound on a 32-bit random number:
// a frame is sampled when the high 32 bits of the CPU's xorshift64 state
// are below it.
func (c *Config) threshold() uint64 { return uint64(c.Sample * (1 << 32)) }
