package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
// Sample is called by one goroutine (Run's); Series may be called from any
// goroutine. Neither allocates per sample.
type Sampler struct {
	mmu    *buffer.MMU
	clock  timestamp.Clock
	period time.Duration

	ports []seriesPort
	pools []string
	width int // values per sample: every queue, then every pool

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
	s := &Sampler{mmu: mmu, clock: clock, period: period, lost: -1}
	for i, name := range portNames {
		q := mmu.Queues(i)
		s.ports = append(s.ports, seriesPort{name: name, idx: i, queues: q, first: s.width})
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

// Series is a window of the sampler's ring, column by column: Ports[p].
// Queues[q][i] is the bytes in queue q of port p at Times[i].
type Series struct {
	PeriodNS int64 `json:"period_ns"`
	// Next is the time to pass as since= to get only newer samples.
	Next int64 `json:"next"`
	// Truncated says that samples newer than since were overwritten
	// before this read: poll more often, or raise queue_samples.
	Truncated bool         `json:"truncated"`
	Times     []int64      `json:"t_ns"`
	Ports     []PortSeries `json:"ports"`
	Pools     []PoolSeries `json:"pools"`
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

// ErrNoPort is returned by Series for a port name the switch does not have.
var ErrNoPort = errors.New("no such port")

// Series returns the samples taken after time since (all with since < 0),
// at most limit of the newest (limit ≤ 0: no limit), for the named ports
// (all when ports is empty).
func (s *Sampler) Series(since int64, limit int, ports ...string) (Series, error) {
	sel := s.ports
	if len(ports) > 0 {
		sel = nil
		for _, name := range ports {
			found := false
			for _, p := range s.ports {
				if p.name == name {
					sel, found = append(sel, p), true
				}
			}
			if !found {
				return Series{}, fmt.Errorf("telemetry: port %q: %w", name, ErrNoPort)
			}
		}
	}
	out := Series{PeriodNS: int64(s.period), Next: since}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := uint64(len(s.times))
	oldest := uint64(0)
	if s.taken > n {
		oldest = s.taken - n
	}
	// Samples are in time order: binary-search the first newer than since.
	first := oldest + uint64(sort.Search(int(s.taken-oldest), func(i int) bool {
		return s.times[(oldest+uint64(i))%n] > since
	}))
	out.Truncated = since >= 0 && s.lost > since
	if limit > 0 && s.taken-first > uint64(limit) {
		first = s.taken - uint64(limit)
	}
	count := int(s.taken - first)
	out.Times = make([]int64, count)
	for i := range count {
		out.Times[i] = s.times[(first+uint64(i))%n]
	}
	if count > 0 {
		out.Next = out.Times[count-1]
	}
	for _, p := range sel {
		ps := PortSeries{Name: p.name, Queues: make([][]int64, p.queues)}
		for q := range p.queues {
			col := make([]int64, count)
			for i := range count {
				col[i] = s.vals[int((first+uint64(i))%n)*s.width+p.first+q]
			}
			ps.Queues[q] = col
		}
		out.Ports = append(out.Ports, ps)
	}
	base := s.width - len(s.pools)
	for j, name := range s.pools {
		col := make([]int64, count)
		for i := range count {
			col[i] = s.vals[int((first+uint64(i))%n)*s.width+base+j]
		}
		out.Pools = append(out.Pools, PoolSeries{Name: name, Bytes: col})
	}
	return out, nil
}
