package closedloop

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ccs are the congestion controls every closed-loop test runs with.
var ccs = []CC{ECNStar, DCTCP}

// run runs sc shortened for tests: 30 ms of warm-up, 200 ms measured
// (results at these lengths match the doc's 50 + 500 ms runs within 0.01
// of share; see the table).
func run(tb testing.TB, sc Scenario) Result {
	tb.Helper()
	sc.Warmup, sc.Duration = 30*time.Millisecond, 200*time.Millisecond
	r, err := Run(sc)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// The 1:4 static-flow bounds. A scheme that keeps the share holds each
// queue within keepShare of half the link; per-port marking violates it by
// at least violateShare, three times as far, so the two bands are
// 2·keepShare apart and a result cannot pass as both. The paper's per-port
// run is 0.07 of C off half its total (001 Fig. 3a: 403 vs 539 Mbit/s);
// the model's per-queue schemes stay within 0.005.
const (
	keepShare    = 0.02
	violateShare = 3 * keepShare
)

// Issue 4, first bullet: per-port marking violates the 1:1 share of two
// equal-quantum DWRR queues when queue 2 carries 4 flows and queue 1 one
// (001 §2.2.3, Fig. 3: 403 vs 539 Mbit/s): the single flow is marked for
// the other queue's backlog, backs off, and its queue runs empty.
func TestPerPortViolatesShare(t *testing.T) {
	for _, cc := range ccs {
		r := run(t, Scenario{Scheme: PerPort, CC: cc, Flows: []int{1, 4}})
		t.Logf("%v: shares %.3f : %.3f, total %.3f", cc, r.Share[0], r.Share[1], r.Throughput)
		// "Clearly more": beyond the band the multi-queue schemes keep,
		// by twice its width (issue 11).
		if r.Share[1] < 0.5+violateShare || r.Share[0] > 0.5-violateShare {
			t.Errorf("%v: per-port shares %.3f : %.3f, want queue 2 at least %.2f of C and queue 1 at most %.2f", cc, r.Share[0], r.Share[1], 0.5+violateShare, 0.5-violateShare)
		}
		if r.Throughput < 0.95 {
			t.Errorf("%v: per-port throughput %.3f of C, want ≥ 0.95 (per-port ECN keeps the link busy, 001 §2.2.3)", cc, r.Throughput)
		}
	}
}

// Issue 4, second bullet: MQ-ECN (001 §3), PMSB (003 Algorithm 1), TCN and
// ECN♯ (000 Algorithm 1) keep each of the two queues within keepShare (4%)
// of half the link with at least 95% of C in total (001 §5.1.1, Fig. 6a:
// both services at about half, 936 Mbit/s in total). The band used to be
// ±0.05, which touched the per-port test's bound; issue 11 asks for a
// margin between them.
func TestMultiQueueSchemesKeepShare(t *testing.T) {
	for _, cc := range ccs {
		for _, s := range []Scheme{MQECN, PMSB, TCN, ECNSharp} {
			r := run(t, Scenario{Scheme: s, CC: cc, Flows: []int{1, 4}})
			t.Logf("%v %v: shares %.3f : %.3f, total %.3f, port %.1f kB", cc, s, r.Share[0], r.Share[1], r.Throughput, r.PortMean/1e3)
			for q, sh := range r.Share {
				if math.Abs(sh-0.5) > keepShare {
					t.Errorf("%v %v: queue %d share %.3f of C, want within %.2f of 0.5", cc, s, q+1, sh, keepShare)
				}
			}
			if r.Throughput < 0.95 {
				t.Errorf("%v %v: throughput %.3f of C, want ≥ 0.95", cc, s, r.Throughput)
			}
			if r.Drops != 0 || r.Losses != 0 || r.Refused != 0 {
				t.Errorf("%v %v: %d drops, %d loss events, %d refused; marking, not the buffer, should control the queue", cc, s, r.Drops, r.Losses, r.Refused)
			}
		}
	}
}

// Issue 4, third bullet: with 4 active queues, per-queue standard
// thresholds let the port hold about 4× the single-queue backlog (001
// §2.2.1, Fig. 1: 8 queues cost 5.7× the average RTT of 1), while MQ-ECN
// scales each queue's threshold by quantum/T_round and keeps the port near
// the single-queue level (001 §3.3).
func TestActiveQueuesStandardVsMQECN(t *testing.T) {
	for _, cc := range ccs {
		ratio := map[Scheme]float64{}
		for _, s := range []Scheme{PerQueue, MQECN} {
			one := run(t, ActiveQueues(cc, s, 1))
			four := run(t, ActiveQueues(cc, s, 4))
			ratio[s] = four.PortMean / one.PortMean
			t.Logf("%v %v: port %.1f kB with 1 active queue, %.1f kB with 4 (%.2f×)", cc, s, one.PortMean/1e3, four.PortMean/1e3, ratio[s])
			for _, r := range []Result{one, four} {
				if r.Throughput < 0.95 {
					t.Errorf("%v %v %v: throughput %.3f of C, want ≥ 0.95", cc, s, r.Scenario.Flows, r.Throughput)
				}
			}
		}
		if r := ratio[PerQueue]; r < 3 || r > 5 {
			t.Errorf("%v: per-queue standard: 4 active queues hold %.2f× the port backlog of 1, want roughly 4× ([3, 5])", cc, r)
		}
		if r := ratio[MQECN]; r < 2.0/3 || r > 1.5 {
			t.Errorf("%v: MQ-ECN: 4 active queues hold %.2f× the port backlog of 1, want near 1× ([0.67, 1.5])", cc, r)
		}
	}
}

// With RTT variation (000 §2.3, §5.2: base RTTs of 70–210 µs) current
// practice sets the threshold from the high-percentile RTT, and a standing
// queue of about that much sojourn time builds. TCN, with T = λ·RTT_p90,
// keeps it; ECN♯'s persistent rule, with pst_target = λ·(mean RTT)
// (000 §3.4), marks it away, and with its testbed's 85 µs more so, at full
// throughput (000 §5.2). With one base RTT the rule of thumb makes ECN♯
// TCN; here their rows must differ.
func TestRTTVariationECNSharpBelowTCN(t *testing.T) {
	for _, cc := range ccs {
		tcn := run(t, RTTVariation(cc, TCN, 0))
		sharp := run(t, RTTVariation(cc, ECNSharp, 0))
		testbed := run(t, RTTVariation(cc, ECNSharp, ECNSharpTestbedPstTarget))
		codel := run(t, RTTVariation(cc, CoDel, 0))
		t.Logf("%v: mean queue TCN %.1f kB, ECN♯ %.1f kB, ECN♯ (85 µs) %.1f kB", cc, tcn.QueueMean[0]/1e3, sharp.QueueMean[0]/1e3, testbed.QueueMean[0]/1e3)
		if !strings.Contains(sharp.Marking, "pst_target 140µs") || !strings.Contains(tcn.Marking, "210µs") {
			t.Fatalf("%v: thresholds %q and %q: want TCN at the p90 RTT 210 µs and pst_target at the mean, 140 µs", cc, tcn.Marking, sharp.Marking)
		}
		for _, c := range []struct {
			name  string
			r     Result
			ratio float64
		}{{"ECN♯", sharp, 0.9}, {"ECN♯ (85 µs)", testbed, 0.75}} {
			if got := c.r.QueueMean[0] / tcn.QueueMean[0]; got > c.ratio {
				t.Errorf("%v %s: mean queue %.1f kB, %.2f× TCN's %.1f kB, want at most %.2f×", cc, c.name, c.r.QueueMean[0]/1e3, got, tcn.QueueMean[0]/1e3, c.ratio)
			}
		}
		for _, r := range []Result{tcn, sharp, testbed, codel} {
			if r.Throughput < 0.95 || r.Drops != 0 {
				t.Errorf("%v %s: throughput %.3f of C, %d drops; want ≥ 0.95 and none", cc, r.Scenario.label(), r.Throughput, r.Drops)
			}
		}
	}
}

func TestFlowRTTs(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		sc         Scenario
		rtts       []time.Duration
		high, mean time.Duration
	}{
		{Scenario{RTT: 250 * us, Flows: []int{1, 4}}, []time.Duration{250 * us, 250 * us, 250 * us, 250 * us, 250 * us}, 250 * us, 250 * us},
		{Scenario{RTT: 70 * us, RTTMax: 210 * us, Flows: []int{2}}, []time.Duration{70 * us, 210 * us}, 210 * us, 140 * us},
		{Scenario{RTT: 70 * us, RTTMax: 210 * us, Flows: []int{3, 2}}, []time.Duration{70 * us, 105 * us, 140 * us, 175 * us, 210 * us}, 210 * us, 140 * us},
		{Scenario{RTT: 100 * us, RTTMax: 200 * us, Flows: []int{11}}, []time.Duration{100 * us, 110 * us, 120 * us, 130 * us, 140 * us, 150 * us, 160 * us, 170 * us, 180 * us, 190 * us, 200 * us}, 190 * us, 150 * us},
	} {
		if got := c.sc.FlowRTTs(); !reflect.DeepEqual(got, c.rtts) {
			t.Errorf("%+v: FlowRTTs %v, want %v", c.sc, got, c.rtts)
		}
		if h, m := c.sc.RTTHigh(), c.sc.RTTMean(); h != c.high || m != c.mean {
			t.Errorf("%+v: p90 %v, mean %v; want %v, %v", c.sc, h, m, c.high, c.mean)
		}
	}
	// Each flow's RTT is its base plus serialization and queueing: the
	// 210 µs flow never sees less than 210 µs.
	r := run(t, RTTVariation(DCTCP, TCN, 0))
	if r.RTTMean < 140*us || r.RTTP99 < 210*us {
		t.Errorf("RTT mean %v, p99 %v; want the two flows' 70 and 210 µs plus queueing", r.RTTMean, r.RTTP99)
	}
}

