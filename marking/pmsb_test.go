package marking

import (
	"strings"
	"testing"
)

func TestPMSBAlgorithm1(t *testing.T) {
	// 003 Algorithm 1 with port_threshold = 12 packets (003 §VI-A) and two
	// queues of equal weight: queue_threshold_i = 6 packets.
	const pkt = 1500
	pt := int64(12 * pkt)
	for _, stage := range []Stage{Enqueue, Dequeue} {
		m := eqNew(t)(NewPMSB(PMSBConfig{PortThreshold: Packets(12)}, stage, 2))
		for _, tc := range []struct {
			name        string
			port, queue int64
			want        Verdict
		}{
			{"port below its threshold, queue full", pt - 1, pt - 1, Pass},
			{"port at its threshold, queue at its filter", pt, pt / 2, Mark},
			{"port above, queue above its filter", 2 * pt, pt, Mark},
			{"port above, victim queue below its filter", 2 * pt, pt/2 - 1, Pass},
			{"port above, empty victim queue", 2 * pt, 0, Pass},
		} {
			v := View{PortBytes: tc.port, QueueBytes: tc.queue, Weight: 1, WeightSum: 2}
			got := m.Mark(&v)
			if got != tc.want {
				t.Errorf("%v: %s (port %d, queue %d): %v, want %v", stage, tc.name, tc.port, tc.queue, got, tc.want)
			}
			if got == Mark && (v.Value != tc.queue || v.Threshold != pt/2) {
				t.Errorf("%v: %s: value %d threshold %d, want %d and %d", stage, tc.name, v.Value, v.Threshold, tc.queue, pt/2)
			}
		}
	}
}

func TestPMSBVictimNotMarked(t *testing.T) {
	// 003 §II-B Fig. 3's setting: queue 1 has 1 flow, queue 2 has 8 and
	// holds most of the port's backlog. Per-port marking would mark both;
	// PMSB marks only the congested queue 2 while queue 1 stays below
	// its filter threshold.
	m := eqNew(t)(NewPMSB(PMSBConfig{PortThreshold: Packets(16)}, Enqueue, 2))
	port := eqNew(t)(NewRED(CutOff(MeasurePort, Packets(16)), Enqueue, 2))
	const pkt = 1500
	q1, q2 := int64(3*pkt), int64(17*pkt)
	victim := View{Queue: 0, QueueBytes: q1, PortBytes: q1 + q2, Weight: 1, WeightSum: 2}
	congested := View{Queue: 1, QueueBytes: q2, PortBytes: q1 + q2, Weight: 1, WeightSum: 2}
	if a, b := victim, victim; port.Mark(&a) != Mark || m.Mark(&b) != Pass {
		t.Error("queue 1 (the victim): per-port marking should mark it and PMSB should not")
	}
	if c := congested; m.Mark(&c) != Mark {
		t.Error("queue 2 (congested): PMSB should mark it")
	}
}

func TestPMSBSchedulerWeights(t *testing.T) {
	// PMSB needs only the weight ratio, so WFQ weights 1:3 and DWRR quanta
	// 1500:4500 give the same filter thresholds, 1/4 and 3/4 of the port
	// threshold (003 Eq. 6). weight_sum is "the sum of all queues' weights
	// in port p" (003 Table II), not of the queue's scheduling level, so
	// each of 003 §VI-A's three equal SP queues is filtered at a third of
	// the port threshold. (The "sp" case used to be {1, 1, pt}: the level's
	// sum, which filtered every SP queue at the port threshold — issue 11.)
	const pt = 100000
	m := eqNew(t)(NewPMSB(PMSBConfig{PortThreshold: Bytes(pt)}, Dequeue, 3))
	for _, tc := range []struct {
		sched       string
		weight, sum int64
		want        int64
	}{
		{"wfq", 1, 4, pt / 4},
		{"wfq", 3, 4, 3 * pt / 4},
		{"dwrr", 1500, 6000, pt / 4},
		{"dwrr", 4500, 6000, 3 * pt / 4},
		{"sp", 1, 3, pt / 3},
		{"sp-over-dwrr: strict weight 2 as 2 MTUs", 2 * 1500, 1500 + 4500 + 2*1500, pt / 3},
		{"no weights", 0, 0, pt},
	} {
		v := View{PortBytes: 2 * pt, QueueBytes: tc.want - 1, Weight: tc.weight, WeightSum: tc.sum}
		if m.Mark(&v) != Pass {
			t.Errorf("%s %d/%d: marked below the filter threshold %d", tc.sched, tc.weight, tc.sum, tc.want)
		}
		v.QueueBytes = tc.want
		if m.Mark(&v) != Mark || v.Threshold != tc.want {
			t.Errorf("%s %d/%d: filter threshold %d, want %d", tc.sched, tc.weight, tc.sum, v.Threshold, tc.want)
		}
	}
}

