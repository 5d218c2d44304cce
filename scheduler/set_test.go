package scheduler

import (
	"errors"
	"testing"
)

// SetQueue changes a queue's share while it holds packets: two backlogged
// DWRR queues of equal quantum share 1:1, and after queue 1's weight goes
// to 3 they share 1:3 from its next turn on; the QueueInfo of both queues
// follows. A change of level, or a weight out of range, is refused.
func TestSetQueue(t *testing.T) {
	for _, kind := range []Kind{DWRR, WRR, WFQ} {
		s, err := New(Config{Kind: kind, NumQueues: 2, Capacity: 4096})
		if err != nil {
			t.Fatal(err)
		}
		// Both queues stay backlogged: each packet served is replaced. A
		// WFQ packet keeps the finish tag it got when it came, so the
		// backlog is short.
		for range 20 {
			s.Enqueue(pkt(0, 1514), 0)
			s.Enqueue(pkt(1, 1514), 0)
		}
		serve := func(n int) (bytes [2]int) {
			for range n {
				d := s.Dequeue(0)
				bytes[d.Queue] += d.Len
				s.Enqueue(pkt(int(d.Queue), 1514), 0)
			}
			return bytes
		}
		near := func(a, b int) bool { return a-b <= 3*1514 && b-a <= 3*1514 }
		if b := serve(400); !near(b[0], b[1]) {
			t.Fatalf("%v: equal weights served %v", kind, b)
		}
		if err := s.SetQueue(1, QueueConfig{Weight: 3}); err != nil {
			t.Fatalf("%v: %v", kind, err)
		}
		serve(100) // the turn under way ends, and the packets tagged before the change leave
		if b := serve(800); !near(b[1], 3*b[0]) {
			t.Errorf("%v: weights 1 and 3 served %v, want 1:3", kind, b)
		}
		q0, q1 := s.Queue(0), s.Queue(1)
		if q1.Weight != 3*q0.Weight || q0.WeightSum != 4*q0.Weight || q1.PortWeightSum != 4*q0.PortWeight {
			t.Errorf("%v: QueueInfo after the change %+v, %+v", kind, q0, q1)
		}
		if b := s.BusyWeightSum(); b != q0.Weight+q1.Weight {
			t.Errorf("%v: busy weight %d, want %d", kind, b, q0.Weight+q1.Weight)
		}
		for _, c := range []QueueConfig{{Strict: true}, {Weight: MaxWeight + 1}} {
			if err := s.SetQueue(0, c); !errors.Is(err, ErrConfig) {
				t.Errorf("%v: SetQueue(0, %+v) = %v, want a config error", kind, c, err)
			}
		}
		if err := s.SetQueue(2, QueueConfig{}); err == nil {
			t.Errorf("%v: SetQueue of queue 2 of 2 succeeded", kind)
		}
	}
}

// Set changes a shaper's rate at an instant: the time before earns credit
// at the old rate, the time after at the new one.
func TestShaperSet(t *testing.T) {
	s, err := NewShaper(ShaperConfig{Rate: 1_000_000_000, Bucket: 1500}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Take(0, 1500)
	s.Take(0, 1500) // 1500 bytes of debt: 12 µs at 1 Gbit/s
	if err := s.Set(6_000, 100_000_000, 1500); err != nil {
		t.Fatal(err)
	}
	// 6 µs paid back 750 bytes at 1 Gbit/s; the other 750 take 60 µs at
	// 100 Mbit/s.
	if next := s.Next(6_000); next != 66_000 {
		t.Errorf("after the change the next departure is at %d ns, want 66000", next)
	}
	if s.Rate() != 100_000_000 {
		t.Errorf("rate %d", s.Rate())
	}
	if err := s.Set(66_000, -1, 1500); !errors.Is(err, ErrConfig) {
		t.Errorf("Set to a negative rate: %v", err)
	}
	// Unshaped to shaped: a full bucket.
	u, _ := NewShaper(ShaperConfig{}, 0)
	if err := u.Set(10, 1_000_000_000, 3000); err != nil {
		t.Fatal(err)
	}
	u.Take(10, 1500)
	if !u.Ready(10) {
		t.Error("a shaper that was unshaped starts in debt")
	}
}

// SetLineRate changes the rate a round-robin scheduler times with, and
// the T_idle it defaults from it (an MTU's time, 001 §5): idle for 6 µs
// after a round at 1 Gbit/s (T_idle 12 µs) leaves T_round as it was; the
// same idle after the rate went to 10 Gbit/s (T_idle 1.2 µs) decays it.
func TestSetLineRate(t *testing.T) {
	s := mustNew(t, Config{Kind: DWRR, NumQueues: 2, LineRate: 1e9, MTU: 1500})
	var now int64
	for i := range 4 {
		s.Enqueue(pkt(i%2, 1500), 0)
	}
	for i := range 40 {
		d := s.Dequeue(now)
		if i < 36 {
			s.Enqueue(pkt(int(d.Queue), 1500), now)
		}
		now += 12_000
	}
	t0 := s.RoundTime(now)
	if t0 == 0 {
		t.Fatal("no round time")
	}
	if got := s.RoundTime(now + 6_000); got != t0 {
		t.Errorf("6 µs idle at 1 Gbit/s: T_round %d, want %d", got, t0)
	}
	if err := s.SetLineRate(10e9); err != nil {
		t.Fatal(err)
	}
	if got := s.RoundTime(now + 6_000); got >= t0 {
		t.Errorf("6 µs idle at 10 Gbit/s (T_idle 1.2 µs): T_round %d, want it decayed below %d", got, t0)
	}
	if err := s.SetLineRate(-1); !errors.Is(err, ErrConfig) {
		t.Errorf("a negative rate: %v", err)
	}
	for _, kind := range []Kind{SP, WFQ} {
		if err := mustNew(t, Config{Kind: kind, NumQueues: 2}).SetLineRate(1e9); err != nil {
			t.Errorf("%v: %v", kind, err)
		}
	}
}
