package dataplane

import (
	"fmt"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Config is the switch's pipeline, typed. The config package turns a YAML
// file into one; tests build it directly.
type Config struct {
	Ports      []PortConfig
	Pools      []buffer.PoolConfig // the shared buffer pools ports draw from
	Forwarding Forwarding
	Classifier Classifier

	// Workers is the number of poll-mode workers (goroutines locked to OS
	// threads). Default 1. Ports are spread over them unless PortConfig.Worker says.
	Workers int
	// FrameSize is the size of an arena slot, the largest frame the switch
	// holds. Default 2048.
	FrameSize int
	// Frames is the number of arena slots per worker, a power of two. It
	// bounds how many packets a worker can hold in its queues, delay lines
	// and rings at once; it should exceed the buffer in frames. Default 16384.
	Frames int
	// Batch is the number of frames moved per Receive and Transmit. Default ports.BatchSize.
	Batch int
	// CPUs pins worker i's thread to CPUs[i % len(CPUs)], like DPDK lcores;
	// empty leaves the scheduling to the kernel.
	CPUs []int
	// Spin is how many idle polls a worker makes before it waits on its
	// ports; 0 means the default (256), negative means never wait (pure busy poll).
	Spin int
}

// PortConfig is one switch port: its egress queues, scheduler, shaper,
// buffer and markers.
type PortConfig struct {
	Name string

	// Scheduler configures the egress queues; its queue count is the port's.
	Scheduler scheduler.Config
	// Shaper drains the port at the emulated line rate; a zero Rate leaves the
	// port unshaped (it drains as fast as the device takes frames).
	Shaper scheduler.ShaperConfig

	// Pool is the index of the shared pool in Config.Pools.
	Pool int
	// Queues are the buffer settings of the egress queues, one per scheduler queue.
	Queues []buffer.QueueConfig

	// Enqueue and Dequeue are the marker chains at the two stages.
	Enqueue, Dequeue []MarkerSpec
	// NonECT says what a chain does with a packet it would mark that is not
	// ECN-capable: drop it (the default, as RED does) or pass it.
	NonECT marking.NonECT

	// Delay holds packets for a time before they reach the egress queue, to
	// emulate propagation delay; a held packet is not in the buffer.
	Delay Delay

	// Worker is the worker that owns the port (its RX and its egress); -1
	// (or any value when Workers is 1) lets the switch choose.
	Worker int
}

// MarkerSpec names a marker and makes one per port. The dataplane calls New
// once, with the port's queue count, when it builds the port.
type MarkerSpec struct {
	Name string
	New  func(queues int) (marking.Marker, error)
}

// Delay is the emulated delay of a port, applied per egress queue in FIFO
// order (a later packet never overtakes an earlier one of the same queue).
// Each packet gets Fixed plus, when Jitter is set, an extra delay drawn from
// Distribution. PerQueue overrides Fixed and Jitter for single queues.
type Delay struct {
	Fixed        time.Duration
	Jitter       time.Duration
	Distribution Distribution
	PerQueue     map[int]Delay
	Seed         uint64 // seed of the jitter's random source; fixed runs repeat exactly
}

// Distribution is how a delay line draws the jitter J of each packet.
type Distribution uint8

// Distributions.
const (
	Uniform     Distribution = iota // J uniform in [0, Jitter)
	Normal                          // J normal with mean 0 and standard deviation Jitter; the total never below 0
	Exponential                     // J exponential with mean Jitter
)

// ParseDistribution returns the distribution named s: uniform, normal or exponential.
func ParseDistribution(s string) (Distribution, error) {
	for d, name := range distributionNames {
		if s == name {
			return Distribution(d), nil
		}
	}
	return 0, fmt.Errorf("distribution %q is not one of uniform, normal, exponential", s)
}

var distributionNames = [...]string{"uniform", "normal", "exponential"}

func (d Distribution) String() string {
	if int(d) < len(distributionNames) {
		return distributionNames[d]
	}
	return "distribution(?)"
}

func (c *Config) setDefaults() error {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.Frames == 0 {
		c.Frames = 16384
	}
	if c.Batch == 0 {
		c.Batch = ports.BatchSize
	}
	if c.Spin == 0 {
		c.Spin = 256
	}
	switch {
	case len(c.Ports) == 0 || len(c.Ports) > 1024:
		return fmt.Errorf("ports: %d configured, want 1 to 1024", len(c.Ports))
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("workers: %d outside [1, 64]", c.Workers)
	case c.FrameSize < 128 || c.FrameSize > 65536:
		return fmt.Errorf("frame_size: %d outside [128, 65536]", c.FrameSize)
	case c.Frames < 64 || c.Frames > 1<<22 || c.Frames&(c.Frames-1) != 0:
		return fmt.Errorf("frames: %d is not a power of two in [64, %d]", c.Frames, 1<<22)
	case c.Batch < 1 || c.Batch > 1024:
		return fmt.Errorf("batch: %d outside [1, 1024]", c.Batch)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if int(p.Delay.Distribution) >= len(distributionNames) {
			return fmt.Errorf("ports[%d].delay.distribution: %d is not one of uniform, normal, exponential", i, p.Delay.Distribution)
		}
		if p.Delay.Fixed < 0 || p.Delay.Jitter < 0 {
			return fmt.Errorf("ports[%d].delay: negative delay %v + jitter %v", i, p.Delay.Fixed, p.Delay.Jitter)
		}
		for q, d := range p.Delay.PerQueue {
			if d.Fixed < 0 || d.Jitter < 0 {
				return fmt.Errorf("ports[%d].delay.per_queue[%d]: negative delay", i, q)
			}
		}
		if c.Workers > 1 && (p.Worker < -1 || p.Worker >= c.Workers) {
			return fmt.Errorf("ports[%d].worker: %d outside [0, %d] (or -1 to choose)", i, p.Worker, c.Workers-1)
		}
	}
	return nil
}
