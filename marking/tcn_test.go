package marking

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const dqUS = int64(1000) // ns per µs

// dqPacket is one dequeue in a hand-made trace: the packet's queue, its
// enqueue and dequeue times, and the backlog it leaves behind.
type dqPacket struct {
	name       string
	queue      int
	enq, deq   int64 // ns
	queueBytes int64
}

// dqView returns the View a dataplane would pass at dequeue.
func dqView(p dqPacket) View {
	return View{Now: p.deq, EnqTime: p.enq, Len: 1250, Queue: p.queue, QueueBytes: p.queueBytes, LineRate: 10e9}
}

func TestTCNMarksExactlySojournAboveT(t *testing.T) {
	// A 10 Gbit/s port sends one 1250-byte packet per µs; a packet is
	// dequeued when its transmission starts. The traces below were
	// worked out by hand from the schedulers' rules. TCN does not know
	// the scheduler: it must mark exactly the packets with sojourn > T
	// (000 §3.5 "TCN combines the sojourn time and instantaneous ECN
	// marking"), whatever order the scheduler chose.
	tests := []struct {
		name   string
		t      int64
		trace  []dqPacket
		marked []string
	}{{
		// Strict priority, queue 0 above queue 1. Arrivals: a1..a5 to
		// queue 1 at 0; h1, h2 to queue 0 at 1 µs; h3 to queue 0 at
		// 4 µs. Queue 0 goes first whenever it is backlogged.
		name: "sp",
		t:    3 * dqUS,
		trace: []dqPacket{
			{"a1", 1, 0, 0 * dqUS, 4 * 1250},       // sojourn 0
			{"h1", 0, dqUS, 1 * dqUS, 1250},        // 0
			{"h2", 0, dqUS, 2 * dqUS, 0},           // 1 µs
			{"a2", 1, 0, 3 * dqUS, 3 * 1250},       // 3 µs = T: not above
			{"h3", 0, 4 * dqUS, 4 * dqUS, 0},       // 0; a6 arrives at 4.5 µs
			{"a3", 1, 0, 5 * dqUS, 3 * 1250},       // 5 µs
			{"a4", 1, 0, 6 * dqUS, 2 * 1250},       // 6 µs; a7 arrives at 6.999 µs
			{"a5", 1, 0, 7 * dqUS, 2 * 1250},       // 7 µs; h4 arrives at 7.5, a8 at 8 µs
			{"h4", 0, 7500, 8 * dqUS, 0},           // 0.5 µs
			{"a6", 1, 4500, 9 * dqUS, 2 * 1250},    // 4.5 µs
			{"a7", 1, 7*dqUS - 1, 10 * dqUS, 1250}, // 3.001 µs: above by 1 ns
			{"a8", 1, 8 * dqUS, 11 * dqUS, 0},      // 3 µs = T: not above
		},
		marked: []string{"a3", "a4", "a5", "a6", "a7"},
	}, {
		// WFQ with weights 3:1, all packets of one size arriving at 0:
		// virtual finish times x_i = i/3 and y_i = i, ties to the lower
		// queue, so the order is x1 x2 x3 y1 x4 y2 y3 y4.
		name: "wfq",
		t:    4500,
		trace: []dqPacket{
			{"x1", 0, 0, 0 * dqUS, 3 * 1250},
			{"x2", 0, 0, 1 * dqUS, 2 * 1250},
			{"x3", 0, 0, 2 * dqUS, 1 * 1250},
			{"y1", 1, 0, 3 * dqUS, 3 * 1250},
			{"x4", 0, 0, 4 * dqUS, 0},
			{"y2", 1, 0, 5 * dqUS, 2 * 1250},
			{"y3", 1, 0, 6 * dqUS, 1 * 1250},
			{"y4", 1, 0, 7 * dqUS, 0},
		},
		marked: []string{"y2", "y3", "y4"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewTCN(TCNConfig{Threshold: tt.t}, Dequeue, 2)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range tt.trace {
				v := dqView(p)
				switch verdict := m.Mark(&v); verdict {
				case Mark:
					got = append(got, p.name)
					if v.Value != p.deq-p.enq || v.Threshold != tt.t {
						t.Errorf("%s: Value, Threshold = %d, %d; want sojourn %d, T %d", p.name, v.Value, v.Threshold, p.deq-p.enq, tt.t)
					}
				case Pass:
				default:
					t.Errorf("%s: verdict %v, want mark or pass", p.name, verdict)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.marked, " ") {
				t.Errorf("marked %v, want %v", got, tt.marked)
			}
		})
	}
}

func TestTCNThresholdFromLambdaRTT(t *testing.T) {
	// T = λ·RTT (000 §3.2 Eq. 2): DCTCP's λ = 0.17 at RTT 100 µs gives
	// 17 µs.
	m, err := NewTCN(TCNConfig{Lambda: 0.17, RTT: 100 * dqUS}, Dequeue, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sojourn int64
		want    Verdict
	}{{17000, Pass}, {17001, Mark}, {16999, Pass}, {0, Pass}, {1e6, Mark}} {
		v := View{Now: 5e6, EnqTime: 5e6 - tc.sojourn}
		if got := m.Mark(&v); got != tc.want {
			t.Errorf("sojourn %d ns: %v, want %v", tc.sojourn, got, tc.want)
		}
	}
	def, err := NewTCN(TCNConfig{}, Dequeue, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := def.(*tcn).threshold; got != 250*1024 {
		t.Errorf("default T = %d ns, want 250×1024", got)
	}
}

// dqConfigCase is one constructor call that must fail, and the words its
// error must contain.
type dqConfigCase struct {
	name string
	make func() (Marker, error)
	want []string
	is   error
}

func dqCheckConfigErrors(t *testing.T, cases []dqConfigCase) {
	t.Helper()
	for _, c := range cases {
		m, err := c.make()
		if err == nil {
			t.Errorf("%s: no error (marker %T)", c.name, m)
			continue
		}
		if m != nil {
			t.Errorf("%s: marker %T returned with error", c.name, m)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %q is not %v", c.name, err, c.is)
		}
	}
}

func TestTCNConfigErrors(t *testing.T) {
	tcnWith := func(c TCNConfig, s Stage, q int) func() (Marker, error) {
		return func() (Marker, error) { return NewTCN(c, s, q) }
	}
	ok := TCNConfig{Threshold: 10 * dqUS}
	dqCheckConfigErrors(t, []dqConfigCase{
		{"enqueue", tcnWith(ok, Enqueue, 1), []string{"tcn", "stage enqueue"}, ErrDequeueOnly},
		{"bad stage", tcnWith(ok, Stage(7), 1), []string{"tcn", "stage 7"}, ErrDequeueOnly},
		{"no queues", tcnWith(ok, Dequeue, 0), []string{"queues 0", "[1, 1024]"}, nil},
		{"too many queues", tcnWith(ok, Dequeue, 1025), []string{"queues 1025", "[1, 1024]"}, nil},
		{"negative threshold", tcnWith(TCNConfig{Threshold: -1}, Dequeue, 1), []string{"threshold -1 ns", "(0, 10000000000] ns"}, nil},
		{"huge threshold", tcnWith(TCNConfig{Threshold: 10e9 + 1}, Dequeue, 1), []string{"threshold 10000000001 ns"}, nil},
		{"both forms", tcnWith(TCNConfig{Threshold: 1, Lambda: 1, RTT: 1}, Dequeue, 1), []string{"threshold", "lambda", "rtt"}, nil},
		{"lambda zero", tcnWith(TCNConfig{RTT: 100}, Dequeue, 1), []string{"lambda 0", "(0, 16]"}, nil},
		{"lambda NaN", tcnWith(TCNConfig{Lambda: math.NaN(), RTT: 100}, Dequeue, 1), []string{"lambda NaN"}, nil},
		{"lambda big", tcnWith(TCNConfig{Lambda: 17, RTT: 100}, Dequeue, 1), []string{"lambda 17"}, nil},
		{"rtt zero", tcnWith(TCNConfig{Lambda: 0.5}, Dequeue, 1), []string{"rtt 0 ns", "(0, 10000000000] ns"}, nil},
		{"rtt negative", tcnWith(TCNConfig{Lambda: 0.5, RTT: -5}, Dequeue, 1), []string{"rtt -5 ns"}, nil},
		{"product zero", tcnWith(TCNConfig{Lambda: 0.1, RTT: 2}, Dequeue, 1), []string{"lambda·rtt = 0 ns"}, nil},
		{"product huge", tcnWith(TCNConfig{Lambda: 2, RTT: 10e9}, Dequeue, 1), []string{"lambda·rtt = 20000000000 ns"}, nil},
	})
}

func TestTCNMarkAllocs(t *testing.T) {
	m, err := NewTCN(TCNConfig{}, Dequeue, 8)
	if err != nil {
		t.Fatal(err)
	}
	var v View
	var i int64
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		v = View{Now: i * 1000, EnqTime: i*1000 - (i%600)*1000, Queue: int(i % 8)}
		m.Mark(&v)
	})
	if allocs != 0 {
		t.Errorf("Mark allocates %v times per packet", allocs)
	}
}

