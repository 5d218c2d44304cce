package scheduler

import (
	"math"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// mustNew builds a scheduler or fails the test.
func mustNew(tb testing.TB, cfg Config) Scheduler {
	tb.Helper()
	s, err := New(cfg)
	if err != nil {
		tb.Fatalf("New(%+v): %v", cfg, err)
	}
	return s
}

// mustShaper builds a shaper at time 0 or fails the test.
func mustShaper(tb testing.TB, cfg ShaperConfig) *Shaper {
	tb.Helper()
	sh, err := NewShaper(cfg, 0)
	if err != nil {
		tb.Fatalf("NewShaper(%+v): %v", cfg, err)
	}
	return sh
}

// pkt returns a new descriptor for queue q of size bytes.
func pkt(q, size int) *packet.Desc { return &packet.Desc{Queue: uint8(q), Len: size} }

// source is what one queue is offered in a simulation.
type source struct {
	// Saturate keeps this many packets queued from Start on: every packet
	// the queue sends is replaced at once. 0 means not saturating.
	Saturate int
	// Period offers one packet every Period ns from Start; 0 means none.
	Period int64
	Start  int64
	// Stop ends the offer at this time; 0 means never.
	Stop int64
	// Size returns the size of the k-th packet of this queue; nil means 1500.
	Size func(k int) int
}

// sim drives a scheduler behind a shaper in virtual time: packets arrive
// from the sources, and the port sends whenever the shaper allows.
type sim struct {
	tb   testing.TB
	s    Scheduler
	sh   *Shaper
	src  []source
	now  int64
	next []int64 // next periodic arrival per queue
	seq  []int   // packets offered per queue
	// From and Sent: bytes (Desc.Len) each queue sent at or after From.
	From int64
	Sent []int64
	// OnSend, if set, sees every packet sent.
	OnSend func(d *packet.Desc, now int64)
}

func newSim(tb testing.TB, s Scheduler, sh *Shaper, src []source) *sim {
	m := &sim{tb: tb, s: s, sh: sh, src: src,
		next: make([]int64, len(src)), seq: make([]int, len(src)), Sent: make([]int64, len(src))}
	for q, so := range src {
		if so.Saturate > 0 && so.Period > 0 {
			tb.Fatalf("source %d both saturates and is periodic", q)
		}
		m.next[q] = math.MaxInt64
		if so.Period > 0 || so.Saturate > 0 {
			m.next[q] = so.Start
		}
	}
	return m
}

func (m *sim) offer(q int) {
	size := 1500
	if f := m.src[q].Size; f != nil {
		size = f(m.seq[q])
	}
	m.seq[q]++
	if !m.s.Enqueue(pkt(q, size), m.now) {
		m.tb.Fatalf("t=%d: queue %d full", m.now, q)
	}
}

// run advances the simulation to until.
func (m *sim) run(until int64) {
	for {
		for q := range m.src {
			if m.src[q].Saturate > 0 && m.next[q] <= m.now {
				for range m.src[q].Saturate {
					m.offer(q)
				}
				m.next[q] = math.MaxInt64
			}
			for m.next[q] <= m.now {
				m.offer(q)
				m.next[q] += m.src[q].Period
				if st := m.src[q].Stop; st > 0 && m.next[q] >= st {
					m.next[q] = math.MaxInt64
				}
			}
		}
		if _, n := m.s.Len(); n > 0 && m.sh.Ready(m.now) {
			d := m.s.Dequeue(m.now)
			if d == nil {
				m.tb.Fatalf("t=%d: Dequeue returned nil with %d packets queued", m.now, n)
			}
			m.sh.Take(m.now, d.Len)
			if m.now >= m.From {
				m.Sent[d.Queue] += int64(d.Len)
			}
			if m.OnSend != nil {
				m.OnSend(d, m.now)
			}
			if m.src[d.Queue].Saturate > 0 && m.now >= m.src[d.Queue].Start {
				m.offer(int(d.Queue))
			}
			continue
		}
		t := int64(math.MaxInt64)
		for _, a := range m.next {
			t = min(t, a)
		}
		if _, n := m.s.Len(); n > 0 {
			t = min(t, m.sh.Next(m.now))
		}
		if t >= until {
			m.now = until
			return
		}
		m.now = t
	}
}

// share returns each queue's fraction of the bytes sent.
func (m *sim) share() []float64 {
	var total int64
	for _, b := range m.Sent {
		total += b
	}
	f := make([]float64, len(m.Sent))
	for i, b := range m.Sent {
		f[i] = float64(b) / float64(total)
	}
	return f
}

// xorshift is a tiny deterministic generator for packet sizes.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
}

// sizes returns a deterministic size function in [lo, hi] for a seed.
func sizes(seed uint64, lo, hi int) func(int) int {
	x := xorshift(seed*0x9E3779B97F4A7C15 + 1)
	return func(int) int { return lo + int(x.next()%uint64(hi-lo+1)) }
}
