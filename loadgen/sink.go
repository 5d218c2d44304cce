package loadgen

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ecnswitch/ecnswitch/loadgen/xdpsink"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Sink defaults and limits.
const (
	DefaultWindow    = 8192 // sequence numbers remembered per flow for duplicate detection
	DefaultFrameBuf  = 9216 // bytes per receive buffer: any frame up to MaxSize
	DefaultSinkSpin  = 64   // empty polls before Run waits on the port
	MaxLatency       = int64(60 * time.Second)
	latencySigDigits = 3
)

// SinkConfig configures a Sink. The zero value of every field selects its
// default.
type SinkConfig struct {
	// Run is the generator run the sink counts; frames of other runs are
	// counted as stale and otherwise ignored.
	Run uint16
	// Window is how many sequence numbers below the highest seen a flow
	// remembers, a power of two from 64 to 1<<20: a frame that old or
	// older cannot be told from a duplicate and is counted as late (and
	// as reordered, and received once). Default DefaultWindow.
	Window int
	// Overhead is the bytes per frame bit rates count beyond the frame
	// size, as in GeneratorConfig.
	Overhead int
	// Batch is the most frames per Receive. Default ports.BatchSize.
	Batch int
	// FrameBuf is the size of each receive buffer. Default DefaultFrameBuf.
	FrameBuf int
	// Spin is the number of empty polls before Run waits on the port.
	// Default DefaultSinkSpin.
	Spin int
	// Flows is how many flow ids an XDPSink counts, 0..Flows−1 (frames of
	// higher ones are Report.Unknown), 1 to MaxFlows; a Sink counts them
	// all. Default xdpsink.DefaultFlows.
	Flows int
	// Sample is the fraction of frames whose one-way latency an XDPSink
	// records, above 0 to 1 (a Sink records every frame's). Default
	// DefaultSample.
	Sample float64
	// Progress, when set, is called from Run's goroutine every
	// ProgressEvery (default 1 s) with the counters so far.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

func (c *SinkConfig) setDefaults() error {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Batch == 0 {
		c.Batch = ports.BatchSize
	}
	if c.FrameBuf == 0 {
		c.FrameBuf = DefaultFrameBuf
	}
	if c.Spin == 0 {
		c.Spin = DefaultSinkSpin
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = time.Second
	}
	if c.Flows == 0 {
		c.Flows = xdpsink.DefaultFlows
	}
	if c.Sample == 0 {
		c.Sample = DefaultSample
	}
	switch {
	case c.Window < 64 || c.Window > 1<<20 || c.Window&(c.Window-1) != 0:
		return fmt.Errorf("window: %d: want a power of two from 64 to %d", c.Window, 1<<20)
	case c.Overhead < 0 || c.Overhead > 1000:
		return fmt.Errorf("overhead: %d bytes: want 0 to 1000 (%d for L1 rates)", c.Overhead, L1Overhead)
	case c.Batch < 1 || c.Batch > 4096:
		return fmt.Errorf("batch: %d: want 1 to 4096", c.Batch)
	case c.FrameBuf < MinSize || c.FrameBuf > 65536:
		return fmt.Errorf("frame_buf: %d: want %d to 65536", c.FrameBuf, MinSize)
	case c.Flows < 1 || c.Flows > MaxFlows:
		return fmt.Errorf("flows: %d: want 1 to %d", c.Flows, MaxFlows)
	case !(c.Sample > 0 && c.Sample <= 1):
		return fmt.Errorf("sample: %v: want a fraction above 0, at most 1", c.Sample)
	case c.ProgressEvery < 0:
		return fmt.Errorf("progress_every: %v: want > 0", c.ProgressEvery)
	}
	return nil
}

// flowState is what a sink knows about one flow.
//
// Sequence numbers are extended to 64 bits against the highest seen (a
// 32-bit number within 2^31 of it is taken as the nearest). seen holds one
// bit per sequence number in (top−Window, top], indexed by seq mod Window;
// a bit is cleared as top passes it, so each bit always belongs to the one
// sequence number of its residue inside the window.
type flowState struct {
	top       int64 // highest sequence number seen; −1 none
	unique    uint64
	received  uint64
	dup       uint64
	reordered uint64
	late      uint64
	ce        uint64
	bytes     uint64
	dscp      uint8
	seen      []uint64
}

// Sink receives a generator's frames from a ports.Port and counts, per
// flow: frames received, lost (sequence numbers never seen below the
// highest), reordered (arrived after a higher sequence number), duplicated
// (a sequence number seen twice) and CE-marked; and the one-way latency of
// every frame (receive time minus the TX time in its Header) into an HDR
// histogram. The frame's receive time is its packet.Desc.RxTime when the
// port sets one, else the sink's clock read once per batch; generator and
// sink must share the clock (SystemClock does across processes).
//
// A Sink is used by one goroutine (Run's, or the caller of Poll); Totals
// may be read from any, Report only when neither Run nor Poll is running.
type Sink struct {
	cfg   SinkConfig
	port  ports.Port
	wait  ports.Waiter
	clock timestamp.Clock
	mask  int64

	batch  []*packet.Desc
	flows  []*flowState // by flow id; nil until seen
	active []uint16     // ids of the flows seen, in order of first sight
	hist   *hdrhistogram.Histogram

	foreign, malformed, stale, negative, clamped uint64
	first, last                                  int64 // receive times of the first and last counted frame

	totals struct{ packets, bytes atomic.Uint64 }

	progStart, progLast int64
	progPackets         uint64
	progBytes           uint64
}

// NewSink makes a sink on port; clock nil means a SystemClock.
func NewSink(cfg SinkConfig, port ports.Port, clock timestamp.Clock) (*Sink, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("loadgen: sink: %w", err)
	}
	clock, err := orSystemClock(clock)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		cfg: cfg, port: port, clock: clock, mask: int64(cfg.Window - 1),
		flows: make([]*flowState, MaxFlows),
		hist:  hdrhistogram.New(1, MaxLatency, latencySigDigits),
		first: -1,
	}
	s.wait, _ = port.(ports.Waiter)
	s.batch = make([]*packet.Desc, cfg.Batch)
	mem := make([]byte, cfg.Batch*cfg.FrameBuf)
	for i := range s.batch {
		s.batch[i] = &packet.Desc{Buf: mem[i*cfg.FrameBuf : (i+1)*cfg.FrameBuf : (i+1)*cfg.FrameBuf]}
	}
	return s, nil
}

