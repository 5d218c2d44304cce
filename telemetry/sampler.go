package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Sampler limits.
const (
	MinSamplePeriod = time.Microsecond
	MaxSamples      = 1 << 24
)

// Sampler records the byte occupancy of every egress queue and shared
// pool at a fixed period into a ring of the last N samples: the data of
// the papers' queue-length-over-time plots (e.g. 001 Fig. 2, 000 Fig. 9).
// Each sample carries the switch clock's time at which it was read, so a
// late tick shows as a wider gap rather than a wrong time.
//
// Sample is called by one goroutine (Run's); Series and WriteJSON may be
// called from any goroutine. Sample allocates nothing; a reader copies at
// most MaxWindowValues values, a few thousand at a time under the lock, so
// that neither a large request nor a slow client delays a sample.
type Sampler struct {
	mmu    *buffer.MMU
	clock  timestamp.Clock
	period time.Duration

	ports  []seriesPort
	byName map[string]int // port name → index in ports
	pools  []string
	width  int // values per sample: every queue, then every pool

	mu      sync.Mutex
	times   []int64 // ring of sample times, len n
	vals    []int64 // ring of samples, n × width
	taken   uint64  // samples ever taken; the newest is at (taken−1) mod n
	lost    int64   // time of the newest sample overwritten; -1 while none
	scratch []int64
}

type seriesPort struct {
	name   string
	idx    int // port index in the MMU
	queues int
	first  int // offset of queue 0 in a sample
}

// NewSampler returns a sampler of the queues of mmu, whose ports are named
// portNames and pools poolNames (nil: "0", "1", …), holding the last n
// samples taken every period.
func NewSampler(mmu *buffer.MMU, portNames, poolNames []string, clock timestamp.Clock, period time.Duration, n int) (*Sampler, error) {
	switch {
	case mmu == nil || clock == nil:
		return nil, errors.New("telemetry: sampler needs the switch's buffer and clock")
	case len(portNames) != mmu.Ports():
		return nil, fmt.Errorf("telemetry: %d port names for %d ports", len(portNames), mmu.Ports())
	case period < MinSamplePeriod:
		return nil, fmt.Errorf("telemetry: queue_sample_period %v below %v", period, MinSamplePeriod)
	case n < 2 || n > MaxSamples:
		return nil, fmt.Errorf("telemetry: queue_samples %d outside [2, %d]", n, MaxSamples)
	}
	s := &Sampler{mmu: mmu, clock: clock, period: period, lost: -1, byName: make(map[string]int, len(portNames))}
	for i, name := range portNames {
		q := mmu.Queues(i)
		s.ports = append(s.ports, seriesPort{name: name, idx: i, queues: q, first: s.width})
		s.byName[name] = i
		s.width += q
	}
	for i := range mmu.Pools() {
		name := fmt.Sprint(i)
		if i < len(poolNames) {
			name = poolNames[i]
		}
		s.pools = append(s.pools, name)
	}
	s.width += len(s.pools)
	s.times = make([]int64, n)
	s.vals = make([]int64, n*s.width)
	s.scratch = make([]int64, s.width)
	return s, nil
}

// Period returns the sampling period.
func (s *Sampler) Period() time.Duration { return s.period }

// Sample reads every queue and pool once, now.
func (s *Sampler) Sample() {
	now := s.clock.Now()
	v := s.scratch
	for _, p := range s.ports {
		for q := range p.queues {
			v[p.first+q] = s.mmu.QueueBytes(p.idx, q)
		}
	}
	base := s.width - len(s.pools)
	for i := range s.pools {
		v[base+i] = s.mmu.PoolBytes(i)
	}
	n := uint64(len(s.times))
	s.mu.Lock()
	slot := s.taken % n
	if s.taken >= n {
		s.lost = s.times[slot]
	}
	s.times[slot] = now
	copy(s.vals[int(slot)*s.width:], v)
	s.taken++
	s.mu.Unlock()
}

// Run samples every period until ctx is done.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// MaxWindowValues bounds what one read of the sampler copies and one
// /queues response carries: sample times and occupancies together, 2 MiB
// of int64 (a few MB of JSON). A longer span is cut after its oldest
// samples, and the response says so (Series.More).
const MaxWindowValues = 1 << 18

// copyChunk is about how many values a reader copies per hold of the lock.
const copyChunk = 4096

