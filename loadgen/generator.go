package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Generator defaults.
const (
	DefaultSrcPort = 10000
	DefaultDstPort = 9 // discard (RFC 863)
	DefaultBurst   = 10 * time.Millisecond
	DefaultGap     = 100 * time.Microsecond
	DefaultSpin    = 20 * time.Microsecond
	MaxFlows       = 1 << 16 // flow ids are 16 bits on the wire
)

// GeneratorConfig configures a Generator. The zero value of every field
// selects its default; a zero Rate sends as fast as the port takes frames.
type GeneratorConfig struct {
	// Addresses are the frames' MACs, IPv4 addresses and UDP ports.
	// Defaults: 02:ec:5b:00:00:01 → 02:ec:5b:00:00:02, 198.18.0.1 →
	// 198.18.0.2 (RFC 2544's benchmarking range), ports DefaultSrcPort+flow
	// → DefaultDstPort.
	Addresses

	// Sizes is the frame-size mix, FCS included (see ParseSizes); the
	// sizes follow each other in the pattern of smooth weighted round robin.
	// Default 64 bytes.
	Sizes []Share[int]
	// DSCP and ECN are the codepoint mixes by frames (see ParseDSCP,
	// ParseECN). Each (DSCP, ECN) pair is a class with the product of the
	// two weights; every flow belongs to one class (flow i to class
	// i mod classes), so a flow's frames never change queue in a switch.
	// Defaults: DSCP 0, ECT(0).
	DSCP []Share[uint8]
	ECN  []Share[packet.ECN]
	// Flows is the number of flows, each its own UDP source port; frames
	// of a class go to its flows in turn. At least the number of classes,
	// at most MaxFlows and 65536 − SrcPort. Default: one per class.
	Flows int

	// Rate is the target rate; zero sends as fast as the port takes frames.
	Rate Rate
	// Overhead is the bytes per frame a bit rate counts beyond the frame
	// size: 0 (the default) paces Ethernet frames with FCS, L1Overhead
	// paces the wire including preamble and inter-frame gap.
	Overhead int

	// Duration stops the generator after this long: with a Rate, it sends
	// exactly the frames scheduled before Duration has passed. Count
	// stops it after that many frames. With neither, it runs until its
	// context is done.
	Duration time.Duration
	Count    uint64

	// Burst bounds catching up: after a stall (the process descheduled,
	// the port full) the generator sends what it owes at once, but at most
	// Burst worth of the schedule; the rest is given up and counted in
	// GeneratorStats.Late. Default DefaultBurst.
	Burst time.Duration
	// Gap is the shortest time between two sends: frames due within Gap
	// of now go out now, in one batch, so at rates above 1/Gap frames are
	// paced in batches and the generator wakes at most 1/Gap times a
	// second (a sleep here overshoots by ~30–50 µs, so shorter gaps would
	// mean spinning, and on two cores a spinning generator starves the
	// switch it measures). Frames leave at most Gap early; a rate holds
	// within Gap/window over any window. Default DefaultGap.
	Gap time.Duration
	// Spin is how long before a send is due Run stops sleeping and spins
	// on the clock, for frames paced one by one (rates below 1/Gap);
	// sleeping alone wakes tens of µs late. Negative never spins. Default
	// DefaultSpin.
	Spin time.Duration
	// Batch is the most frames per Transmit. Default ports.BatchSize.
	Batch int
	// Run is written into every frame; a sink counts only its own run.
	Run uint16
}

