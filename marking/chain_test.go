package marking

import (
	"slices"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// eqStub is a marker with a scripted verdict that counts the packets it
// saw and reports what it "compared" when it marks or drops.
type eqStub struct {
	verdict          Verdict
	value, threshold int64
	seen             int
	stage            Stage
}

func (s *eqStub) Mark(v *View) Verdict {
	s.seen++
	if s.verdict != Pass {
		v.Value, v.Threshold = s.value, s.threshold
	}
	return s.verdict
}

func (s *eqStub) Stage() Stage { return s.stage }

// eqChain builds a chain of stubs named a, b, c, … with the given verdicts.
func eqChain(tb testing.TB, nonECT NonECT, verdicts ...Verdict) (*Chain, []*eqStub) {
	tb.Helper()
	var members []Member
	var stubs []*eqStub
	for i, vd := range verdicts {
		s := &eqStub{verdict: vd, value: int64(100 + i), threshold: int64(10 + i)}
		stubs = append(stubs, s)
		members = append(members, Member{Name: string(rune('a' + i)), Marker: s})
	}
	c, err := NewChain(Enqueue, nonECT, members...)
	if err != nil {
		tb.Fatal(err)
	}
	return c, stubs
}

func TestChainVerdicts(t *testing.T) {
	// Any member's Mark marks; any member's Drop drops and wins over marks
	// (002 §IV-B: "a packet gets marked if anyone decides to mark it").
	// Every member sees every packet, whatever the others said.
	for _, tc := range []struct {
		verdicts []Verdict
		want     Verdict
		decider  int // member whose Value/Threshold the view carries
	}{
		{nil, Pass, -1},
		{[]Verdict{Pass}, Pass, -1}, // one member: run's shortcut
		{[]Verdict{Mark}, Mark, 0},
		{[]Verdict{Drop}, Drop, 0},
		{[]Verdict{Pass, Pass}, Pass, -1},
		{[]Verdict{Pass, Mark, Pass}, Mark, 1},
		{[]Verdict{Mark, Mark}, Mark, 0},
		{[]Verdict{Mark, Drop, Mark}, Drop, 1},
		{[]Verdict{Drop, Mark, Drop}, Drop, 0},
		{[]Verdict{Pass, Pass, Drop}, Drop, 2},
	} {
		c, stubs := eqChain(t, NonECTDrop, tc.verdicts...)
		v := View{Value: -1, Threshold: -1}
		got := c.Decide(&v, packet.ECT0)
		if got != tc.want || c.Decider() != tc.decider {
			t.Errorf("%v: %v decided by %d, want %v by %d", tc.verdicts, got, c.Decider(), tc.want, tc.decider)
		}
		if tc.decider >= 0 && (v.Value != int64(100+tc.decider) || v.Threshold != int64(10+tc.decider)) {
			t.Errorf("%v: view carries value %d threshold %d, want member %d's", tc.verdicts, v.Value, v.Threshold, tc.decider)
		}
		if tc.decider < 0 && (v.Value != -1 || v.Threshold != -1) {
			t.Errorf("%v: pass changed the view's value/threshold to %d/%d", tc.verdicts, v.Value, v.Threshold)
		}
		for i, s := range stubs {
			if s.seen != 1 {
				t.Errorf("%v: member %d saw %d packets, want 1", tc.verdicts, i, s.seen)
			}
		}
	}
}

// A chain of one member (run's shortcut) counts as a longer one does.
func TestChainCountersOneMember(t *testing.T) {
	c, stubs := eqChain(t, NonECTDrop, Mark)
	v := View{}
	for range 4 {
		c.Decide(&v, packet.ECT0)
	}
	stubs[0].verdict = Drop
	c.Decide(&v, packet.ECT0)
	stubs[0].verdict = Pass
	c.Decide(&v, packet.ECT0)
	if got := c.Counts(nil); len(got) != 1 || got[0] != (MemberCounts{"a", 4, 1}) {
		t.Errorf("counts %+v, want a: 4 marks, 1 drop", got)
	}
	if tot := c.Totals(); tot.Marked != 4 || tot.Dropped != 1 || c.Decider() != -1 {
		t.Errorf("totals %+v, decider %d; want 4 marked, 1 dropped, -1", tot, c.Decider())
	}
}

func TestChainCounters(t *testing.T) {
	c, stubs := eqChain(t, NonECTDrop, Pass, Mark, Pass)
	v := View{}
	for range 5 {
		c.Decide(&v, packet.ECT1)
	}
	stubs[0].verdict = Drop
	for range 3 {
		c.Decide(&v, packet.ECT1)
	}
	stubs[2].verdict = Mark
	c.Decide(&v, packet.CE)
	got := c.Counts(nil)
	want := []MemberCounts{{"a", 0, 4}, {"b", 9, 0}, {"c", 1, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
	if tot, want := c.Totals(), (ChainCounts{Marked: 5, Dropped: 4}); tot != want {
		t.Errorf("Totals = %+v, want %+v", tot, want)
	}
	// Counts appends without allocating when dst has room.
	buf := make([]MemberCounts, 0, 3)
	if n := testing.AllocsPerRun(100, func() { buf = c.Counts(buf[:0]) }); n != 0 {
		t.Errorf("Counts allocates %v times", n)
	}
}

func TestChainNonECT(t *testing.T) {
	// A mark on a Not-ECT packet becomes a drop (RED, RFC 3168 §7) or a
	// pass; ECT(0), ECT(1) and CE packets are marked; drops stay drops.
	for _, tc := range []struct {
		action  NonECT
		verdict Verdict
		ecn     packet.ECN
		want    Verdict
		totals  ChainCounts
	}{
		{NonECTDrop, Mark, packet.NotECT, Drop, ChainCounts{Dropped: 1, NonECTDropped: 1}},
		{NonECTPass, Mark, packet.NotECT, Pass, ChainCounts{NonECTPassed: 1}},
		{NonECTDrop, Mark, packet.ECT0, Mark, ChainCounts{Marked: 1}},
		{NonECTPass, Mark, packet.ECT1, Mark, ChainCounts{Marked: 1}},
		{NonECTPass, Mark, packet.CE, Mark, ChainCounts{Marked: 1}},
		{NonECTPass, Drop, packet.NotECT, Drop, ChainCounts{Dropped: 1}},
		{NonECTPass, Pass, packet.NotECT, Pass, ChainCounts{}},
	} {
		c, _ := eqChain(t, tc.action, Pass, tc.verdict)
		v := View{}
		if got := c.Decide(&v, tc.ecn); got != tc.want {
			t.Errorf("non_ect %v, member %v, %v packet: %v, want %v", tc.action, tc.verdict, tc.ecn, got, tc.want)
		}
		if got := c.Totals(); got != tc.totals {
			t.Errorf("non_ect %v, member %v, %v packet: totals %+v, want %+v", tc.action, tc.verdict, tc.ecn, got, tc.totals)
		}
	}
}

func TestChainOfRealMarkers(t *testing.T) {
	// A per-queue cut-off and a per-port cut-off: the queue alone, the
	// port alone, or both can mark; the view says which threshold was hit.
	q := eqNew(t)(NewRED(CutOff(MeasureQueue, Bytes(10000)), Enqueue, 2))
	p := eqNew(t)(NewRED(CutOff(MeasurePort, Bytes(30000)), Enqueue, 2))
	c, err := NewChain(Enqueue, NonECTDrop, Member{"queue", q}, Member{"port", p})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue, port int64
		want        Verdict
		threshold   int64
	}{
		{5000, 20000, Pass, 0},
		{10000, 20000, Mark, 10000},
		{5000, 30000, Mark, 30000},
		{12000, 40000, Mark, 10000}, // both: the first member's comparison
	} {
		v := View{QueueBytes: tc.queue, PortBytes: tc.port}
		if got := c.Decide(&v, packet.ECT0); got != tc.want || (got == Mark && v.Threshold != tc.threshold) {
			t.Errorf("queue %d port %d: %v at %d, want %v at %d", tc.queue, tc.port, got, v.Threshold, tc.want, tc.threshold)
		}
	}
	// A chain is a Marker and can be a member of another chain.
	outer, err := NewChain(Enqueue, NonECTPass, Member{"inner", c})
	if err != nil {
		t.Fatal(err)
	}
	v := View{QueueBytes: 20000}
	if got := outer.Decide(&v, packet.NotECT); got != Pass {
		t.Errorf("nested: Not-ECT packet with pass policy: %v, want pass", got)
	}
}

func TestChainErrors(t *testing.T) {
	s := &eqStub{}
	for _, tc := range []struct {
		name    string
		stage   Stage
		nonECT  NonECT
		members []Member
		want    string
	}{
		{"stage", Stage(3), NonECTDrop, nil, "stage 3 is not a stage"},
		{"non-ECT action", Enqueue, NonECT(4), nil, "non_ect 4 out of range"},
		{"no name", Enqueue, NonECTDrop, []Member{{"", s}}, "member 0 has no name"},
		{"no marker", Enqueue, NonECTDrop, []Member{{"x", nil}}, `member "x" has no marker`},
		{"duplicate", Enqueue, NonECTDrop, []Member{{"x", s}, {"x", &eqStub{}}}, `member name "x" used twice`},
		{"placement", Dequeue, NonECTDrop, []Member{{"x", s}}, `member "x" is placed at enqueue, the chain at dequeue`},
	} {
		_, err := NewChain(tc.stage, tc.nonECT, tc.members...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// A marker without a Stage method is accepted at either stage.
	if _, err := NewChain(Dequeue, NonECTDrop, Member{"plain", eqFunc(func(*View) Verdict { return Pass })}); err != nil {
		t.Errorf("marker without Stage(): %v", err)
	}
}

// eqFunc adapts a function to Marker.
type eqFunc func(v *View) Verdict

// Mark calls f(v).
func (f eqFunc) Mark(v *View) Verdict { return f(v) }

func TestChainDecideAllocs(t *testing.T) {
	red := eqNew(t)(NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(1000), KMax: Bytes(5000)}, Enqueue, 1))
	cut := eqNew(t)(NewRED(CutOff(MeasureQueue, Bytes(2000)), Enqueue, 1))
	c, err := NewChain(Enqueue, NonECTDrop, Member{"red", red}, Member{"cut", cut})
	if err != nil {
		t.Fatal(err)
	}
	v := View{}
	i := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		v.QueueBytes, v.PortBytes = i%4000, i%6000
		c.Decide(&v, packet.ECN(i&3))
	}); n != 0 {
		t.Errorf("Decide allocates %v times per packet, want 0", n)
	}
}

