package marking

import (
	"slices"
	"testing"
)

func newTestECNSharp(tb testing.TB, cfg ECNSharpConfig, queues int) *ecnsharp {
	tb.Helper()
	m, err := NewECNSharp(cfg, Dequeue, queues)
	if err != nil {
		tb.Fatal(err)
	}
	return m.(*ecnsharp)
}

// dqStep returns a sojourn trace that is lo before t0 and hi from t0 on.
func dqStep(t0, lo, hi int64) func(int64) int64 {
	return func(now int64) int64 {
		if now < t0 {
			return lo
		}
		return hi
	}
}

// ecnsharpPersistentMarks are the persistent marks of Algorithm 1 (000
// §3.2) for pst_target 10 µs, pst_interval I = 60 µs, one packet per µs,
// sojourn 5 µs before 20 µs and 20 µs from then on, worked out by hand:
// first_above_time = 20 µs; IsPersistentQueueBuildups is first true at
// now > 20 + 60, i.e. 81 µs: mark, marking_count = 1, marking_next =
// 81 + 60 = 141 µs. Then a mark at the first packet after marking_next,
// and marking_next += I/marking_count: 142 (count 2, next 141 + 30 = 171),
// 172 (3, next 191), 192 (4, next 206), 207 (5, next 218), 219 (6, next
// 228), 229 (7, next 236.571).
var ecnsharpPersistentMarks = dqMicros(81, 142, 172, 192, 207, 219, 229)

func TestECNSharpPersistentMarking(t *testing.T) {
	m := newTestECNSharp(t, ECNSharpConfig{InsTarget: 1e6, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS}, 1)
	q := &m.queues[0]
	var marks, next []int64
	for now := int64(0); now < 230*dqUS; now += dqUS {
		s := dqStep(20*dqUS, 5*dqUS, 20*dqUS)(now)
		v := View{Now: now, EnqTime: now - s}
		if m.Mark(&v) == Mark {
			marks = append(marks, now)
			next = append(next, q.markingNext)
			if v.Value != s || v.Threshold != 10*dqUS {
				t.Errorf("mark at %d: Value, Threshold = %d, %d; want %d, pst_target", now, v.Value, v.Threshold, s)
			}
		}
	}
	if !slices.Equal(marks, ecnsharpPersistentMarks) {
		t.Fatalf("persistent marks at %v, want %v", marks, ecnsharpPersistentMarks)
	}
	// The first mark comes one pst_interval after first_above_time
	// (strictly after: the first packet past 80 µs), the second one
	// pst_interval after the first, and each later one
	// pst_interval/marking_count after the previous marking_next
	// (Algorithm 1 lines 14–16 and 7–9).
	if next[0]-marks[0] != 60*dqUS {
		t.Errorf("first marking_next %d after the first mark, want pst_interval", next[0]-marks[0])
	}
	for i := 1; i < len(next); i++ {
		count := int64(i + 1)
		if got, want := next[i]-next[i-1], 60*dqUS/count; got != want {
			t.Errorf("mark %d: marking_next moved %d ns, want pst_interval/%d = %d", count, got, count, want)
		}
	}
	if !q.markingState || q.markingCount != 7 {
		t.Errorf("marking_state %v marking_count %d, want true 7", q.markingState, q.markingCount)
	}

	// One packet below pst_target resets the state (Algorithm 1 lines
	// 3–6, 22–24): no mark, and detection starts over from the next
	// packet above, first_above_time = 231 µs, so the next persistent mark
	// is at the first packet after 291 µs and the one after that at the
	// first packet after 292 + 60 µs.
	v := View{Now: 230 * dqUS, EnqTime: 230*dqUS - (10*dqUS - 1)}
	if m.Mark(&v) != Pass {
		t.Errorf("below pst_target: marked")
	}
	if q.markingState || q.above {
		t.Errorf("below pst_target: marking_state %v, first_above_time set %v; want both reset", q.markingState, q.above)
	}
	marks = dqRun(t, m, 0, 231*dqUS, 360*dqUS, dqUS, 0, dqConst(20*dqUS))
	if want := dqMicros(292, 353); !slices.Equal(marks, want) {
		t.Errorf("after reset: marks at %v, want %v", marks, want)
	}
	if q.markingCount != 2 {
		t.Errorf("after reset: marking_count %d, want 2", q.markingCount)
	}
}