// Series is a span of the sampler's ring, column by column: Ports[p].
// Queues[q][i] is the bytes in queue q of port p at Times[i].
type Series struct {
	// Clock names the switch clock the times are read on ("monotonic":
	// ns since the switch started; "virtual").
	Clock    string `json:"clock"`
	PeriodNS int64  `json:"period_ns"`
	// Next is the time to pass as since= to get only newer samples.
	Next int64 `json:"next"`
	// Truncated says that samples newer than since were overwritten
	// before this read: poll more often, or raise queue_samples.
	Truncated bool `json:"truncated"`
	// More says that the span was cut at MaxWindowValues (or by a ring that
	// wrapped during the read): newer samples are waiting; ask again with
	// since = Next.
	More  bool         `json:"more"`
	Times []int64      `json:"t_ns"`
	Ports []PortSeries `json:"ports"`
	Pools []PoolSeries `json:"pools"`
}

// PortSeries are one port's queue occupancies.
type PortSeries struct {
	Name   string    `json:"name"`
	Queues [][]int64 `json:"queues"`
}

// PoolSeries is one shared pool's occupancy.
type PoolSeries struct {
	Name  string  `json:"name"`
	Bytes []int64 `json:"bytes"`
}

// ErrNoPort is returned for a port name the switch does not have.
var ErrNoPort = errors.New("no such port")

// Selection is a set of the sampler's ports, each at most once.
type Selection struct {
	in []bool // by port index; nil: every port
}

// Select returns the set of the named ports; no names select every port.
// A name may repeat; the port is selected once.
func (s *Sampler) Select(names ...string) (Selection, error) {
	var sel Selection
	for _, name := range names {
		if err := s.add(&sel, name); err != nil {
			return Selection{}, err
		}
	}
	return sel, nil
}

// add adds the port name to sel. It allocates only the first time, and
// then a slice of one bool per port: never in proportion to how often
// names repeat.
func (s *Sampler) add(sel *Selection, name string) error {
	i, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("telemetry: port %q: %w", name, ErrNoPort)
	}
	if sel.in == nil {
		sel.in = make([]bool, len(s.ports))
	}
	sel.in[i] = true
	return nil
}

func (sel Selection) has(port int) bool { return sel.in == nil || sel.in[port] }

// window is a copy of a span of the ring: the times and, row by row, the
// values of the columns cols (offsets in a sample).
type window struct {
	next      int64
	truncated bool
	more      bool
	ports     []int // indices of the selected ports, in the switch's order
	cols      []int // the selected ports' queues, then every pool
	times     []int64
	vals      []int64 // len(times) rows of len(cols)
}

// read copies the samples taken after since (all with since < 0), at most
// limit of the newest (limit ≤ 0: no limit), for the ports in sel, and at
// most maxValues values in all (times included): a longer span is cut after
// its oldest samples and marked more. The lock is held for the span's
// bounds and then for chunks of about copyChunk values, never while
// allocating.
func (s *Sampler) read(since int64, limit int, sel Selection, maxValues int) window {
	w := window{next: since}
	for _, p := range s.ports {
		if sel.has(p.idx) {
			w.ports = append(w.ports, p.idx)
			for q := range p.queues {
				w.cols = append(w.cols, p.first+q)
			}
		}
	}
	base := s.width - len(s.pools)
	for j := range s.pools {
		w.cols = append(w.cols, base+j)
	}
	row := 1 + len(w.cols)

	n := uint64(len(s.times))
	s.mu.Lock()
	first, end := s.span(since)
	w.truncated = since >= 0 && s.lost > since
	s.mu.Unlock()
	if limit > 0 && end-first > uint64(limit) {
		first = end - uint64(limit)
	}
	count := int(end - first)
	if max(count, 1)*row > maxValues {
		count, w.more = max(1, maxValues/row), true
	}
	w.times = make([]int64, count)
	w.vals = make([]int64, count*len(w.cols))
	rows := max(1, copyChunk/row)
	for i := 0; i < count; {
		s.mu.Lock()
		if s.taken > n && first+uint64(i) < s.taken-n {
			// The ring wrapped past the rest while we copied: keep what we
			// have; the next read reports the loss as truncated.
			s.mu.Unlock()
			count, w.more = i, true
			break
		}
		for stop := min(count, i+rows); i < stop; i++ {
			slot := int((first + uint64(i)) % n)
			w.times[i] = s.times[slot]
			sample := s.vals[slot*s.width : (slot+1)*s.width]
			dst := w.vals[i*len(w.cols) : (i+1)*len(w.cols)]
			for j, c := range w.cols {
				dst[j] = sample[c]
			}
		}
		s.mu.Unlock()
	}
	w.times, w.vals = w.times[:count], w.vals[:count*len(w.cols)]
	if count > 0 {
		w.next = w.times[count-1]
	}
	return w
}