func BenchmarkTCNMark(b *testing.B) {
	m, err := NewTCN(TCNConfig{}, Dequeue, 8)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var v View
	marks := 0
	for i := range b.N {
		n := int64(i)
		v = View{Now: n * 100, EnqTime: n*100 - (n%512)*1000, Queue: i & 7}
		if m.Mark(&v) == Mark {
			marks++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(marks)/float64(b.N), "marks/op")
}

func TestDequeueSchemesReportStage(t *testing.T) {
	// A chain checks its members' placement through Stage().
	type staged interface{ Stage() Stage }
	for _, tc := range []struct {
		name string
		make func() (Marker, error)
		want Stage
	}{
		{"tcn", func() (Marker, error) { return NewTCN(TCNConfig{}, Dequeue, 1) }, Dequeue},
		{"codel", func() (Marker, error) { return NewCoDel(CoDelConfig{}, Dequeue, 1) }, Dequeue},
		{"ecnsharp", func() (Marker, error) { return NewECNSharp(ECNSharpConfig{}, Dequeue, 1) }, Dequeue},
		{"ecnsharp queue_length enqueue", func() (Marker, error) { return NewECNSharp(ECNSharpConfig{QueueLength: true}, Enqueue, 1) }, Enqueue},
		{"ecnsharp queue_length dequeue", func() (Marker, error) { return NewECNSharp(ECNSharpConfig{QueueLength: true}, Dequeue, 1) }, Dequeue},
	} {
		m, err := tc.make()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s, ok := m.(staged)
		if !ok {
			t.Fatalf("%s: %T has no Stage method", tc.name, m)
		}
		if got := s.Stage(); got != tc.want {
			t.Errorf("%s: Stage() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