func TestECNSharpAtPstTargetIsAbove(t *testing.T) {
	// Algorithm 1 line 22 resets only when sojourn_time < pst_target, so
	// a sojourn equal to pst_target keeps the state.
	m := newTestECNSharp(t, ECNSharpConfig{InsTarget: 1e6, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS}, 1)
	marks := dqRun(t, m, 0, 0, 230*dqUS, dqUS, 0, func(now int64) int64 {
		switch {
		case now < 20*dqUS:
			return 5 * dqUS
		case now%(7*dqUS) == 0:
			return 10 * dqUS // exactly pst_target
		}
		return 20 * dqUS
	})
	if !slices.Equal(marks, ecnsharpPersistentMarks) {
		t.Errorf("marks at %v, want %v", marks, ecnsharpPersistentMarks)
	}
}

func TestECNSharpInstantaneousMarking(t *testing.T) {
	// Every 10th packet has a sojourn of 60 µs > ins_target = 50 µs and is
	// marked whatever the persistent state (000 §3.2: "a packet is marked
	// when either one of the following conditions decides to mark it").
	// The spikes are above pst_target too, so the persistent marks are
	// those of the same trace without spikes.
	cfg := ECNSharpConfig{InsTarget: 50 * dqUS, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS}
	for _, base := range []int64{5 * dqUS, 20 * dqUS} {
		spiky := func(now int64) int64 {
			if now%(10*dqUS) == 5*dqUS {
				return 60 * dqUS
			}
			if now%(10*dqUS) == 6*dqUS {
				return 50 * dqUS // = ins_target: not above
			}
			return base
		}
		var spikes []int64
		for now := int64(0); now < 400*dqUS; now += dqUS {
			if spiky(now) > 50*dqUS {
				spikes = append(spikes, now)
			}
		}
		smooth := dqRun(t, newTestECNSharp(t, cfg, 1), 0, 0, 400*dqUS, dqUS, 0, func(now int64) int64 {
			if spiky(now) == 60*dqUS {
				return 20 * dqUS // above pst_target, below ins_target
			}
			return spiky(now)
		})
		if base < cfg.PstTarget && len(smooth) != 0 {
			t.Fatalf("base %d: persistent marks %v below pst_target", base, smooth)
		}
		if base > cfg.PstTarget && len(smooth) < 5 {
			t.Fatalf("base %d: only %d persistent marks", base, len(smooth))
		}
		want := slices.Sorted(slices.Values(append(slices.Clone(spikes), smooth...)))
		want = slices.Compact(want)

		m := newTestECNSharp(t, cfg, 1)
		var got []int64
		for now := int64(0); now < 400*dqUS; now += dqUS {
			s := spiky(now)
			v := View{Now: now, EnqTime: now - s}
			if m.Mark(&v) != Mark {
				continue
			}
			got = append(got, now)
			if s > cfg.InsTarget && (v.Value != s || v.Threshold != cfg.InsTarget) {
				t.Errorf("base %d: instantaneous mark at %d: Value, Threshold = %d, %d", base, now, v.Value, v.Threshold)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("base %d: marks at %v, want spikes %v plus persistent %v", base, got, spikes, smooth)
		}
	}
}

func TestECNSharpPerQueueState(t *testing.T) {
	m := newTestECNSharp(t, ECNSharpConfig{InsTarget: 1e6, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS}, 3)
	var marks [3][]int64
	for now := int64(0); now < 230*dqUS; now += dqUS {
		for q, s := range [3]int64{dqStep(20*dqUS, 5*dqUS, 20*dqUS)(now), 5 * dqUS, 9 * dqUS} {
			v := View{Now: now, EnqTime: now - s, Queue: q}
			if m.Mark(&v) == Mark {
				marks[q] = append(marks[q], now)
			}
		}
	}
	if !slices.Equal(marks[0], ecnsharpPersistentMarks) || len(marks[1])+len(marks[2]) != 0 {
		t.Errorf("marks %v, want queue 0 %v and none elsewhere", marks, ecnsharpPersistentMarks)
	}
}

func TestECNSharpQueueLength(t *testing.T) {
	// 000 §3.5: the same algorithm on queue length. At C = 10 Gbit/s,
	// K = T·C (000 §3.2 Eq. 2): pst_target 10 µs is 12 500 bytes and
	// ins_target 100 µs is 125 000 bytes. A backlog of 6 250 bytes before
	// 20 µs and 25 000 bytes after it is the sojourn trace of
	// TestECNSharpPersistentMarking, so the persistent marks fall at the
	// same times; a backlog over 125 000 bytes marks at once.
	cfg := ECNSharpConfig{InsTarget: 100 * dqUS, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS, QueueLength: true}
	m := newTestECNSharp(t, cfg, 1)
	backlog := func(now int64) int64 {
		switch {
		case now == 10*dqUS:
			return 125_001 // a burst, instantaneous mark
		case now == 11*dqUS:
			return 125_000 // = ins_target_bytes: not above
		case now < 20*dqUS:
			return 6_250
		}
		return 25_000
	}
	var marks []int64
	for now := int64(0); now < 230*dqUS; now += dqUS {
		// The sojourn time says nothing here: it is always huge.
		v := View{Now: now, EnqTime: now - 1e9, QueueBytes: backlog(now), LineRate: 10e9}
		if m.Mark(&v) != Mark {
			continue
		}
		marks = append(marks, now)
		want := int64(12_500)
		if now == 10*dqUS {
			want = 125_000
		}
		if v.Value != backlog(now) || v.Threshold != want {
			t.Errorf("mark at %d: Value, Threshold = %d, %d; want %d, %d", now, v.Value, v.Threshold, backlog(now), want)
		}
	}
	want := append(dqMicros(10), ecnsharpPersistentMarks...)
	if !slices.Equal(marks, want) {
		t.Errorf("marks at %v, want %v", marks, want)
	}

	// A slower port converts the same times to fewer bytes: at 1 Gbit/s
	// ins_target is 12 500 bytes, so a 25 000-byte backlog marks at once.
	v := View{Now: 231 * dqUS, EnqTime: 0, QueueBytes: 25_000, LineRate: 1e9}
	if m.Mark(&v) != Mark || v.Threshold != 12_500 {
		t.Errorf("at 1 Gbit/s: verdict threshold %d, want a mark against 12500 bytes", v.Threshold)
	}

	// Configured byte thresholds are used as given, whatever the rate.
	cfg.InsTargetBytes, cfg.PstTargetBytes = 200_000, 30_000
	fixed := newTestECNSharp(t, cfg, 1)
	for _, rate := range []int64{1e9, 10e9, 100e9} {
		v := View{Now: 0, QueueBytes: 25_000, LineRate: rate}
		fixed.Mark(&v)
		if fixed.insBytes != 200_000 || fixed.pstBytes != 30_000 {
			t.Errorf("rate %d: thresholds %d, %d; want the configured 200000, 30000", rate, fixed.insBytes, fixed.pstBytes)
		}
	}
	if got := dqRunQueue(fixed, 0, 500*dqUS, 25_000); len(got) != 0 {
		t.Errorf("backlog below pst_target_bytes: marks at %v", got)
	}

	// The queue-length variant needs no timestamp, so it may run at
	// enqueue.
	if _, err := NewECNSharp(cfg, Enqueue, 1); err != nil {
		t.Errorf("queue-length variant at enqueue: %v", err)
	}
}

func TestECNSharpQueueLengthUnknownRate(t *testing.T) {
	// While the port's rate C is unknown (View.LineRate = 0), thresholds
	// converted from time by K = T·C (000 §3.2 Eq. 2) cannot be known, and
	// ECN♯ marks nothing on them, as every marker does with a threshold
	// that depends on C; it used to convert them to 0 bytes and mark every
	// packet (issue 11). Once C is known it marks; a threshold given in
	// bytes needs no C.
	m := newTestECNSharp(t, ECNSharpConfig{InsTarget: 100 * dqUS, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS, QueueLength: true}, 1)
	for now := int64(0); now < 500*dqUS; now += dqUS {
		v := View{Now: now, EnqTime: now, QueueBytes: 1 << 30}
		if got := m.Mark(&v); got != Pass {
			t.Fatalf("at %d ns with C unknown and a 1 GiB backlog: %v (threshold %d), want pass", now, got, v.Threshold)
		}
	}
	v := View{Now: 500 * dqUS, QueueBytes: 1 << 30, LineRate: 10e9}
	if m.Mark(&v) != Mark || v.Threshold != 125_000 {
		t.Errorf("C known (10 Gbit/s): threshold %d, want a mark against ins_target = 125000 bytes", v.Threshold)
	}
	v = View{Now: 501 * dqUS, QueueBytes: 1 << 30}
	if got := m.Mark(&v); got != Pass {
		t.Errorf("C unknown again: %v, want pass", got)
	}

	// ins_target_bytes given: the instantaneous rule works without C; the
	// persistent one, whose pst_target is a time, waits for C.
	m = newTestECNSharp(t, ECNSharpConfig{InsTargetBytes: 50_000, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS, QueueLength: true}, 1)
	for now := int64(0); now < 500*dqUS; now += dqUS {
		v := View{Now: now, EnqTime: now, QueueBytes: 40_000}
		if got := m.Mark(&v); got != Pass {
			t.Fatalf("at %d ns, 40000 B below ins_target_bytes, C unknown: %v, want pass", now, got)
		}
	}
	v = View{Now: 500 * dqUS, QueueBytes: 50_001}
	if m.Mark(&v) != Mark || v.Threshold != 50_000 {
		t.Errorf("above ins_target_bytes with C unknown: threshold %d, want a mark against 50000", v.Threshold)
	}
}

// dqRunQueue feeds m one packet per µs with a constant backlog.
func dqRunQueue(m Marker, from, to, backlog int64) []int64 {
	var marks []int64
	for now := from; now < to; now += dqUS {
		v := View{Now: now, EnqTime: now, QueueBytes: backlog, LineRate: 10e9}
		if m.Mark(&v) == Mark {
			marks = append(marks, now)
		}
	}
	return marks
}

func TestECNSharpBytes(t *testing.T) {
	for _, tc := range []struct{ t, rate, want int64 }{
		{10_000, 10e9, 12_500},
		{200_000, 100e9, 2_500_000},
		{1, 1e9, 0},         // 0.125 bytes, rounded down
		{8, 1e9, 1},         // exactly one byte
		{10e9, 800e9, 1e12}, // 10 s at 800 Gbit/s: no overflow
		{10_000, 0, 0},
		{10_000, -1, 0},
	} {
		if got := ecnsharpBytes(tc.t, tc.rate); got != tc.want {
			t.Errorf("ecnsharpBytes(%d ns, %d bit/s) = %d, want %d", tc.t, tc.rate, got, tc.want)
		}
	}
}

func TestECNSharpDefaults(t *testing.T) {
	m := newTestECNSharp(t, ECNSharpConfig{}, 1)
	// 000 §5.2, by the rule of thumb of §3.4.
	if m.insTarget != 200_000 || m.pstTarget != 85_000 || m.pstInterval != 200_000 {
		t.Errorf("defaults ins_target %d pst_target %d pst_interval %d, want 200 µs, 85 µs, 200 µs", m.insTarget, m.pstTarget, m.pstInterval)
	}
}

func TestECNSharpConfigErrors(t *testing.T) {
	with := func(c ECNSharpConfig, s Stage, q int) func() (Marker, error) {
		return func() (Marker, error) { return NewECNSharp(c, s, q) }
	}
	ok := ECNSharpConfig{}
	dqCheckConfigErrors(t, []dqConfigCase{
		{"enqueue", with(ok, Enqueue, 1), []string{"ecnsharp", "stage enqueue"}, ErrDequeueOnly},
		{"bad stage", with(ok, Stage(2), 1), []string{"ecnsharp", "stage 2"}, ErrDequeueOnly},
		{"queue length, bad stage", with(ECNSharpConfig{QueueLength: true}, Stage(2), 1), []string{"stage 2"}, ErrDequeueOnly},
		{"no queues", with(ok, Dequeue, 0), []string{"ecnsharp", "queues 0"}, nil},
		{"queue length, no queues", with(ECNSharpConfig{QueueLength: true}, Enqueue, 0), []string{"queues 0"}, nil},
		{"negative ins_target", with(ECNSharpConfig{InsTarget: -1}, Dequeue, 1), []string{"ins_target -1 ns", "(0, 10000000000] ns"}, nil},
		{"negative pst_target", with(ECNSharpConfig{PstTarget: -2}, Dequeue, 1), []string{"pst_target -2 ns"}, nil},
		{"huge pst_interval", with(ECNSharpConfig{PstInterval: 10e9 + 1}, Dequeue, 1), []string{"pst_interval 10000000001 ns"}, nil},
		{"bytes without queue_length", with(ECNSharpConfig{InsTargetBytes: 1000}, Dequeue, 1), []string{"ins_target_bytes 1000", "queue_length"}, nil},
		{"negative pst_target_bytes", with(ECNSharpConfig{QueueLength: true, PstTargetBytes: -1}, Dequeue, 1), []string{"pst_target_bytes -1 bytes", "(0, 1099511627776] bytes"}, nil},
		{"huge ins_target_bytes", with(ECNSharpConfig{QueueLength: true, InsTargetBytes: 1<<40 + 1}, Dequeue, 1), []string{"ins_target_bytes 1099511627777 bytes"}, nil},
	})
}

func TestECNSharpMarkAllocs(t *testing.T) {
	for _, ql := range []bool{false, true} {
		m := newTestECNSharp(t, ECNSharpConfig{InsTarget: 50 * dqUS, PstTarget: 10 * dqUS, PstInterval: 60 * dqUS, QueueLength: ql}, 8)
		var v View
		var i int64
		allocs := testing.AllocsPerRun(5000, func() {
			i++
			v = View{Now: i * 1000, EnqTime: i*1000 - (i%70)*1000, Queue: int(i % 8), QueueBytes: (i % 70) * 1250, LineRate: 10e9 + i%2}
			m.Mark(&v)
		})
		if allocs != 0 {
			t.Errorf("queue_length %v: Mark allocates %v times per packet", ql, allocs)
		}
	}
}

func BenchmarkECNSharpMark(b *testing.B) {
	for _, bc := range []struct {
		name string
		ql   bool
	}{{"sojourn", false}, {"queue_length", true}} {
		b.Run(bc.name, func(b *testing.B) {
			m := newTestECNSharp(b, ECNSharpConfig{QueueLength: bc.ql}, 8)
			b.ReportAllocs()
			var v View
			marks := 0
			for i := range b.N {
				n := int64(i)
				// Standing 100 µs queues; each dips to 0 once every 4096 packets.
				s := int64(100_000)
				if i%4096 < 8 { // one packet of every queue
					s = 0
				}
				v = View{Now: n * 100, EnqTime: n*100 - s, Queue: i & 7, QueueBytes: s * 10 / 8, LineRate: 10e9}
				if m.Mark(&v) == Mark {
					marks++
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
			b.ReportMetric(float64(marks)/float64(b.N), "marks/op")
		})
	}
}