func TestPMSBDefaultThreshold(t *testing.T) {
	// Unset, port_threshold = C·RTT·λ (003 Eq. 5), C from the View.
	m := eqNew(t)(NewPMSB(PMSBConfig{RTT: 80 * eqUS, Lambda: 0.72}, Enqueue, 1))
	for _, c := range []int64{10e9, 100e9} {
		pt := Standard(80*eqUS, 0.72).Bytes(c, 0)
		below := View{PortBytes: pt - 1, QueueBytes: pt, LineRate: c}
		at := View{PortBytes: pt, QueueBytes: pt, LineRate: c}
		if m.Mark(&below) != Pass || m.Mark(&at) != Mark || at.Threshold != pt {
			t.Errorf("C = %d: threshold %d, want port_threshold %d", c, at.Threshold, pt)
		}
	}
}

func TestIgnoreMark(t *testing.T) {
	// 003 Algorithm 2: a sender honours a mark only when its RTT reaches
	// the threshold.
	const thr = 40 * eqUS // 003 §VI-A
	for _, tc := range []struct {
		marked bool
		rtt    int64
		want   bool
	}{
		{false, 10 * eqUS, true},
		{false, 100 * eqUS, true},
		{true, thr - 1, true},
		{true, thr, false},
		{true, 100 * eqUS, false},
	} {
		if got := IgnoreMark(tc.marked, tc.rtt, thr); got != tc.want {
			t.Errorf("IgnoreMark(%v, %d, %d) = %v, want %v", tc.marked, tc.rtt, thr, got, tc.want)
		}
	}
}

func TestPMSBConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    PMSBConfig
		stage  Stage
		queues int
		want   string
	}{
		{"no threshold", PMSBConfig{}, Enqueue, 1, "rtt 0 ns out of range"},
		{"both", PMSBConfig{PortThreshold: Bytes(1), RTT: 1000}, Enqueue, 1, "give one or the other"},
		{"negative", PMSBConfig{PortThreshold: Bytes(-1)}, Enqueue, 1, "port_threshold -1 bytes out of range"},
		{"stage", PMSBConfig{PortThreshold: Bytes(1)}, 2, 1, "stage 2 is not a stage"},
		{"queues", PMSBConfig{PortThreshold: Bytes(1)}, Enqueue, 2000, "queues 2000 out of range [1, 1024]"},
	} {
		_, err := NewPMSB(tc.cfg, tc.stage, tc.queues)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "marking: pmsb: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestPMSBMarkAllocs(t *testing.T) {
	m := eqNew(t)(NewPMSB(PMSBConfig{RTT: 100 * eqUS}, Dequeue, 8))
	v := View{LineRate: 10e9, Weight: 1, WeightSum: 8}
	i := int64(0)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		v.PortBytes, v.QueueBytes = i*997%250000, i*97%40000
		m.Mark(&v)
	}); n != 0 {
		t.Errorf("Mark allocates %v times per packet, want 0", n)
	}
}