func (c *GeneratorConfig) setDefaults() error {
	if c.SrcMAC == nil {
		c.SrcMAC = net.HardwareAddr{0x02, 0xec, 0x5b, 0, 0, 1}
	}
	if c.DstMAC == nil {
		c.DstMAC = net.HardwareAddr{0x02, 0xec, 0x5b, 0, 0, 2}
	}
	if !c.SrcIP.IsValid() {
		c.SrcIP = netip.MustParseAddr("198.18.0.1")
	}
	if !c.DstIP.IsValid() {
		c.DstIP = netip.MustParseAddr("198.18.0.2")
	}
	if c.SrcPort == 0 {
		c.SrcPort = DefaultSrcPort
	}
	if c.DstPort == 0 {
		c.DstPort = DefaultDstPort
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []Share[int]{{MinSize, 1}}
	}
	if len(c.DSCP) == 0 {
		c.DSCP = []Share[uint8]{{0, 1}}
	}
	if len(c.ECN) == 0 {
		c.ECN = []Share[packet.ECN]{{packet.ECT0, 1}}
	}
	classes := len(c.DSCP) * len(c.ECN)
	if c.Flows == 0 {
		c.Flows = classes
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Gap == 0 {
		c.Gap = DefaultGap
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	if c.Batch == 0 {
		c.Batch = ports.BatchSize
	}

	switch {
	case len(c.SrcMAC) != 6:
		return fmt.Errorf("src_mac: %v: want a 6-byte MAC", c.SrcMAC)
	case len(c.DstMAC) != 6:
		return fmt.Errorf("dst_mac: %v: want a 6-byte MAC", c.DstMAC)
	case !c.SrcIP.Is4():
		return fmt.Errorf("src_ip: %v: want an IPv4 address", c.SrcIP)
	case !c.DstIP.Is4():
		return fmt.Errorf("dst_ip: %v: want an IPv4 address", c.DstIP)
	case c.Flows < classes || c.Flows > MaxFlows:
		return fmt.Errorf("flows: %d: want %d (one per DSCP×ECN class) to %d", c.Flows, classes, MaxFlows)
	case int(c.SrcPort)+c.Flows-1 > 65535:
		return fmt.Errorf("flows: %d from src_port %d: the last source port would be %d, want at most 65535", c.Flows, c.SrcPort, int(c.SrcPort)+c.Flows-1)
	case c.Overhead < 0 || c.Overhead > 1000:
		return fmt.Errorf("overhead: %d bytes: want 0 to 1000 (%d for L1 rates)", c.Overhead, L1Overhead)
	case c.Duration < 0:
		return fmt.Errorf("duration: %v: want ≥ 0", c.Duration)
	case c.Burst < 0:
		return fmt.Errorf("burst: %v: want > 0", c.Burst)
	case c.Gap < 0 || c.Gap > time.Second:
		return fmt.Errorf("gap: %v: want 0 to 1s", c.Gap)
	case c.Batch < 1 || c.Batch > 4096:
		return fmt.Errorf("batch: %d: want 1 to 4096", c.Batch)
	}
	for i, s := range c.Sizes {
		if s.Value < MinSize || s.Value > MaxSize {
			return fmt.Errorf("sizes[%d]: %d bytes: want %d to %d (FCS included)", i, s.Value, MinSize, MaxSize)
		}
	}
	for i, d := range c.DSCP {
		if d.Value > 63 {
			return fmt.Errorf("dscp[%d]: %d: want 0 to 63", i, d.Value)
		}
	}
	for i, e := range c.ECN {
		if e.Value > packet.CE {
			return fmt.Errorf("ecn[%d]: %d: want 0 to 3", i, e.Value)
		}
	}
	if err := checkWeights("sizes", c.Sizes); err != nil {
		return err
	}
	if err := checkWeights("dscp", c.DSCP); err != nil {
		return err
	}
	if err := checkWeights("ecn", c.ECN); err != nil {
		return err
	}
	return c.Rate.validate()
}

// checkWeights reports the first weight of mix outside [1, MaxWeight].
func checkWeights[T any](key string, mix []Share[T]) error {
	for i, s := range mix {
		if s.Weight < 1 || s.Weight > MaxWeight {
			return fmt.Errorf("%s[%d]: weight %d: want 1 to %d", key, i, s.Weight, MaxWeight)
		}
	}
	return nil
}

// Class is one (DSCP, ECN) pair of a generator's mix and the flows that
// carry it.
type Class struct {
	DSCP  uint8      `json:"dscp"`
	ECN   packet.ECN `json:"ecn"`
	Share float64    `json:"share"` // fraction of frames
	Flows []int      `json:"flows"`
}

// GeneratorStats are a generator's counters.
type GeneratorStats struct {
	Sent     uint64 `json:"sent"`      // frames the port took
	Bytes    uint64 `json:"bytes"`     // their sizes, FCS included
	First    int64  `json:"first_ns"`  // clock time of the first send
	Last     int64  `json:"last_ns"`   // clock time of the last send
	Late     int64  `json:"late_ns"`   // schedule given up after stalls beyond Burst
	TxErrors uint64 `json:"tx_errors"` // Transmit calls that returned an error
}

// Elapsed is the time from the first send to the last.
func (s GeneratorStats) Elapsed() time.Duration { return time.Duration(s.Last - s.First) }

// Generator sends UDP frames over a ports.Port at a target rate: frames are
// built once per (flow, size) into templates, and each send copies a
// template (only when its batch slot held another one) and stamps the
// flow's sequence number and the TX time (see Header).
//
// Pacing keeps a schedule: frame k is due at the start time plus the time
// the rate allows for frames 0..k−1, computed in integers with the
// remainder carried, so the schedule never drifts. The generator sends
// every frame that is due (within Gap) in batches, sleeps until the next
// one is, and spins for the last Spin of the wait. A Generator is used by
// one goroutine; Stats may be read from any.
type Generator struct {
	cfg   GeneratorConfig
	port  ports.Port
	wait  ports.Waiter
	clock timestamp.Clock

	tpl     [][]byte // by flow*len(Sizes) + size index
	units   []uint64 // schedule units of each size
	classes []Class
	choice  choice
	seq     []uint32 // by flow

	batch   []*packet.Desc
	slotTpl []int // template each batch slot holds, −1 none
	pend    []*packet.Desc

	rate    uint64 // schedule units per second; 0 unpaced
	due     int64  // when the next frame is due
	rem     uint64 // remainder of due, in units·ns / rate
	gap     int64
	burst   int64
	started bool
	end     int64 // Duration's end, 0 none
	built   uint64
	done    bool

	stats struct {
		sent, bytes, txErrors atomic.Uint64
		first, last, late     atomic.Int64
	}
}

// NewGenerator builds a generator's templates; clock nil means a
// SystemClock.
func NewGenerator(cfg GeneratorConfig, port ports.Port, clock timestamp.Clock) (*Generator, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("loadgen: generator: %w", err)
	}
	if clock == nil {
		c, err := NewSystemClock()
		if err != nil {
			return nil, err
		}
		clock = c
	}
	g := &Generator{cfg: cfg, port: port, clock: clock, gap: int64(cfg.Gap), burst: int64(cfg.Burst)}
	g.wait, _ = port.(ports.Waiter)

	w := make([]int, len(cfg.Sizes))
	maxLen := 0
	for i, s := range cfg.Sizes {
		w[i] = s.Weight
		maxLen = max(maxLen, s.Value-FCS)
	}
	var err error
	if g.choice.sizePat, err = pattern(w); err != nil {
		return nil, fmt.Errorf("loadgen: generator: sizes: %w", err)
	}
	w = w[:0]
	total := 0
	for _, d := range cfg.DSCP {
		for _, e := range cfg.ECN {
			g.classes = append(g.classes, Class{DSCP: d.Value, ECN: e.Value})
			w = append(w, d.Weight*e.Weight)
			total += d.Weight * e.Weight
		}
	}
	if g.choice.classPat, err = pattern(w); err != nil {
		return nil, fmt.Errorf("loadgen: generator: dscp×ecn: %w", err)
	}
	for i := range g.classes {
		g.classes[i].Share = float64(w[i]) / float64(total)
	}
	for f := 0; f < cfg.Flows; f++ {
		c := &g.classes[f%len(g.classes)]
		c.Flows = append(c.Flows, f)
	}
	g.choice.flows = make([][]int, len(g.classes))
	for i, c := range g.classes {
		g.choice.flows[i] = c.Flows
	}
	g.choice.next = make([]int, len(g.classes))
	g.seq = make([]uint32, cfg.Flows)

	g.tpl = make([][]byte, cfg.Flows*len(cfg.Sizes))
	for f := 0; f < cfg.Flows; f++ {
		c := g.classes[f%len(g.classes)]
		for si, s := range cfg.Sizes {
			buf := make([]byte, s.Value-FCS)
			buildFrame(buf, &cfg.Addresses, s.Value, c.DSCP, c.ECN, cfg.SrcPort+uint16(f), Header{Run: cfg.Run, Flow: uint16(f)})
			g.tpl[f*len(cfg.Sizes)+si] = buf
		}
	}

	g.units = make([]uint64, len(cfg.Sizes))
	switch {
	case cfg.Rate.Bits > 0:
		g.rate = uint64(cfg.Rate.Bits + 0.5)
		for i, s := range cfg.Sizes {
			g.units[i] = uint64(s.Value+cfg.Overhead) * 8
		}
	case cfg.Rate.Packets > 0:
		g.rate = uint64(cfg.Rate.Packets*1000 + 0.5) // milli-frames per second
		for i := range g.units {
			g.units[i] = 1000
		}
	}

	g.batch = make([]*packet.Desc, cfg.Batch)
	g.slotTpl = make([]int, cfg.Batch)
	mem := make([]byte, cfg.Batch*maxLen)
	for i := range g.batch {
		g.batch[i] = &packet.Desc{Buf: mem[i*maxLen : (i+1)*maxLen : (i+1)*maxLen]}
		g.slotTpl[i] = -1
	}
	return g, nil
}

// choice picks each frame's size and flow: sizes in the pattern of
// their weights, classes in the pattern of theirs, and a class's flows
// in turn.
type choice struct {
	sizePat  []int
	classPat []int
	flows    [][]int // by class
	sizePos  int
	classPos int
	next     []int // by class: position in its flows
}

// pick returns the next frame's flow and size index.
func (c *choice) pick() (flow, size int) {
	size = c.sizePat[c.sizePos]
	if c.sizePos++; c.sizePos == len(c.sizePat) {
		c.sizePos = 0
	}
	ci := c.classPat[c.classPos]
	if c.classPos++; c.classPos == len(c.classPat) {
		c.classPos = 0
	}
	flow = c.flows[ci][c.next[ci]]
	if c.next[ci]++; c.next[ci] == len(c.flows[ci]) {
		c.next[ci] = 0
	}
	return flow, size
}

// atStart reports whether c is back where it started.
func (c *choice) atStart() bool {
	if c.sizePos != 0 || c.classPos != 0 {
		return false
	}
	for _, n := range c.next {
		if n != 0 {
			return false
		}
	}
	return true
}

// Classes returns the generator's classes and the flows of each.
func (g *Generator) Classes() []Class { return g.classes }

// Config returns the configuration with defaults filled in.
func (g *Generator) Config() GeneratorConfig { return g.cfg }

// Stats returns the counters; safe from any goroutine.
func (g *Generator) Stats() GeneratorStats {
	return GeneratorStats{
		Sent: g.stats.sent.Load(), Bytes: g.stats.bytes.Load(),
		First: g.stats.first.Load(), Last: g.stats.last.Load(),
		Late: g.stats.late.Load(), TxErrors: g.stats.txErrors.Load(),
	}
}

// Done reports whether the generator has sent everything Duration or
// Count asked for.
func (g *Generator) Done() bool { return g.done }

// Step sends what the schedule allows at time now and returns when it next
// has something to send: next > now is the time the next frame is due;
// next == now means call again at once (unpaced, or the port took only
// part of a batch and must drain). Run calls Step in a loop; tests in
// virtual time call it with the virtual clock's time.
func (g *Generator) Step(now int64) (next int64, err error) {
	next, _, err = g.step(now)
	return next, err
}

// step is Step that also reports whether the port is full (blocked).
func (g *Generator) step(now int64) (next int64, blocked bool, err error) {
	if g.done {
		return now, false, nil
	}
	if !g.started {
		g.started = true
		g.due = now
		if g.cfg.Duration > 0 {
			g.end = now + int64(g.cfg.Duration)
		}
	}
	if len(g.pend) > 0 {
		for _, d := range g.pend {
			putTxTime(d.Buf, now)
		}
		k, err := g.transmit(g.pend, now)
		g.pend = g.pend[k:]
		if len(g.pend) > 0 || err != nil {
			return now, len(g.pend) > 0, err
		}
	}
	for {
		if g.finished(now) {
			g.done = true
			return now, false, nil
		}
		if g.rate > 0 {
			if g.due > now+g.gap {
				return g.due, false, nil
			}
			if lag := now - g.due; lag > g.burst {
				g.stats.late.Add(lag - g.burst)
				g.due = now - g.burst
			}
		}
		n := g.build(now)
		k, err := g.transmit(g.batch[:n], now)
		if k < n {
			g.pend = g.batch[k:n]
			return now, true, err
		}
		if err != nil || g.rate == 0 {
			return now, false, err
		}
	}
}

// finished reports whether Count or Duration is reached.
func (g *Generator) finished(now int64) bool {
	if g.cfg.Count > 0 && g.built >= g.cfg.Count {
		return true
	}
	if g.end == 0 {
		return false
	}
	if g.rate > 0 {
		return g.due >= g.end
	}
	return now >= g.end
}

// build fills batch slots with the frames due by now+Gap (every slot when
// unpaced), stamped with now, and returns how many.
func (g *Generator) build(now int64) int {
	nsizes := len(g.cfg.Sizes)
	n := 0
	for n < len(g.batch) {
		if g.cfg.Count > 0 && g.built >= g.cfg.Count {
			break
		}
		if g.rate > 0 && (g.due > now+g.gap || (g.end != 0 && g.due >= g.end)) {
			break
		}
		f, si := g.choice.pick()
		t := f*nsizes + si
		d := g.batch[n]
		if g.slotTpl[n] != t {
			d.Len = copy(d.Buf, g.tpl[t])
			g.slotTpl[n] = t
		}
		putHeader(d.Buf, Header{Seq: g.seq[f], TxTime: now}, false)
		g.seq[f]++
		g.built++
		if g.rate > 0 {
			num := g.units[si]*1_000_000_000 + g.rem
			g.due += int64(num / g.rate)
			g.rem = num % g.rate
		}
		n++
	}
	return n
}

// transmit hands ds to the port and counts what it took.
func (g *Generator) transmit(ds []*packet.Desc, now int64) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	k, err := g.port.Transmit(ds)
	if err != nil {
		g.stats.txErrors.Add(1)
	}
	if k > 0 {
		var bytes uint64
		for _, d := range ds[:k] {
			bytes += uint64(d.Len + FCS)
		}
		if g.stats.sent.Load() == 0 {
			g.stats.first.Store(now)
		}
		g.stats.last.Store(now)
		g.stats.bytes.Add(bytes)
		g.stats.sent.Add(uint64(k))
	}
	return k, err
}