// A single flow alone fills the link under every scheme: each derives its
// threshold from K = λ·C·RTT, the single-queue threshold for full
// utilization (001 §2.2 Eq. 1).
func TestSingleFlowFillsLink(t *testing.T) {
	for _, cc := range ccs {
		for _, s := range Schemes() {
			r := run(t, Scenario{Scheme: s, CC: cc, Flows: []int{1}})
			if r.Throughput < 0.95 {
				t.Errorf("%v %v: one flow reaches %.3f of C, want ≥ 0.95", cc, s, r.Throughput)
			}
			if r.Reductions == 0 {
				t.Errorf("%v %v: the flow never reduced its window on a mark; the loop is open", cc, s)
			}
		}
	}
}

// Runs are in virtual time: the same scenario gives the same result.
func TestRunRepeats(t *testing.T) {
	sc := Scenario{Scheme: PMSB, CC: DCTCP, Flows: []int{1, 4}, Warmup: 5 * time.Millisecond, Duration: 20 * time.Millisecond}
	a, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs of one scenario differ:\n%+v\n%+v", a, b)
	}
}

// The measured RTT is the base RTT plus serialization and queueing: never
// below the base, and the queue's mean sojourn above it.
func TestRTTIsBasePlusQueueing(t *testing.T) {
	r := run(t, Scenario{Scheme: PerQueue, CC: DCTCP, Flows: []int{4}})
	base := DefaultRTT
	// Serialization on the path: two 10 Gbit/s host links and the shaped
	// port at C, 1514 bytes each.
	ser := time.Duration(2*frameLen*8*int64(time.Second)/hostRate + frameLen*8*int64(time.Second)/DefaultRate)
	queueing := time.Duration(r.PortMean * 8 * 1e9 / DefaultRate)
	if r.RTTMean < base+ser {
		t.Errorf("mean RTT %v below base %v + serialization %v", r.RTTMean, base, ser)
	}
	if got, want := r.RTTMean, base+ser+queueing; got < want*9/10 || got > want*11/10 {
		t.Errorf("mean RTT %v, want about base + serialization + mean queue/C = %v", got, want)
	}
}