// Prepare allocates the state of flows 0..n−1 now, so that the first frame
// of each does not allocate while traffic runs.
func (s *Sink) Prepare(n int) {
	for f := 0; f < min(n, MaxFlows); f++ {
		s.flow(uint16(f))
	}
}

func (s *Sink) flow(id uint16) *flowState {
	fs := s.flows[id]
	if fs == nil {
		fs = &flowState{top: -1, seen: make([]uint64, s.cfg.Window/64)}
		s.flows[id] = fs
		s.active = append(s.active, id)
	}
	return fs
}

// Poll receives one batch and counts it; now is the time stamped on frames
// the port did not time itself. It returns the number of frames received.
func (s *Sink) Poll(now int64) (int, error) {
	n, err := s.port.Receive(s.batch)
	s.account(n, now)
	return n, err
}

// account counts the first n frames of the batch.
func (s *Sink) account(n int, now int64) {
	var bytes uint64
	for _, d := range s.batch[:n] {
		rx := d.RxTime
		if rx == 0 {
			rx = now
		}
		bytes += uint64(d.Len + FCS)
		s.count(d, rx)
	}
	if n > 0 {
		s.totals.bytes.Add(bytes)
		s.totals.packets.Add(uint64(n))
	}
}

// count accounts one received frame.
func (s *Sink) count(d *packet.Desc, rx int64) {
	if packet.Parse(d) != nil {
		s.foreign++
		s.malformed++
		return
	}
	h, ok := ReadHeader(d)
	if !ok {
		s.foreign++
		return
	}
	if h.Run != s.cfg.Run {
		s.stale++
		return
	}
	if s.first < 0 {
		s.first = rx
	}
	s.last = rx

	lat := rx - h.TxTime
	switch {
	case lat < 0:
		s.negative++
	case lat > MaxLatency:
		s.clamped++
		_ = s.hist.RecordValue(MaxLatency)
	default:
		_ = s.hist.RecordValue(max(lat, 1))
	}

	fs := s.flow(h.Flow)
	fs.received++
	fs.bytes += uint64(d.Len + FCS)
	fs.dscp = d.DSCP
	if d.ECN == packet.CE {
		fs.ce++
	}
	seq := int64(h.Seq)
	if fs.top >= 0 {
		seq = fs.top + int64(int32(h.Seq-uint32(fs.top)))
	}
	w := s.mask + 1
	switch {
	case seq > fs.top:
		if seq-fs.top >= w || fs.top < 0 {
			clear(fs.seen)
		} else {
			for q := fs.top + 1; q < seq; q++ {
				fs.seen[(q&s.mask)>>6] &^= 1 << (q & 63)
			}
		}
		fs.seen[(seq&s.mask)>>6] |= 1 << (seq & 63)
		fs.top = seq
		fs.unique++
	case seq < 0 || fs.top-seq >= w:
		fs.late++
		fs.reordered++
		fs.unique++
	default:
		word, bit := &fs.seen[(seq&s.mask)>>6], uint64(1)<<(seq&63)
		if *word&bit != 0 {
			fs.dup++
			return
		}
		*word |= bit
		fs.reordered++
		fs.unique++
	}
}

// Totals are the frames and bytes (FCS included) a sink has received, of
// any run or none.
type Totals struct {
	Packets uint64
	Bytes   uint64
}

// Totals returns the frames received so far; safe from any goroutine.
func (s *Sink) Totals() Totals {
	return Totals{Packets: s.totals.packets.Load(), Bytes: s.totals.bytes.Load()}
}

// Run receives until ctx is done, on a goroutine locked to its OS thread:
// it polls the port, and after Spin empty polls waits on it (ports.Waiter,
// 1 ms at most) or sleeps 50 µs. It calls Progress every ProgressEvery.
// It returns nil when ctx is done, or the first port error.
func (s *Sink) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	done := ctx.Done()
	idle := 0
	s.progStart = s.clock.Now()
	s.progLast = s.progStart
	for {
		select {
		case <-done:
			return nil
		default:
		}
		// The clock is read after Receive returns, so no frame is stamped
		// as received before it was.
		n, err := s.port.Receive(s.batch)
		now := s.clock.Now()
		s.account(n, now)
		if err != nil {
			return fmt.Errorf("loadgen: sink: receive on %s: %w", s.port.Name(), err)
		}
		if s.cfg.Progress != nil && now-s.progLast >= int64(s.cfg.ProgressEvery) {
			s.cfg.Progress(s.progress(now))
		}
		if n > 0 {
			idle = 0
			continue
		}
		if idle++; idle < s.cfg.Spin {
			continue
		}
		if s.wait != nil {
			if _, err := s.wait.Wait(int64(time.Millisecond)); err != nil {
				return fmt.Errorf("loadgen: sink: wait on %s: %w", s.port.Name(), err)
			}
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}