// putTxTime restamps a frame's TX time.
func putTxTime(frame []byte, t int64) {
	p := frame[headerOff+10 : headerOff+18]
	for i := 7; i >= 0; i-- {
		p[i] = byte(t)
		t >>= 8
	}
}

// Run sends until the generator is done or ctx is, on a goroutine locked
// to its OS thread with a 1 ns timer slack (so a sleep wakes within tens of
// µs instead of the default 50 µs slack plus the Go timer's), and returns
// nil then, or the first port error. While the port is full it waits on
// the port (ports.Waiter) or yields.
func (g *Generator) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
	}
	done := ctx.Done()
	for !g.done {
		select {
		case <-done:
			return nil
		default:
		}
		now := g.clock.Now()
		next, blocked, err := g.step(now)
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("loadgen: generator: transmit on %s: %w", g.port.Name(), err)
		}
		switch {
		case blocked && g.wait != nil:
			if _, err := g.wait.Wait(int64(time.Millisecond)); err != nil {
				return fmt.Errorf("loadgen: generator: wait on %s: %w", g.port.Name(), err)
			}
		case blocked:
			runtime.Gosched()
		case next > now:
			g.sleepUntil(next, done)
		}
	}
	return nil
}

// sleepUntil sleeps until Spin before t (in slices of at most 10 ms, so a
// done context is noticed), then spins on the clock until t.
func (g *Generator) sleepUntil(t int64, done <-chan struct{}) {
	spin := int64(g.cfg.Spin)
	for {
		rest := t - g.clock.Now()
		if rest <= 0 {
			return
		}
		if spin >= 0 && rest <= spin {
			continue // spin
		}
		d := rest - max(spin, 0)
		d = min(d, int64(10*time.Millisecond))
		ts := unix.NsecToTimespec(d)
		_ = unix.Nanosleep(&ts, nil)
		select {
		case <-done:
			return
		default:
		}
	}
}
