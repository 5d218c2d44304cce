package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Errors the Manager wraps, so that callers (and the HTTP handler) can tell
// a bad request from a failure.
var (
	ErrInvalid  = errors.New("invalid capture spec")
	ErrNotFound = errors.New("no such capture")
)

// Options configure a Manager.
type Options struct {
	// Dir, when set, confines capture files: a Spec.Path is a name beneath
	// it (or an absolute path inside it), and the files are created through
	// an os.Root of it, so that neither ".." nor a symlink leads out. It is
	// created (mode 0750) on the first Start and refused when its group or
	// others may write to it and the switch's user does not own it. Set it
	// whenever the HTTP API is reachable by anyone who should not write
	// files as the switch. Without it, each capture's file is created
	// beneath its own parent directory, checked the same way.
	Dir string
	// Wall returns the wall-clock time, read once at each capture's start
	// to anchor the switch clock's timestamps; nil means time.Now.
	Wall func() time.Time
	// MaxCaptures bounds the captures running at once; 0 means 64.
	MaxCaptures int
	// Quota bounds the bytes in Dir. A capture starts only if the files
	// already there (those of running captures aside), the most every
	// running capture may keep (Spec.DiskBound) and the most the new one
	// may keep fit in it; so a capture without a bound (never rotating, or
	// keeping every file) cannot start. 0 means DefaultQuota, negative no
	// quota. It needs Dir.
	Quota int64
	// RingMemory bounds the rings of the running captures together (ring
	// × snaplen each); 0 means DefaultRingMemory.
	RingMemory int64
	// Log logs starts, stops and write errors; nil logs nothing.
	Log *zap.Logger
}

// Defaults of Options.
const (
	DefaultQuota      = 4 << 30   // bytes in the capture directory
	DefaultRingMemory = 256 << 20 // bytes of every running capture's ring together
)

// Manager owns the captures of one switch: it installs their taps on the
// ports and runs their writers. Its methods are safe for concurrent use
// and may be called while the switch runs.
//
// Capture files are created mode 0600 with O_EXCL beneath an opened
// directory, never through a symlink (see createFile), and no two running
// captures can ever write the same file, rotated ones included (see
// sameFiles).
type Manager struct {
	sw    *dataplane.Switch
	clock timestamp.Clock
	names []string
	opts  Options

	mu     sync.Mutex
	dir    *os.Root // Options.Dir, opened on the first Start
	rings  int64    // ring bytes of the running captures
	next   int
	caps   map[int]*capture
	byPort [][]*capture
	taps   []*portTap      // by port: the tap install put on it, nil if none
	hold   <-chan struct{} // tests: the next captures' writers wait on it
}