func TestScenarioErrors(t *testing.T) {
	ok := Scenario{Scheme: MQECN, CC: ECNStar, Flows: []int{1, 4}}
	for _, c := range []struct {
		key string
		mod func(*Scenario)
	}{
		{"scheme", func(s *Scenario) { s.Scheme = 0 }},
		{"cc", func(s *Scenario) { s.CC = 9 }},
		{"queues", func(s *Scenario) { s.Queues = 9 }},
		{"flows", func(s *Scenario) { s.Queues = 1 }},
		{"flows[1]", func(s *Scenario) { s.Flows = []int{1, -1} }},
		{"flows", func(s *Scenario) { s.Flows = []int{0, 0} }},
		{"rate", func(s *Scenario) { s.Rate = hostRate }},
		{"rtt", func(s *Scenario) { s.RTT = time.Microsecond }},
		{"rtt_max", func(s *Scenario) { s.RTTMax = time.Microsecond }},
		{"rtt_max", func(s *Scenario) { s.RTTMax = time.Second }},
		{"lambda", func(s *Scenario) { s.Lambda = -1 }},
		{"pst_target", func(s *Scenario) { s.PstTarget = -1 }},
		{"warmup", func(s *Scenario) { s.Warmup = -1 }},
		{"duration", func(s *Scenario) { s.Duration = -1 }},
		{"duration", func(s *Scenario) { s.Duration = maxDuration }},
		{"buffer", func(s *Scenario) { s.Buffer = 100 }},
		{"buffer", func(s *Scenario) { s.Buffer = 64 << 20 }},
		{"step", func(s *Scenario) { s.Step = time.Second }},
		{"headroom", func(s *Scenario) { s.Headroom = -1 }},
		{"cc", func(s *Scenario) { s.CC = DX + 1 }},
		{"scheme", func(s *Scenario) { s.Scheme = Unmarked + 1 }},
	} {
		sc := ok
		c.mod(&sc)
		_, err := Run(sc)
		if err == nil || !strings.Contains(err.Error(), c.key+":") {
			t.Errorf("%s: got %v, want an error naming %q", c.key, err, c.key)
		}
	}
}

