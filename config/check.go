package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// Limits of the file's own keys; the switch's defaults and limits are
// dataplane's (and scheduler's, buffer's, afxdp's, telemetry's), read
// where each key is checked.
const (
	maxNameLen = 32 // port, pool and marker names
	maxIfName  = 15 // Linux interface names (IFNAMSIZ − 1)
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// checker turns a decoded file into a Config, checking every key and
// collecting every error. Its methods are split by section over the files
// named after them.
type checker struct {
	ix    *index
	errs  Errors
	warns []string
}

func (c *checker) errf(key, format string, args ...any) {
	c.add(Errors{{Key: key, Line: c.ix.line(key), Msg: fmt.Sprintf(format, args...)}})
}

// warnf notes a setting that works, but likely not as meant, at its key;
// a repeat (a key of port_defaults, once per port) is noted once.
func (c *checker) warnf(key, format string, args ...any) {
	w := (&Error{Key: key, Line: c.ix.line(key), Msg: fmt.Sprintf(format, args...)}).Error()
	if !slices.Contains(c.warns, w) {
		c.warns = append(c.warns, w)
	}
}

// add appends errors, skipping repeats: a bad key in port_defaults is
// reported once, not once per port.
func (c *checker) add(es Errors) {
next:
	for _, e := range es {
		s := e.Error()
		for _, o := range c.errs {
			if o.Error() == s {
				continue next
			}
		}
		c.errs = append(c.errs, e)
	}
}

func (c *checker) sorted() Errors {
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i].Line, c.errs[j].Line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
	return c.errs
}

// portKey returns where port i's sub-key was written: in the port, else in
// port_defaults, else (for afxdp.*) in the top-level afxdp section; the
// port's own path if it was not written at all.
func (c *checker) portKey(i int, sub string) string {
	own := fmt.Sprintf("ports[%d].%s", i, sub)
	switch {
	case c.ix.has(own):
		return own
	case c.ix.has("port_defaults." + sub):
		return "port_defaults." + sub
	case strings.HasPrefix(sub, "afxdp.") && c.ix.has(sub):
		return sub
	}
	return own
}

// intIn checks an optional integer key against [lo, hi] and returns it or def.
func (c *checker) intIn(key string, p *int, def, lo, hi int) int {
	if p == nil {
		return def
	}
	if *p < lo || *p > hi {
		c.errf(key, "%d outside [%d, %d]", *p, lo, hi)
		return def
	}
	return *p
}

// pow2In checks an optional power-of-two key against [lo, hi].
func (c *checker) pow2In(key string, p *int, def, lo, hi int) int {
	if p == nil {
		return def
	}
	if *p < lo || *p > hi || *p&(*p-1) != 0 {
		c.errf(key, "%d is not a power of two in [%d, %d]", *p, lo, hi)
		return def
	}
	return *p
}

// oneOf checks a string key against its allowed values; "" means def.
func (c *checker) oneOf(key, v, def string, allowed ...string) string {
	if v == "" {
		return def
	}
	if !slices.Contains(allowed, v) {
		c.errf(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		return def
	}
	return v
}

// validName reports whether s may name a port, pool or marker.
func validName(s string) bool { return len(s) <= maxNameLen && nameRE.MatchString(s) }

// config checks the whole file, section by section.
func (c *checker) config(f *fileYAML) *Config {
	cfg := &Config{}
	cfg.LogLevel = c.oneOf("log_level", f.LogLevel, "info", "debug", "info", "warn", "error")
	c.workers(cfg, f)
	c.pools(cfg, f.Pools)
	if len(f.Ports) == 0 {
		c.errf("ports", "none configured; want 1 to %d ports", dataplane.MaxPorts)
		return cfg
	}
	if len(f.Ports) > dataplane.MaxPorts {
		c.errf("ports", "%d configured; want 1 to %d", len(f.Ports), dataplane.MaxPorts)
		return cfg
	}
	names := c.portNames(f)
	c.telemetry(cfg, f)
	cfg.Switch.Classifier = c.classifier(f.Classifier)
	for i := range f.Ports {
		c.port(cfg, f, i)
	}
	// Markers last: BCC reads the buffer settings of every port on its pool.
	for i := range f.Ports {
		c.markers(cfg, f, i)
	}
	c.classifierQueues(cfg)
	cfg.Switch.Forwarding = c.forwarding(f.Forwarding, names)
	c.telemetryMemory(cfg)
	cfg.Capture = c.capture(cfg, f.Capture)
	cfg.Control = c.control(f.Control)
	cfg.Warnings = append(cfg.Warnings, c.warns...)
	if len(c.errs) == 0 {
		// Every rule of the dataplane's own is checked above, at its key;
		// this is the backstop that a Config Parse accepts always builds.
		if err := cfg.Switch.Validate(); err != nil {
			c.add(Errors{{Msg: err.Error()}})
		}
	}
	return cfg
}

// workers checks the top-level keys of the switch's workers and frames.
func (c *checker) workers(cfg *Config, f *fileYAML) {
	sw := &cfg.Switch
	sw.Workers = c.intIn("workers", f.Workers, dataplane.DefaultWorkers, 1, dataplane.MaxWorkers)
	sw.Frames = c.pow2In("frames", f.Frames, dataplane.DefaultFrames, dataplane.MinFrames, dataplane.MaxFrames)
	sw.FrameSize = c.intIn("frame_size", f.FrameSize, dataplane.DefaultFrameSize, dataplane.MinFrameSize, dataplane.MaxFrameSize)
	sw.Batch = c.intIn("batch", f.Batch, dataplane.DefaultBatch, 1, dataplane.MaxBatch)
	sw.Spin = c.intIn("spin", f.Spin, dataplane.DefaultSpin, 1, dataplane.MaxSpin)
	neverSleep := f.NeverSleep != nil && *f.NeverSleep
	key := "never_sleep"
	if f.BusyPoll != nil {
		// busy_poll is the old name of never_sleep, kept for one release.
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("busy_poll (line %d) is deprecated and will be removed: it is now never_sleep "+
			"(the worker spins on its ports and never sleeps; it is not the kernel's SO_BUSY_POLL)", c.ix.line("busy_poll")))
		if f.NeverSleep != nil {
			c.errf("busy_poll", "set with never_sleep, its new name; remove busy_poll")
		}
		neverSleep, key = neverSleep || *f.BusyPoll, "busy_poll"
	}
	if neverSleep {
		if f.Spin != nil {
			c.errf("spin", "%d set with %s: true, which never sleeps; remove one", *f.Spin, key)
		}
		sw.Spin = -1
	}
	seen := map[int]bool{}
	for i, cpu := range f.CPUs {
		key := fmt.Sprintf("cpus[%d]", i)
		switch {
		case cpu < 0 || cpu > dataplane.MaxCPU:
			c.errf(key, "%d outside [0, %d]", cpu, dataplane.MaxCPU)
		case seen[cpu]:
			c.errf(key, "CPU %d listed twice", cpu)
		}
		seen[cpu] = true
	}
	sw.CPUs = slices.Clone(f.CPUs)
}
