package dataplane

import (
	"fmt"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Defaults and limits of a Config. Package config reads them for its YAML
// keys; nothing else repeats them.
const (
	DefaultWorkers = 1
	MaxWorkers     = 64 // a port's owner is a uint8 and workers pin like DPDK lcores
	MaxPorts       = 1024

	DefaultFrameSize = 2048 // bytes per arena slot
	MinFrameSize     = 128
	MaxFrameSize     = 65536
	DefaultFrames    = 16384 // arena slots per worker, a power of two
	MinFrames        = 64
	MaxFrames        = 1 << 22
	DefaultBatch     = ports.BatchSize
	MaxBatch         = 1024
	DefaultSpin      = 16      // idle polls before a worker waits on its ports
	MaxSpin          = 1 << 30 // idle polls; Spin < 0 never waits
	MaxCPU           = 1023    // the highest CPU a worker can be pinned to (unix.CPUSet)
	MaxMarkers       = 255     // markers per port, enqueue and dequeue together
	MaxDelay         = time.Second

	// DefaultPoolSize is the shared buffer of a switch that names no pool:
	// the MQ-ECN/TCN kernel module's shared_buffer, 2 MB.
	DefaultPoolSize = 2_000_000
	// DefaultAlpha is the Dynamic Threshold α of a queue that sets neither
	// α nor a static cap.
	DefaultAlpha = 1.0

	DefaultAgeTime   = 300 * time.Second // a learned MAC's lifetime, as on most switches
	MinAgeTime       = time.Second
	MaxAgeTime       = 24 * time.Hour
	DefaultTableSize = 4096 // learning table slots
	MaxTableSize     = 1 << 24

	// DefaultBucketMin and DefaultBucketTime give a shaped port's default
	// token bucket, DefaultBucket.
	DefaultBucketMin  = 2500                  // bytes: 001 §4.2's 2.5 KB bucket
	DefaultBucketTime = 20 * time.Microsecond // the HKUST module's bucket_ns; 2.5 KB at 1 Gbit/s
)

// DefaultBucket is the token bucket of a port shaped to rate bit/s that
// configures none: the bytes of DefaultBucketTime at the rate, at least
// DefaultBucketMin (001 §4.2); 0 for an unshaped port.
func DefaultBucket(rate int64) int64 {
	if rate <= 0 {
		return 0
	}
	return max(DefaultBucketMin, rate*int64(DefaultBucketTime)/8e9)
}

// Config is the switch's pipeline, typed. The config package turns a YAML
// file into one; tests build it directly.
type Config struct {
	Ports      []PortConfig
	Pools      []buffer.PoolConfig // the shared buffer pools ports draw from
	Forwarding Forwarding
	Classifier Classifier

	// Workers is the number of poll-mode workers (goroutines locked to OS
	// threads), 1 to MaxWorkers; 0 means DefaultWorkers. Ports are spread
	// over them unless PortConfig.Worker says.
	Workers int
	// FrameSize is the size of an arena slot, the largest frame the switch
	// holds, MinFrameSize to MaxFrameSize; 0 means DefaultFrameSize.
	FrameSize int
	// Frames is the number of arena slots per worker, a power of two,
	// MinFrames to MaxFrames; 0 means DefaultFrames. It bounds how many
	// packets a worker holds at once in its queues, delay lines and rings:
	// while all are held, what its ports receive is dropped with reason
	// arena_empty, before the buffer's admission sees it. Keep it above
	// what the pools hold in the smallest frames (pool bytes / 64) plus
	// what the delay lines hold (the packets arriving during a delay), or
	// a flood of small frames meets this limit before the buffer's. New
	// cannot check that: pools are in bytes, and a delay line's packets
	// depend on the traffic.
	Frames int
	// Batch is the number of frames moved per Receive and Transmit, 1 to
	// MaxBatch; 0 means DefaultBatch (ports.BatchSize).
	Batch int
	// CPUs pins worker i's thread to CPUs[i % len(CPUs)], like DPDK lcores;
	// empty leaves the scheduling to the kernel.
	CPUs []int
	// Spin is how many idle polls a worker makes before it sleeps until
	// its next deadline or an arrival (ppoll on its ports), up to MaxSpin;
	// 0 means DefaultSpin. Negative means never sleep: the worker spins on
	// its ports forever, a core each. (This is the worker's own loop, not
	// the kernel's SO_BUSY_POLL.)
	Spin int

	// Priority, when not 0, runs the workers in the real-time class
	// SCHED_FIFO at this priority, 1 to 99: a worker then runs the moment
	// its timer (its next departure) or its ports wake it, ahead of every
	// ordinary thread, and yields the CPU whenever it sleeps. On a machine
	// shared with the hosts whose TCP it forwards this keeps the virtual
	// line's batches on time. With Spin < 0 (never sleep) the kernel's
	// real-time throttling (sched_rt_runtime_us) is all that leaves the
	// CPU to anything else. Needs CAP_SYS_NICE. 0 leaves the workers in the
	// ordinary class.
	Priority int

	// Memory is where the workers' frame arenas live: nil allocates them
	// on the Go heap; an AF_XDP UMEM shared with the ports (afxdp.UMEM)
	// lets frames move from port to port without a copy.
	Memory FrameSource
}

// FrameSource hands out frame buffers that ports can receive into and
// transmit from without copying, such as an AF_XDP UMEM.
type FrameSource interface {
	// Frames returns n buffers of equal length, each the usable part of
	// one frame, or an error when it has not that many left.
	Frames(n int) ([][]byte, error)
}

// MaxPriority is the highest SCHED_FIFO priority (Config.Priority).
const MaxPriority = 99

// Egress defaults and limits.
const (
	// DefaultCoalesce is PortConfig.Coalesce's default: chosen by
	// measurement (docs/results/egress.md).
	DefaultCoalesce = 50 * time.Microsecond
	// MaxCoalesce bounds PortConfig.Coalesce.
	MaxCoalesce = 10 * time.Millisecond
)

// PortConfig is one switch port: its egress queues, scheduler, shaper,
// buffer and markers.
type PortConfig struct {
	Name string

	// Scheduler configures the egress queues; its queue count is the port's.
	Scheduler scheduler.Config
	// DualQ configures the coupled AQM and the classifier of a port whose
	// scheduler is a scheduler.DualQ; it must be zero on other ports.
	DualQ DualQ
	// Shaper drains the port at the emulated line rate; a zero Rate leaves the
	// port unshaped (it drains as fast as the device takes frames).
	Shaper scheduler.ShaperConfig

	// Pool is the index of the shared pool in Config.Pools.
	Pool int
	// Queues are the buffer settings of the egress queues, one per scheduler queue.
	Queues []buffer.QueueConfig

	// Enqueue and Dequeue are the marker chains at the two stages.
	Enqueue, Dequeue []MarkerSpec
	// Trim, when set, trims what the port's admission refuses instead of
	// dropping it (see Trim).
	Trim *Trim
	// Reshape, when set, is offered every packet the buffer or an enqueue
	// marker refuses, and may make one the port can still carry out of
	// it, instead of a drop (see Reshaper). Trim is the Reshaper ecnswitch
	// has; a port has Trim or Reshape, not both.
	Reshape Reshaper
	// NonECT says what a chain does with a packet it would mark that is not
	// ECN-capable: drop it (the default, as RED does) or pass it.
	NonECT marking.NonECT

	// Delay holds packets for a time before they reach the egress queue, to
	// emulate propagation delay; a held packet is not in the buffer.
	Delay Delay

	// INT, when set, adds this hop's in-band telemetry record to the UDP
	// packets that carry INT headers as they leave (see INT).
	INT *INT

	// Coalesce bounds how long a packet that has left the queue on the
	// port's virtual line (the ideal line at the shaper's rate, which every
	// marker, sojourn and round time follows exactly) may wait before the
	// worker hands it to the device together with the packets that leave
	// after it: physical transmit is batched, the science is not. It adds
	// at most Coalesce to a packet's latency and lets at most Coalesce·C
	// bytes leave in one burst. 0 means DefaultCoalesce; negative means
	// none (each packet goes to the device at its departure time, which
	// costs a worker wake-up per packet). At most MaxCoalesce.
	Coalesce time.Duration

	// Worker is the worker that owns the port (its RX and its egress); -1
	// (or any value when Workers is 1) lets the switch choose.
	Worker int
}

// Reshaper turns a packet that a port's admission refused (the buffer's
// Dynamic Threshold, a static cap or a full pool, or an enqueue marker's
// drop; why says which) into one the port can still carry: packet trimming
// cuts it to its headers for a priority queue, as SAI's trim on failed
// admission does. Reshape changes d in place (its length, headers, DSCP)
// and returns the queue to admit it to, or ok false to let it be dropped.
// The reshaped packet is admitted to that queue like any other (it may be
// refused there, and is then dropped) but passes no enqueue marker. Reshape
// runs on the port's worker, once per refused packet: it must not block,
// lock or allocate.
type Reshaper interface {
	Reshape(d *packet.Desc, why DropReason) (queue int, ok bool)
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

// Validate checks c as New does, with the defaults of its zero fields,
// and builds nothing: the switch's keys, the buffer, every port's
// scheduler, shaper and delay, forwarding and classification. Markers are
// checked when they are built (MarkerSpec.New), by New or by whoever made
// them. The error names the first bad key, its value and the allowed
// range.
func (c Config) Validate() error {
	if err := c.setDefaults(); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	bc := buffer.Config{Pools: c.Pools}
	maxQueues := 1
	for i, pc := range c.Ports {
		bc.Ports = append(bc.Ports, buffer.PortConfig{Pool: pc.Pool, Queues: pc.Queues})
		sc := pc.Scheduler
		if sc.Capacity == 0 {
			sc.Capacity = c.Frames // as New sizes the queue rings
		}
		nq, err := pc.validate(sc)
		if err != nil {
			return fmt.Errorf("dataplane: ports[%d] (%s): %w", i, pc.Name, err)
		}
		maxQueues = max(maxQueues, nq)
	}
	if err := bc.Validate(); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	if err := c.Forwarding.validate(len(c.Ports)); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	if err := c.Classifier.validate(maxQueues); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	return nil
}

// validate checks the port's pieces with scheduler sc and returns its
// queue count.
func (pc *PortConfig) validate(sc scheduler.Config) (int, error) {
	if err := sc.Validate(); err != nil {
		return 0, err
	}
	nq := sc.QueueCount()
	if len(pc.Queues) != nq {
		return 0, fmt.Errorf("queues: %d buffer queue configs for %d scheduler queues", len(pc.Queues), nq)
	}
	if _, err := scheduler.NewShaper(pc.Shaper, 0); err != nil { // a few words, no state
		return 0, err
	}
	if err := pc.validateTrim(nq); err != nil {
		return 0, err
	}
	if err := pc.DualQ.validate(sc.Kind); err != nil {
		return 0, err
	}
	if err := pc.INT.validate(pc.Shaper.Rate); err != nil {
		return 0, err
	}
	return nq, pc.Delay.validate(nq)
}

// validateTrim checks the port's Trim, if any, for nq queues.
func (pc *PortConfig) validateTrim(nq int) error {
	if pc.Trim == nil {
		return nil
	}
	if pc.Reshape != nil {
		return fmt.Errorf("trim: set with a Reshaper; a port has one or the other")
	}
	if pc.Scheduler.Kind == scheduler.DualQ {
		return fmt.Errorf("trim: set on a DualQ port, whose two queues carry the Classic and the L4S traffic; trimmed headers need a queue of their own")
	}
	if err := pc.Trim.validate(nq); err != nil {
		return err
	}
	return pc.Trim.checkRoom(pc.Queues)
}

func (c *Config) setDefaults() error {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.Frames == 0 {
		c.Frames = DefaultFrames
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	switch {
	case len(c.Ports) == 0 || len(c.Ports) > MaxPorts:
		return fmt.Errorf("ports: %d configured, want 1 to %d", len(c.Ports), MaxPorts)
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("workers: %d outside [1, %d]", c.Workers, MaxWorkers)
	case c.FrameSize < MinFrameSize || c.FrameSize > MaxFrameSize:
		return fmt.Errorf("frame_size: %d outside [%d, %d]", c.FrameSize, MinFrameSize, MaxFrameSize)
	case c.Frames < MinFrames || c.Frames > MaxFrames || c.Frames&(c.Frames-1) != 0:
		return fmt.Errorf("frames: %d is not a power of two in [%d, %d]", c.Frames, MinFrames, MaxFrames)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("batch: %d outside [1, %d]", c.Batch, MaxBatch)
	case c.Spin > MaxSpin:
		return fmt.Errorf("spin: %d outside [1, %d] (or negative: never sleep)", c.Spin, MaxSpin)
	}
	for i, cpu := range c.CPUs {
		if cpu < 0 || cpu > MaxCPU {
			return fmt.Errorf("cpus[%d]: %d outside [0, %d]", i, cpu, MaxCPU)
		}
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if int(p.Delay.Distribution) >= len(distributionNames) {
			return fmt.Errorf("ports[%d].delay.distribution: %d is not one of uniform, normal, exponential", i, p.Delay.Distribution)
		}
		if !delayInRange(p.Delay) {
			return fmt.Errorf("ports[%d].delay: delay %v + jitter %v outside [0, %v]", i, p.Delay.Fixed, p.Delay.Jitter, MaxDelay)
		}
		for q, d := range p.Delay.PerQueue {
			if !delayInRange(d) {
				return fmt.Errorf("ports[%d].delay.per_queue[%d]: delay %v + jitter %v outside [0, %v]", i, q, d.Fixed, d.Jitter, MaxDelay)
			}
		}
		if p.Coalesce == 0 {
			p.Coalesce = DefaultCoalesce
		}
		if p.Coalesce > MaxCoalesce {
			return fmt.Errorf("ports[%d].coalesce: %v above %v", i, p.Coalesce, MaxCoalesce)
		}
		if c.Workers > 1 && (p.Worker < -1 || p.Worker >= c.Workers) {
			return fmt.Errorf("ports[%d].worker: %d outside [0, %d] (or -1 to choose)", i, p.Worker, c.Workers-1)
		}
		if n := len(p.Enqueue) + len(p.Dequeue); n > MaxMarkers {
			return fmt.Errorf("ports[%d].markers: %d configured, at most %d", i, n, MaxMarkers)
		}
	}
	return nil
}

// delayInRange reports whether d's fixed delay and jitter each lie in [0, MaxDelay].
func delayInRange(d Delay) bool {
	return d.Fixed >= 0 && d.Fixed <= MaxDelay && d.Jitter >= 0 && d.Jitter <= MaxDelay
}