func BenchmarkChain(b *testing.B) {
	red := eqNew(b)(NewRED(REDConfig{Measure: MeasurePort, KMin: Bytes(100000), KMax: Bytes(200000)}, Enqueue, 8))
	mq := eqNew(b)(NewMQECN(MQECNConfig{RTT: 100 * eqUS}, Enqueue, 8))
	c, err := NewChain(Enqueue, NonECTDrop, Member{"red", red}, Member{"mqecn", mq})
	if err != nil {
		b.Fatal(err)
	}
	v := View{LineRate: 10e9, Quantum: 1500, RoundTime: 4 * 1200}
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		i++
		x := 50000 + (i*7919)%200000
		v.QueueBytes, v.PortBytes = x/4, x
		c.Decide(&v, packet.ECT0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
}

func TestChainCountersReadWhileDeciding(t *testing.T) {
	// Telemetry may read the counters from another goroutine while the
	// port's worker decides (run with -race).
	c, _ := eqChain(t, NonECTDrop, Mark, Pass)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]MemberCounts, 0, 2)
		for range 1000 {
			buf = c.Counts(buf[:0])
			_ = c.Totals()
		}
	}()
	v := View{}
	for range 1000 {
		c.Decide(&v, packet.ECT0)
	}
	<-done
	if got := c.Totals().Marked; got != 1000 {
		t.Errorf("marked %d, want 1000", got)
	}
}