// New returns a Manager for sw, whose clock must be the one the switch was
// built with, so that a packet's timestamp in the file is the switch's own
// timestamp of its event. A relative Options.Dir is taken from the
// working directory now.
func New(sw *dataplane.Switch, clock timestamp.Clock, opts Options) *Manager {
	if opts.Wall == nil {
		opts.Wall = time.Now
	}
	if opts.MaxCaptures == 0 {
		opts.MaxCaptures = 64
	}
	if opts.Quota == 0 {
		opts.Quota = DefaultQuota
	}
	if opts.RingMemory <= 0 {
		opts.RingMemory = DefaultRingMemory
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Dir != "" {
		if abs, err := filepath.Abs(opts.Dir); err == nil {
			opts.Dir = abs
		}
	}
	names := sw.Ports()
	return &Manager{
		sw: sw, clock: clock, names: names, opts: opts,
		caps: map[int]*capture{}, byPort: make([][]*capture, len(names)), taps: make([]*portTap, len(names)),
	}
}

// Start validates s, opens its first file and starts capturing. It returns
// the capture's id.
func (m *Manager) Start(s Spec) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, fmt.Errorf("capture: %w: %w", ErrInvalid, err)
	}
	s = s.withDefaults()
	port, err := resolvePort(s.Port, m.names)
	if err != nil {
		return 0, fmt.Errorf("capture: %w: %w", ErrInvalid, err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.caps) >= m.opts.MaxCaptures {
		return 0, fmt.Errorf("capture: %w: %d captures running, at most %d", ErrInvalid, len(m.caps), m.opts.MaxCaptures)
	}
	pl, err := m.place(s.Path)
	if err != nil {
		return 0, fmt.Errorf("capture: %w", err)
	}
	for _, c := range m.caps {
		switch {
		case c.out.path == pl.path:
			pl.close()
			return 0, fmt.Errorf("capture: %w: path: %q is written by capture %d", ErrInvalid, pl.path, c.id)
		case sameFiles(c.out.path, pl.path):
			pl.close()
			return 0, fmt.Errorf("capture: %w: path: %q and capture %d's %q name the same file once one of them rotates; give each capture a name of its own",
				ErrInvalid, pl.path, c.id, c.out.path)
		}
	}
	if err := m.admit(s, pl); err != nil {
		pl.close()
		return 0, fmt.Errorf("capture: %w: %w", ErrInvalid, err)
	}
	// The (wall, mono) pair that maps the switch's timestamps to wall time.
	wall, mono := m.opts.Wall(), m.clock.Now()
	m.next++
	bound, _ := s.DiskBound()
	c := &capture{
		id: m.next, spec: s, port: port, started: wall, ringBytes: s.RingBytes(), bound: bound,
		filter:   newFilter(s),
		ring:     newRing(s.Ring, s.SnapLen),
		out:      newFileWriter(s, pl.root, pl.name, pl.path, m.names[port], wall, mono),
		ownRoot:  pl.own,
		finished: make(chan struct{}),
		hold:     m.hold,
	}
	c.out.clocks = "timestamps on the switch clock (" + timestamp.Name(m.clock) + "), ingress stamps by " + m.sw.RxStampSource(port)
	c.out.clock = timestamp.Name(m.clock)
	if err := c.openFirst(); err != nil {
		pl.close()
		return 0, fmt.Errorf("capture: %w", err)
	}
	go c.run()
	m.caps[c.id] = c
	m.rings += c.ringBytes
	m.byPort[port] = append(slices.Clip(m.byPort[port]), c)
	m.install(port)
	m.opts.Log.Info("capture started", zap.Int("id", c.id), zap.String("port", m.names[port]),
		zap.String("direction", string(s.Direction)), zap.String("filter", string(s.Filter)), zap.String("path", pl.path))
	return c.id, nil
}

// admit checks that a capture of s placed at pl fits the ring memory and
// the directory's quota. m.mu is held.
func (m *Manager) admit(s Spec, pl placement) error {
	if r := s.RingBytes(); m.rings+r > m.opts.RingMemory {
		return fmt.Errorf("ring: %d slots × snaplen %d = %d bytes, and the running captures' rings hold %d: more than the %d bytes all rings may take (capture.ring_memory); lower ring or snaplen, or stop a capture",
			s.Ring, s.SnapLen, r, m.rings, m.opts.RingMemory)
	}
	if m.opts.Dir == "" || m.opts.Quota < 0 {
		return nil
	}
	bound, ok := s.DiskBound()
	if !ok {
		return fmt.Errorf("max_bytes, max_files: a capture that never rotates or keeps every file has no size bound, and the capture directory has a quota of %d bytes (capture.quota); set both", m.opts.Quota)
	}
	used := m.diskUse()
	if used+bound > m.opts.Quota {
		return fmt.Errorf("quota: the capture directory holds %d bytes (running captures counted at their bound) and this capture may keep %d (max_files × max_bytes): more than its quota of %d bytes (capture.quota); remove old files, lower max_bytes or max_files, or raise the quota",
			used, bound, m.opts.Quota)
	}
	return nil
}

