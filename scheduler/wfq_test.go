package scheduler

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// TestWFQIdleQueueAcrossTagWrap: a queue that has been empty while the
// virtual time V moved on by more than half the tag space must start again
// from V, as SCFQ's F = max(V, F_prev) + c/w says (F_prev ≤ V once the queue
// has emptied), and be served within a packet or two. Keeping the old
// F_prev instead makes the serial comparison max(V, F_prev) pick F_prev once
// V − F_prev ≥ 2^63, and the returning queue waits until V catches up again:
// about 8.4 million packets of 64 KiB at weight 1 (issue 12).
//
// Queue 0 sends 64 KiB packets at weight 1, each moving V by 2^16·2^24 =
// 2^40 tag units; queue 1 sends one packet, then stays empty for
// 2^23 + 2^21 of queue 0's packets (V moves 1.25·2^63 past queue 1's last
// tag), twice, so that V also passes 2^64 and wraps.
func TestWFQIdleQueueAcrossTagWrap(t *testing.T) {
	const (
		size = MaxMTU
		idle = 1<<23 + 1<<21 // packets of queue 0 while queue 1 is empty
	)
	s := mustNew(t, Config{Kind: WFQ, MTU: MaxMTU, Capacity: 4, Queues: []QueueConfig{{Weight: 1}, {Weight: 1}}})
	p1 := pkt(1, size)
	now := int64(0)
	for _, d := range []*packet.Desc{pkt(0, size), pkt(0, size)} {
		if !s.Enqueue(d, now) {
			t.Fatal("enqueue refused")
		}
	}
	for round := range 2 {
		if !s.Enqueue(p1, now) {
			t.Fatal("enqueue refused")
		}
		// Queue 0 has two packets queued, queue 1 one: queue 1's packet
		// must leave within the next three (SCFQ's tags differ by at most
		// one packet's c/w here).
		served := false
		for range 3 {
			now++
			d := s.Dequeue(now)
			if d == p1 {
				served = true
				break
			}
			s.Enqueue(d, now) // queue 0 stays backlogged
		}
		if !served {
			t.Fatalf("round %d: queue 1's packet not served within 3 packets", round)
		}
		for i := 0; i < idle; i++ {
			now++
			d := s.Dequeue(now)
			if d == nil || d.Queue != 0 {
				t.Fatalf("round %d, packet %d: dequeued %v, want queue 0's", round, i, d)
			}
			s.Enqueue(d, now)
		}
		// Queue 1 returns after V has moved 1.25·2^63 units: it must be
		// served at once, not after millions of queue 0's packets.
		if !s.Enqueue(p1, now) {
			t.Fatal("enqueue refused")
		}
		for n := 1; ; n++ {
			now++
			d := s.Dequeue(now)
			if d == p1 {
				break
			}
			if n == 3 {
				t.Fatalf("round %d: queue 1, back after %d packets of queue 0, still waits after %d of its packets", round, idle, n)
			}
			s.Enqueue(d, now)
		}
		if b, _ := s.Backlog(0); b != 2*size {
			t.Fatalf("round %d: queue 0 holds %d bytes, want %d", round, b, 2*size)
		}
	}
}