// peerMarker reads queue peer[q] beside q.
type peerMarker []int

func (p peerMarker) Mark(*View) Verdict { return Pass }
func (p peerMarker) Needs() Need        { return NeedPeer }
func (p peerMarker) Peer(q int) int     { return p[q] }

// A chain's peers are its Peerer members' answers, queue by queue; members
// that disagree, or name a queue the port lacks or the packet's own, are
// refused.
func TestChainPeers(t *testing.T) {
	chain := func(ms ...Marker) *Chain {
		t.Helper()
		var members []Member
		for i, m := range ms {
			members = append(members, Member{Name: string(rune('a' + i)), Marker: m})
		}
		c, err := NewChain(Dequeue, NonECTDrop, members...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	red, err := NewRED(CutOff(MeasureQueue, Bytes(1000)), Dequeue, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := chain(red).Peers(2); p != nil || err != nil {
		t.Errorf("a chain without a Peerer: peers %v, %v; want none", p, err)
	}
	if p, err := chain(red, peerMarker{1, -1}, peerMarker{-1, -1}).Peers(2); err != nil || !slices.Equal(p, []int{1, -1}) {
		t.Errorf("peers %v, %v; want [1 -1]", p, err)
	}
	for _, c := range []struct {
		name string
		ms   []Marker
	}{
		{"disagree", []Marker{peerMarker{1, -1, -1}, peerMarker{2, -1, -1}}},
		{"outside the port", []Marker{peerMarker{3, -1, -1}}},
		{"its own queue", []Marker{peerMarker{-1, 1, -1}}},
	} {
		if p, err := chain(c.ms...).Peers(3); err == nil {
			t.Errorf("%s: peers %v, want an error", c.name, p)
		}
	}
}
