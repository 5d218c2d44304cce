package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
)

// TestQueueClasses: 8 flows spread evenly over n queues, every sending
// host used, no queue's flows from a host another queue uses while there
// are hosts enough.
func TestQueueClasses(t *testing.T) {
	for _, c := range []struct {
		n       int
		senders [][]int
	}{
		{1, [][]int{{0, 1, 2, 3}}},
		{2, [][]int{{0, 1}, {2, 3}}},
		{4, [][]int{{0}, {1}, {2}, {3}}},
		{8, [][]int{{0}, {1}, {2}, {3}, {0}, {1}, {2}, {3}}},
	} {
		cs := queueClasses(c.n)
		if len(cs) != c.n {
			t.Fatalf("%d queues: %d classes", c.n, len(cs))
		}
		total := 0
		for q, cl := range cs {
			total += cl.Flows
			if cl.Flows != queuesFlows/c.n || !slices.Equal(cl.Senders, c.senders[q]) {
				t.Errorf("%d queues: class %d = %+v, want %d flows from %v", c.n, q, cl, queuesFlows/c.n, c.senders[q])
			}
		}
		if total != queuesFlows {
			t.Errorf("%d queues: %d flows", c.n, total)
		}
		if err := (demo.Options{Classes: cs, K: queuesK, Buffer: queuesBuffer}).Validate(); err != nil {
			t.Errorf("%d queues: %v", c.n, err)
		}
	}
}

// queuesResult is a run with n queues of the two schemes whose flows saw
// RTTs spread evenly from lo to hi.
func queuesResult(n int, rtt map[string][2]time.Duration, busy float64) *demo.Result {
	r := &demo.Result{Rate: 995e6, K: queuesK, Buffer: queuesBuffer, Bucket: 2500, CC: "cubic", Warmup: time.Second, Duration: 10 * time.Second}
	for range n {
		r.Flows = append(r.Flows, queuesFlows/n)
	}
	for _, name := range []string{demo.PerQueue, demo.MQECN} {
		s := demo.SchemeResult{Scheme: name, Title: demo.Title(name), Busy: busy, Load: testLoad(busy)}
		for range n {
			s.Queues = append(s.Queues, demo.QueueResult{Goodput: 920e6 / float64(n), Share: 1 / float64(n), MeanDelay: rtt[name][0] / 2})
			s.RTTs = append(s.RTTs, rtts(rtt[name][0], rtt[name][1], 50))
		}
		r.Schemes = append(r.Schemes, s)
	}
	return r
}

// TestQueuesClaims: the paper's picture — the standard threshold's RTT
// grows about fivefold from 1 to 8 queues, MQ-ECN's stays — holds; RTTs
// that do not grow under the standard threshold do not.
func TestQueuesClaims(t *testing.T) {
	us := time.Microsecond
	build := func(std8 [2]time.Duration, busy float64) []bool {
		var runs [][]*demo.Result
		for i, n := range queueCounts {
			std := [2]time.Duration{250 * us, 350 * us}
			if i == len(queueCounts)-1 {
				std = std8
			}
			runs = append(runs, rounds(queuesResult(n, map[string][2]time.Duration{
				demo.PerQueue: std, demo.MQECN: {250 * us, 350 * us},
			}, busy)))
		}
		rep, err := queuesReport(Env{Command: "test"}, runs)
		if err != nil {
			t.Fatal(err)
		}
		var holds []bool
		for _, c := range rep.Claims {
			holds = append(holds, c.Holds() && c.Comparable())
		}
		return holds
	}
	// Standard 8 queues: RTT from 1250 to 2050 µs, mean 1650 = 5.5×
	// the 300 µs of one queue; p99 ≈ 2034/349 = 5.8×.
	if got := build([2]time.Duration{1250 * us, 2050 * us}, 0.97); !slices.Equal(got, []bool{true, true, true, true, true}) {
		t.Errorf("paper's picture: holds %v, want all", got)
	}
	if got := build([2]time.Duration{260 * us, 360 * us}, 0.97); !slices.Equal(got, []bool{false, false, true, true, true}) {
		t.Errorf("no growth: holds %v, want the standard threshold's two claims to fail", got)
	}
	if got := build([2]time.Duration{1250 * us, 2050 * us}, 0.9); slices.Contains(got, true) {
		t.Errorf("at 90%% busy: holds and comparable %v, want none", got)
	}
}

func TestQueuesReportWrite(t *testing.T) {
	var runs [][]*demo.Result
	for _, n := range queueCounts {
		runs = append(runs, rounds(queuesResult(n, map[string][2]time.Duration{
			demo.PerQueue: {time.Duration(n) * 200 * time.Microsecond, time.Duration(n) * 300 * time.Microsecond},
			demo.MQECN:    {200 * time.Microsecond, 300 * time.Microsecond},
		}, 0.97)))
	}
	rep, err := queuesReport(Env{Command: "ecnswitch experiment mqecn-queues"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "rtt.png", "rtt-mean.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := queuesReport(Env{}, runs[1:]); err == nil {
		t.Error("3 runs: no error")
	}
}