// BenchmarkRun measures how fast the closed loop runs: one 1:4 MQ-ECN
// scenario with 20 ms of virtual time per iteration.
func BenchmarkRun(b *testing.B) {
	b.ReportAllocs()
	sc := Scenario{Scheme: MQECN, CC: DCTCP, Flows: []int{1, 4}, Warmup: time.Millisecond, Duration: 20 * time.Millisecond}
	var pkts float64
	for b.Loop() {
		r, err := Run(sc)
		if err != nil {
			b.Fatal(err)
		}
		pkts += r.Throughput * float64(DefaultRate) / 8 * sc.Duration.Seconds() / frameLen
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/pkts, "ns/packet")
	b.ReportMetric(float64(b.N)*float64(sc.Warmup+sc.Duration)/float64(b.Elapsed()), "virtual/real")
}

// A buffer smaller than K makes the switch drop; the receiver sees the
// gaps and the senders halve on them, so the loop still runs.
func TestDropsBecomeLosses(t *testing.T) {
	for _, cc := range ccs {
		r := run(t, Scenario{Scheme: PerQueue, CC: cc, Flows: []int{4}, Buffer: 12 * frameLen})
		t.Logf("%v: %d drops, %d loss events, %d mark reductions, throughput %.3f", cc, r.Drops, r.Losses, r.Reductions, r.Throughput)
		if r.Drops == 0 || r.Losses == 0 || r.Losses > r.Drops {
			t.Errorf("%v: %d drops and %d loss events with a 12-frame buffer, want 0 < losses ≤ drops", cc, r.Drops, r.Losses)
		}
		if r.Throughput < 0.5 {
			t.Errorf("%v: throughput %.3f of C: the flows stalled after losses", cc, r.Throughput)
		}
	}
}
