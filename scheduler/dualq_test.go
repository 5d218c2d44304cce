package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
)

func TestDualQConfig(t *testing.T) {
	s := mustNew(t, Config{Kind: DualQ})
	if s.Queues() != 2 {
		t.Fatalf("a dualq has %d queues, want 2", s.Queues())
	}
	c, l := s.Queue(DualQClassic), s.Queue(DualQL4S)
	if c.Weight != 10 || l.Weight != 90 || c.WeightSum != 100 || c.Strict || l.Strict {
		t.Errorf("queue info: C %+v, L %+v; want weights 10 and 90 of 100", c, l)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Kind: DualQ, NumQueues: 3}, "num_queues: 3 for dualq"},
		{Config{Kind: DualQ, Queues: []QueueConfig{{Weight: 5}, {}}}, "queues[0]"},
		{Config{Kind: DualQ, ClassicProtection: 101}, "classic_protection: 101 outside [0, 100]"},
		{Config{Kind: DualQ, TShift: -time.Millisecond}, "tshift: -1ms outside"},
		{Config{Kind: DWRR, ClassicProtection: 20}, "DualQ's, not dwrr's"},
	} {
		_, err := New(tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if k, err := ParseKind("dualq"); k != DualQ || err != nil {
		t.Errorf("ParseKind(dualq) = %v, %v", k, err)
	}
	if err := s.SetQueue(0, QueueConfig{Weight: 3}); !errors.Is(err, ErrConfig) {
		t.Errorf("SetQueue on a dualq: %v, want refused", err)
	}
}

// order enqueues nc Classic and nl L4S packets of size bytes at 0 and
// returns the queues of the first n dequeued.
func order(s Scheduler, nc, nl, size, n int) []int {
	for range nc {
		s.Enqueue(pkt(DualQClassic, size), 0)
	}
	for range nl {
		s.Enqueue(pkt(DualQL4S, size), 0)
	}
	var got []int
	for i := 0; i < n; i++ {
		d := s.Dequeue(int64(i))
		if d == nil {
			break
		}
		got = append(got, int(d.Queue))
	}
	return got
}

// Linux's credit WRR by hand: the credit starts at 1514·(10 − 90) =
// −121120; each 1500-byte L4S packet adds 10·1500 while the Classic
// queue waits, each Classic packet takes 90·1500 off while the L4S queue
// waits. After nine L4S packets the credit is 13880 > 0 and the Classic
// queue sends one, which takes it back to −121120: 9 to 1, exactly
// classic_protection's 10%.
func TestDualQCreditWRR(t *testing.T) {
	got := order(mustNew(t, Config{Kind: DualQ}), 50, 100, 1500, 30)
	want := "111111111011111111101111111110"
	if s := join(got); s != want {
		t.Errorf("dequeue order %s, want %s", s, want)
	}
	// 50%: the credit starts at 0; an L4S packet makes it 75000, a Classic
	// one takes it back to 0: they alternate.
	got = order(mustNew(t, Config{Kind: DualQ, ClassicProtection: 50}), 10, 10, 1500, 8)
	if s := join(got); s != "10101010" {
		t.Errorf("50%%: dequeue order %s, want 10101010", s)
	}
	// No protection: the L4S queue in strict priority.
	got = order(mustNew(t, Config{Kind: DualQ, ClassicProtection: NoClassicProtection}), 3, 5, 1500, 8)
	if s := join(got); s != "11111000" {
		t.Errorf("no protection: dequeue order %s, want 11111000", s)
	}
}

// An empty queue costs the other nothing, and the credit restarts once
// both are empty.
func TestDualQAloneAndReset(t *testing.T) {
	s := mustNew(t, Config{Kind: DualQ})
	if got := join(order(s, 5, 0, 1500, 10)); got != "00000" {
		t.Errorf("Classic alone: %s", got)
	}
	if got := join(order(s, 0, 5, 1500, 10)); got != "11111" {
		t.Errorf("L4S alone: %s", got)
	}
	// Both empty reset the credit: the WRR starts over with nine L4S packets.
	if got := join(order(s, 3, 12, 1500, 12)); got != "111111111011" {
		t.Errorf("after a reset: %s, want the 9:1 pattern from its start", got)
	}
}

// The time-shifted FIFO (RFC 9332 §4.2.2, Appendix A.2): the L4S head
// goes first unless the Classic head arrived more than tshift before it —
// Appendix B's scheduler(), "if ( lq.time() + tshift >= cq.time() )
// return lq", so a tie goes to the L4S queue.
func TestDualQTimeShiftedFIFO(t *testing.T) {
	s := mustNew(t, Config{Kind: DualQ, TShift: 30 * time.Microsecond})
	s.Enqueue(pkt(DualQClassic, 1500), 0)
	s.Enqueue(pkt(DualQL4S, 1500), 20_000)
	s.Enqueue(pkt(DualQL4S, 1500), 40_000)
	s.Enqueue(pkt(DualQClassic, 1500), 50_000)
	var got []int
	for d := s.Dequeue(60_000); d != nil; d = s.Dequeue(60_000) {
		got = append(got, int(d.Queue))
	}
	// L at 20 µs ≤ C at 0 + 30 µs: L. L at 40 µs > 0 + 30 µs: C (0). L at
	// 40 µs ≤ C at 50 + 30 µs: L. Then C.
	if s := join(got); s != "1010" {
		t.Errorf("time-shifted FIFO order %s, want 1010", s)
	}
	// The tie: at 100 µs the L4S head has waited 70 µs, the Classic head
	// 100 µs, 70 + 30 ≥ 100: L4S; one nanosecond less and it is Classic.
	for _, c := range []struct {
		l    int64
		want int
	}{{30_000, DualQL4S}, {30_001, DualQClassic}} {
		s := mustNew(t, Config{Kind: DualQ, TShift: 30 * time.Microsecond})
		s.Enqueue(pkt(DualQClassic, 1500), 0)
		s.Enqueue(pkt(DualQL4S, 1500), c.l)
		if d := s.Dequeue(100_000); int(d.Queue) != c.want {
			t.Errorf("Classic at 0, L4S at %d ns, tshift 30 µs: queue %d first, want %d", c.l, d.Queue, c.want)
		}
	}
}

func TestDualQAllocatesNothing(t *testing.T) {
	s := mustNew(t, Config{Kind: DualQ})
	ds := []*packet.Desc{pkt(DualQClassic, 1500), pkt(DualQL4S, 1500)}
	now := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		now++
		s.Enqueue(ds[now%2], now)
		s.Dequeue(now)
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

func join(qs []int) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteByte(byte('0' + q))
	}
	return b.String()
}
