package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Config is a validated switch configuration with every default filled
// in. Parse and Load make one; Dataplane turns it into the switch's
// pipeline, and Ports carries what the daemon needs to open each port.
type Config struct {
	LogLevel  string // debug, info, warn or error
	Workers   int
	Frames    int
	FrameSize int
	Batch     int
	Spin      int   // idle polls before a worker waits; -1 never waits (busy_poll)
	CPUs      []int // CPUs the process runs on; worker i is pinned to CPUs[i % len]; empty means no pinning

	Telemetry Telemetry
	Pools     []Pool

	Forwarding dataplane.Forwarding // port names resolved to indexes
	Classifier dataplane.Classifier
	Ports      []Port

	Capture Capture
}

// Telemetry configures the telemetry HTTP server.
type Telemetry struct {
	Enabled           bool
	Listen            string        // host:port
	QueueSamplePeriod time.Duration // period of the queue-depth sampler
	QueueSamples      int           // length of the sampler's ring
}

// Pool is one named shared buffer pool.
type Pool struct {
	Name string
	Size int64 // bytes
}

// Port is one switch port: the device to open and its egress pipeline.
type Port struct {
	Name      string
	Interface string        // the network interface ecnswitch drives
	AFXDP     afxdp.Options // Logger left nil for the daemon to set

	Scheduler scheduler.Config // LineRate is the shaper's rate
	Shaper    scheduler.ShaperConfig
	Pool      int                  // index in Config.Pools
	Buffer    []buffer.QueueConfig // one per queue
	Markers   []Marker             // enqueue and dequeue, in file order
	NonECT    marking.NonECT
	Delay     dataplane.Delay
	Worker    int // -1: the switch chooses
}

// Marker is one configured marker.
type Marker struct {
	Key    string // its path in the file, e.g. ports[0].markers.enqueue[1]
	Scheme string
	Stage  marking.Stage
	Params string // the parameters as written, for summaries
	// Specs are the chain members the marker adds to its stage: one, or
	// two for BCC (per-port standard ECN and shared-pool RED, 002 §IV-B).
	Specs []dataplane.MarkerSpec
}

// Load reads and parses the config file at path. Errors name the file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s:\n%w", path, err)
	}
	return c, nil
}

// Parse decodes a YAML config strictly and validates it. The error, if
// any, is an Errors listing every problem found, each naming its key, the
// value and the allowed range.
func Parse(data []byte) (*Config, error) {
	f, ix, err := decodeFile(data)
	if err != nil {
		return nil, err
	}
	c := &checker{ix: ix}
	cfg := c.config(f)
	if len(c.errs) > 0 {
		return nil, c.sorted()
	}
	return cfg, nil
}

// Dataplane returns the switch pipeline the config describes. Each call
// returns fresh slices, so dataplane.New may change them.
func (c *Config) Dataplane() (dataplane.Config, error) {
	if len(c.Ports) == 0 {
		return dataplane.Config{}, errors.New("config: no ports; make the Config with Parse or Load")
	}
	dc := dataplane.Config{
		Workers:   c.Workers,
		FrameSize: c.FrameSize,
		Frames:    c.Frames,
		Batch:     c.Batch,
		Spin:      c.Spin,
		CPUs:      slices.Clone(c.CPUs),
		Classifier: dataplane.Classifier{
			DSCP:   cloneMap(c.Classifier.DSCP),
			UsePCP: c.Classifier.UsePCP,
			PCP:    cloneMap(c.Classifier.PCP),
		},
		Forwarding: c.Forwarding,
	}
	dc.Forwarding.Patches = slices.Clone(c.Forwarding.Patches)
	dc.Forwarding.MACs = slices.Clone(c.Forwarding.MACs)
	dc.Forwarding.Prefixes = slices.Clone(c.Forwarding.Prefixes)
	for _, p := range c.Pools {
		dc.Pools = append(dc.Pools, buffer.PoolConfig{Size: p.Size})
	}
	for _, p := range c.Ports {
		pc := dataplane.PortConfig{
			Name:      p.Name,
			Scheduler: p.Scheduler,
			Shaper:    p.Shaper,
			Pool:      p.Pool,
			Queues:    slices.Clone(p.Buffer),
			NonECT:    p.NonECT,
			Delay:     p.Delay,
			Worker:    p.Worker,
		}
		pc.Scheduler.Queues = slices.Clone(p.Scheduler.Queues)
		pc.Delay.PerQueue = cloneMap(p.Delay.PerQueue)
		for _, m := range p.Markers {
			if m.Stage == marking.Dequeue {
				pc.Dequeue = append(pc.Dequeue, m.Specs...)
			} else {
				pc.Enqueue = append(pc.Enqueue, m.Specs...)
			}
		}
		dc.Ports = append(dc.Ports, pc)
	}
	return dc, nil
}

// PortNames returns the ports' names in order.
func (c *Config) PortNames() []string {
	names := make([]string, len(c.Ports))
	for i, p := range c.Ports {
		names[i] = p.Name
	}
	return names
}

// PoolNames returns the pools' names in order.
func (c *Config) PoolNames() []string {
	names := make([]string, len(c.Pools))
	for i, p := range c.Pools {
		names[i] = p.Name
	}
	return names
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