// span returns the sample numbers [first, end) of the samples in the ring
// taken after since. s.mu is held.
func (s *Sampler) span(since int64) (first, end uint64) {
	n := uint64(len(s.times))
	oldest := uint64(0)
	if s.taken > n {
		oldest = s.taken - n
	}
	// Samples are in time order: binary-search the first newer than since.
	lo, hi := oldest, s.taken
	for lo < hi {
		mid := lo + (hi-lo)/2
		if s.times[mid%n] > since {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, s.taken
}

// Series returns the samples taken after time since (all with since < 0),
// at most limit of the newest (limit ≤ 0: no limit), for the named ports
// (all when ports is empty; a repeated name counts once), and at most
// MaxWindowValues values in all: when More is set, call again with since
// = Next for the rest.
func (s *Sampler) Series(since int64, limit int, ports ...string) (Series, error) {
	sel, err := s.Select(ports...)
	if err != nil {
		return Series{}, err
	}
	w := s.read(since, limit, sel, MaxWindowValues)
	out := Series{Clock: timestamp.Name(s.clock), PeriodNS: int64(s.period), Next: w.next, Truncated: w.truncated, More: w.more, Times: w.times}
	col := 0
	column := func() []int64 {
		c := make([]int64, len(w.times))
		for i := range c {
			c[i] = w.vals[i*len(w.cols)+col]
		}
		col++
		return c
	}
	for _, pi := range w.ports {
		p := s.ports[pi]
		ps := PortSeries{Name: p.name, Queues: make([][]int64, p.queues)}
		for q := range ps.Queues {
			ps.Queues[q] = column()
		}
		out.Ports = append(out.Ports, ps)
	}
	for _, name := range s.pools {
		out.Pools = append(out.Pools, PoolSeries{Name: name, Bytes: column()})
	}
	return out, nil
}

// WriteJSON writes what Series(since, limit, ports of sel) would return as
// JSON to w, column by column from one bounded copy of the ring, without
// building the columns.
func (s *Sampler) WriteJSON(w io.Writer, since int64, limit int, sel Selection) error {
	win := s.read(since, limit, sel, MaxWindowValues)
	bw := bufio.NewWriterSize(w, 32<<10)
	b := make([]byte, 0, 256)
	b = append(b, `{"clock":`...)
	b = strconv.AppendQuote(b, timestamp.Name(s.clock))
	b = append(b, `,"period_ns":`...)
	b = strconv.AppendInt(b, int64(s.period), 10)
	b = append(b, `,"next":`...)
	b = strconv.AppendInt(b, win.next, 10)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, win.truncated)
	b = append(b, `,"more":`...)
	b = strconv.AppendBool(b, win.more)
	b = append(b, `,"t_ns":`...)
	bw.Write(b)
	writeInts(bw, b, win.times, 0, 1)
	bw.WriteString(`,"ports":[`)
	col := 0
	for k, pi := range win.ports {
		p := s.ports[pi]
		if k > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"name":`)
		writeString(bw, p.name)
		bw.WriteString(`,"queues":[`)
		for q := range p.queues {
			if q > 0 {
				bw.WriteByte(',')
			}
			writeInts(bw, b, win.vals, col, len(win.cols))
			col++
		}
		bw.WriteString(`]}`)
	}
	bw.WriteString(`],"pools":[`)
	for j, name := range s.pools {
		if j > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"name":`)
		writeString(bw, name)
		bw.WriteString(`,"bytes":`)
		writeInts(bw, b, win.vals, col, len(win.cols))
		col++
		bw.WriteByte('}')
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// writeInts writes the column vals[off], vals[off+stride], … as a JSON
// array, formatting into scratch b.
func writeInts(w *bufio.Writer, b []byte, vals []int64, off, stride int) {
	w.WriteByte('[')
	for i := off; i < len(vals); i += stride {
		b = b[:0]
		if i > off {
			b = append(b, ',')
		}
		w.Write(strconv.AppendInt(b, vals[i], 10))
	}
	w.WriteByte(']')
}

func writeString(w *bufio.Writer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	w.Write(b)
}
