package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ecnswitch/ecnswitch/capture"
)

// Capture defaults and limits.
const (
	// DefaultCaptureDir is where capture files go, created (mode 0750) on
	// first use. It is absolute, so that the directory `sudo ecnswitch
	// run` happens to start in, which its user may own, never decides
	// where the switch writes.
	DefaultCaptureDir = "/var/lib/ecnswitch/captures"
	// MaxCaptures bounds the captures a config starts, the capture
	// Manager's default limit on captures running at once.
	MaxCaptures = 64
	// Limits of capture.ring_memory and capture.quota.
	minRingMemory = 1 << 20
	maxRingMemory = 1 << 36
	maxQuota      = 1 << 44
)

// Capture configures packet capture (package capture): the directory
// every capture file is confined to, and the captures the switch starts
// with. More are started and stopped at run time with `ecnswitch capture`.
type Capture struct {
	// Dir confines capture files: relative paths are taken inside it and
	// no path may leave it, also for captures started through the HTTP
	// API. A relative Dir is relative to the daemon's working directory;
	// the default is DefaultCaptureDir.
	Dir string
	// Quota bounds the bytes in Dir (capture.Options.Quota); negative for
	// no quota.
	Quota int64
	// RingMemory bounds the running captures' rings together
	// (capture.Options.RingMemory).
	RingMemory int64
	// Captures start with the switch, in order. Their Port is a port name
	// of the config, Path is relative to Dir, and every default is filled
	// in (CaptureDefaults).
	Captures []capture.Spec
}

func (c *checker) capture(cfg *Config, y captureYAML) Capture {
	out := Capture{Dir: DefaultCaptureDir, Quota: capture.DefaultQuota, RingMemory: capture.DefaultRingMemory}
	if y.Dir != nil {
		if d := *y.Dir; d == "" || strings.ContainsRune(d, 0) {
			c.capErrf("capture.dir", "%q: want a directory, e.g. %s", d, DefaultCaptureDir)
		} else {
			out.Dir = filepath.Clean(d)
		}
	}
	if q := y.Quota; q != nil {
		switch {
		case q.N < 0 || q.N > maxQuota:
			c.capErrf("capture.quota", "%s outside [0, %s] (0: no quota)", q, FormatSize(maxQuota))
		case q.N == 0:
			out.Quota = -1
		default:
			out.Quota = q.N
		}
	}
	if m := y.RingMemory; m != nil {
		if m.N < minRingMemory || m.N > maxRingMemory {
			c.capErrf("capture.ring_memory", "%s outside [%s, %s]", m, FormatSize(minRingMemory), FormatSize(maxRingMemory))
		} else {
			out.RingMemory = m.N
		}
	}
	if n := len(y.Captures); n > MaxCaptures {
		c.capErrf("capture.captures", "%d listed; at most %d captures run at once", n, MaxCaptures)
		return out
	}
	paths := map[string]int{}
	for i, ys := range y.Captures {
		key := fmt.Sprintf("capture.captures[%d]", i)
		s, ok := c.captureSpec(cfg, key, ys)
		if !ok {
			continue
		}
		if j, dup := paths[s.Path]; dup {
			c.capErrf(key+".path", "%q is also written by capture.captures[%d]; give each capture its own file", s.Path, j)
			continue
		}
		paths[s.Path] = i
		out.Captures = append(out.Captures, s)
	}
	return out
}

// captureSpec checks one capture and returns it with its defaults.
func (c *checker) captureSpec(cfg *Config, key string, y captureSpecYAML) (capture.Spec, bool) {
	s := capture.Spec{
		Port:      y.Port,
		Direction: capture.Direction(y.Direction),
		Filter:    capture.Filter(y.Filter),
		Queue:     y.Queue,
		DSCP:      y.DSCP,
		Format:    capture.Format(y.Format),
		Path:      y.Path,
	}
	for _, f := range []struct {
		name string
		p    *int
		dst  *int
	}{{"snaplen", y.SnapLen, &s.SnapLen}, {"ring", y.Ring, &s.Ring}, {"max_files", y.MaxFiles, &s.MaxFiles}} {
		if f.p != nil {
			*f.dst = *f.p
		}
	}
	if y.MaxBytes != nil {
		s.MaxBytes = y.MaxBytes.N
	}
	// Written 0: never rotate, keep every file; absent: the defaults.
	if y.MaxBytes != nil && y.MaxBytes.N == 0 {
		s.MaxBytes = capture.Unlimited
	}
	if y.MaxFiles != nil && *y.MaxFiles == 0 {
		s.MaxFiles = capture.Unlimited
	}

	port := -1
	for i, p := range cfg.Ports {
		if p.Name == s.Port {
			port = i
		}
	}
	switch {
	case s.Port == "":
		c.capErrf(key+".port", "missing; want a port name (%s)", strings.Join(cfg.PortNames(), ", "))
		return s, false
	case port < 0:
		c.capErrf(key+".port", "%q is not a port; ports are %s", s.Port, strings.Join(cfg.PortNames(), ", "))
		return s, false
	}
	if s.Queue != nil {
		if nq := cfg.Switch.Ports[port].Scheduler.NumQueues; *s.Queue < 0 || *s.Queue >= nq {
			c.capErrf(key+".queue", "%d outside [0, %d] (port %s has %d queues)", *s.Queue, nq-1, s.Port, nq)
			return s, false
		}
	}
	s = CaptureDefaults(s)
	switch p := s.Path; {
	case filepath.IsAbs(p):
		c.capErrf(key+".path", "%q is absolute; want a file name relative to capture.dir", p)
		return s, false
	case !filepath.IsLocal(p):
		c.capErrf(key+".path", "%q leaves capture.dir; want a file name inside it", p)
		return s, false
	}
	s.Path = filepath.Clean(s.Path)
	if err := s.Validate(); err != nil {
		// Spec's errors start with the key they are about ("snaplen: 10
		// outside [64, 65535]"), the same name as in the file.
		sub, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok || strings.ContainsAny(sub, " .") {
			sub, msg = "", err.Error()
		}
		k := key
		if sub != "" {
			k += "." + sub
		}
		c.capErrf(k, "%s", msg)
		return s, false
	}
	return s, true
}

// CaptureDefaults fills in what a capture.Spec leaves out as the capture
// package does (capture.Spec.WithDefaults) and, when Path is empty, names
// the file after what it captures: PORT-DIRECTION-FILTER.FORMAT, e.g.
// s0-egress-marked.pcapng.
func CaptureDefaults(s capture.Spec) capture.Spec {
	s = s.WithDefaults()
	if s.Path == "" {
		s.Path = fmt.Sprintf("%s-%s-%s.%s", s.Port, s.Direction, s.Filter, s.Format)
	}
	return s
}

// capErrf is errf for capture keys, which are often not written (a default
// path, a missing port): the line is then that of the nearest written
// enclosing key, the capture's list element.
func (c *checker) capErrf(key, format string, args ...any) {
	line := 0
	for k := key; k != "" && line == 0; {
		line = c.ix.line(k)
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	c.add(Errors{{Key: key, Line: line, Msg: fmt.Sprintf(format, args...)}})
}