// diskUse returns the bytes of the files in the capture directory, those
// of running captures counted at their bound instead. m.mu is held.
func (m *Manager) diskUse() int64 {
	var n int64
	fs.WalkDir(m.dir.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // what cannot be read is not counted; the walk goes on
		}
		for _, c := range m.caps {
			if c.out.root == m.dir && (p == c.out.name || isRotation(p, c.out.name)) {
				return nil
			}
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	for _, c := range m.caps {
		if c.out.root == m.dir {
			n += c.bound
		}
	}
	return n
}

// placement is where a capture's files go.
type placement struct {
	root *os.Root // the directory they are created in
	name string   // the first file's name beneath root
	path string   // the first file's path, as Status shows it
	own  bool     // root is the capture's own, to close when it stops
}

func (p placement) close() {
	if p.own {
		p.root.Close()
	}
}

// place resolves a Spec.Path. With Options.Dir, the path must be a name
// beneath it (localName), and its directories are created beneath the
// opened Dir. m.mu is held.
func (m *Manager) place(p string) (placement, error) {
	if m.opts.Dir == "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return placement{}, fmt.Errorf("path: %w", err)
		}
		root, err := openDir(filepath.Dir(abs), false)
		if err != nil {
			return placement{}, err
		}
		return placement{root: root, name: filepath.Base(abs), path: abs, own: true}, nil
	}
	rel, err := localName(m.opts.Dir, p)
	if err != nil {
		return placement{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if m.dir == nil {
		root, err := openDir(m.opts.Dir, true)
		if err != nil {
			return placement{}, err
		}
		m.dir = root
	}
	if sub := filepath.Dir(rel); sub != "." {
		if err := m.dir.MkdirAll(sub, dirPerm); err != nil {
			return placement{}, fmt.Errorf("path: %q: %w", p, err)
		}
	}
	return placement{root: m.dir, name: rel, path: filepath.Join(m.opts.Dir, rel)}, nil
}

// install puts, in one step, a tap of port's current captures in the
// place of the one it had (if any). m.mu is held.
func (m *Manager) install(port int) {
	var t *portTap
	if caps := m.byPort[port]; len(caps) > 0 {
		t = &portTap{caps: caps}
	}
	old := m.taps[port]
	var err error
	switch {
	case old == nil && t == nil:
	case old == nil:
		err = m.sw.AddTap(port, t)
	case t == nil:
		err = m.sw.RemoveTap(port, old)
	default:
		err = m.sw.ReplaceTap(port, old, t)
	}
	if err != nil {
		panic(err) // the port came from the switch's own list, and only install sets its taps
	}
	m.taps[port] = t
}

// Stop stops capture id: it takes the capture off its port, writes what
// the ring still holds, closes the file and returns the final counters.
func (m *Manager) Stop(id int) (Status, error) {
	m.mu.Lock()
	c, ok := m.caps[id]
	if !ok {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("capture: %w: id %d", ErrNotFound, id)
	}
	delete(m.caps, id)
	m.rings -= c.ringBytes
	m.byPort[c.port] = slices.DeleteFunc(slices.Clone(m.byPort[c.port]), func(x *capture) bool { return x == c })
	m.install(c.port)
	m.mu.Unlock()

	st := c.stop()
	if c.ownRoot {
		c.out.root.Close()
	}
	m.opts.Log.Info("capture stopped", zap.Int("id", id), zap.Uint64("written", st.Written),
		zap.Uint64("skipped_ring_full", st.SkippedRingFull), zap.Uint64("files", st.Files), zap.String("error", st.Error))
	return st, nil
}

// Status returns the running captures, by id.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(m.caps))
	for _, c := range m.caps {
		out = append(out, c.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return a.ID - b.ID })
	return out
}

// Close stops every capture and returns their final status.
func (m *Manager) Close() []Status {
	m.mu.Lock()
	ids := make([]int, 0, len(m.caps))
	for id := range m.caps {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	slices.Sort(ids)
	var out []Status
	for _, id := range ids {
		if st, err := m.Stop(id); err == nil {
			out = append(out, st)
		}
	}
	m.mu.Lock()
	if m.dir != nil && len(m.caps) == 0 {
		m.dir.Close()
		m.dir = nil
	}
	m.mu.Unlock()
	return out
}
