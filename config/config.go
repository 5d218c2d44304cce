package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// Config is a validated configuration file: the switch it describes, as a
// dataplane.Config, plus what only the daemon needs — the devices to open,
// telemetry, capture, logging. Parse and Load make one, with every default
// filled in.
//
// Parse builds every marker once, to check the scheme's parameters; the
// first switch made from Dataplane gets those markers, and a later one
// gets markers built anew from the same parameters, so that no two
// switches share a marker's state.
type Config struct {
	// Switch is the pipeline: port and pool names resolved to indexes in
	// Forwarding and the ports, every marker built. Dataplane hands out
	// copies.
	Switch dataplane.Config
	// Ports are the devices, parallel to Switch.Ports.
	Ports []Port
	// Pools names the shared buffer pools, parallel to Switch.Pools.
	Pools []string

	LogLevel  string // debug, info, warn or error
	Telemetry Telemetry
	Capture   Capture
	Control   Control

	// Warnings name keys the file uses that are deprecated, with their
	// replacement, and settings that work but likely not as meant (a trim
	// queue that is not strict priority, say), at their keys; the daemon
	// logs them.
	Warnings []string

	src  []byte // the YAML document it was parsed from, for Set
	path string // the file Load read it from, for a reload
}

// Telemetry configures the telemetry HTTP server.
type Telemetry struct {
	Enabled           bool
	Listen            string        // host:port
	QueueSamplePeriod time.Duration // period of the queue-depth sampler
	QueueSamples      int           // length of the sampler's ring
	// Hosts are names a request's Host may carry besides localhost, IP
	// addresses and the machine's name (telemetry.Options.Hosts).
	Hosts []string
}

// Control configures the control socket, the UNIX socket on which the
// switch takes commands (captures, runtime changes); its file mode decides
// who may.
type Control struct {
	// Socket is the socket's path; "" serves no control socket.
	Socket string
	// Group, when set, is the group (a name or a number) that may use the
	// socket too: mode 0660 instead of 0600.
	Group string
}

// Port is the device of one switch port and the markers as the file wrote
// them.
type Port struct {
	Name      string
	Interface string        // the network interface ecnswitch drives
	AFXDP     afxdp.Options // Logger left nil for the daemon to set
	Markers   []Marker      // enqueue and dequeue, in file order
}

// Marker is one configured marker, as written.
type Marker struct {
	Key    string // its path in the file, e.g. ports[0].markers.enqueue[1]
	Name   string // its name key, else its scheme's name
	Scheme string
	Stage  marking.Stage
	Params string // the parameters as written, for summaries
	// Specs are the chain members the marker adds to its stage in
	// Switch.Ports: one, or two for BCC (per-port standard ECN and
	// shared-pool RED, 002 §IV-B).
	Specs []dataplane.MarkerSpec

	values [][2]string       // the parameters as written: key, value
	at     marking.Placement // where it was built, which a change of the port's rate, queues or pool changes
	group  *group            // what builds its members
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
	c.path = path
	return c, nil
}

// Path returns the file Load read c from, which a reload reads again; ""
// for a Config that Parse made from bytes.
func (c *Config) Path() string { return c.path }

// YAML returns the document c was parsed from: the file's, or for a
// Config that Set made, the running document with the changes written in.
func (c *Config) YAML() []byte { return slices.Clone(c.src) }

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
	cfg.src = slices.Clone(data)
	return cfg, nil
}

// Dataplane returns a copy of the switch's pipeline, for dataplane.New.
// Each call returns fresh slices and maps, so New may change them.
func (c *Config) Dataplane() (dataplane.Config, error) {
	if len(c.Switch.Ports) == 0 {
		return dataplane.Config{}, errors.New("config: no ports; make the Config with Parse or Load")
	}
	dc := c.Switch
	dc.CPUs = slices.Clone(dc.CPUs)
	dc.Pools = slices.Clone(dc.Pools)
	dc.Classifier.DSCP = maps.Clone(dc.Classifier.DSCP)
	dc.Classifier.PCP = maps.Clone(dc.Classifier.PCP)
	dc.Forwarding.Patches = slices.Clone(dc.Forwarding.Patches)
	dc.Forwarding.MACs = slices.Clone(dc.Forwarding.MACs)
	dc.Forwarding.Prefixes = slices.Clone(dc.Forwarding.Prefixes)
	dc.Ports = slices.Clone(dc.Ports)
	for i := range dc.Ports {
		p := &dc.Ports[i]
		p.Scheduler.Queues = slices.Clone(p.Scheduler.Queues)
		p.Queues = slices.Clone(p.Queues)
		p.Enqueue = slices.Clone(p.Enqueue)
		p.Dequeue = slices.Clone(p.Dequeue)
		p.Delay.PerQueue = maps.Clone(p.Delay.PerQueue)
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
