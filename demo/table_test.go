package demo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/cpustat"
)

// A run whose port was busy less than MinBusy of the time while a CPU was
// saturated is flagged as not comparable, by name, busy fraction and the
// CPU; one below MinBusy on unsaturated CPUs with cwnd-limited senders is
// a result, the scheme's utilisation; one at or above MinBusy is neither.
func TestTableFlagsIdlePort(t *testing.T) {
	r := demo.Result{Rate: 995e6, K: 32 << 10, Buffer: 96 << 10, CC: "dctcp", RTOMin: 10 * time.Millisecond,
		Duration: 10 * time.Second, Warmup: time.Second, Flows: []int{1, 4}}
	quiet := []cpustat.Split{{CPU: 0, Busy: 0.82, SoftIRQ: 0.5, User: 0.32}, {CPU: 1, Busy: 0.93, System: 0.37, SoftIRQ: 0.37, User: 0.19}}
	full := []cpustat.Split{{CPU: 0, Busy: 0.82}, {CPU: 1, Busy: 0.99, SoftIRQ: 0.6, System: 0.39}}
	cwnd := &demo.TCPLimits{Flows: 5, Window: 50 * time.Second, Busy: 49 * time.Second}
	for _, c := range []struct {
		title string
		busy  float64
		cpus  []cpustat.Split
	}{{"per-port ECN", 0.976, full}, {"per-queue ECN", demo.MinBusy, full}, {"MQ-ECN", 0.948, full}, {"TCN", 0.91, quiet}} {
		s := demo.SchemeResult{Title: c.title, Busy: c.busy, Queues: make([]demo.QueueResult, 2),
			Load: demo.Load{CPUs: c.cpus, WorkerCPU: 1, Senders: cwnd}}
		s.Queues[0].Goodput, s.Queues[1].Goodput = 400e6, 480e6
		r.Schemes = append(r.Schemes, s)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "dctcp with ECN, RTO_min 10ms") {
		t.Errorf("the header does not name the transport and its RTO_min:\n%s", out)
	}
	i := strings.Index(out, "Not comparable")
	if i < 0 {
		t.Fatalf("MQ-ECN at 94.8%% busy beside a saturated CPU not flagged:\n%s", out)
	}
	note := out[i:]
	if j := strings.Index(note, "\n"); j >= 0 {
		note = note[:j]
	}
	if !strings.Contains(note, "MQ-ECN 94.8% (CPU 1 99% busy)") || strings.Contains(note, "per-port") || strings.Contains(note, "per-queue") || strings.Contains(note, "TCN") {
		t.Errorf("note should name MQ-ECN 94.8%% and CPU 1 alone:\n%s", note)
	}
	if !strings.Contains(out, "(TCN 91.0%): the idle time is the scheme's and dctcp's utilisation, a result") {
		t.Errorf("TCN at 91%% on unsaturated CPUs with cwnd-limited senders is not reported as a result:\n%s", out)
	}
	if !strings.Contains(out, "TCN: port 91.0% busy; CPU 0 82% (softirq 50%, user 32%), CPU 1 93% (sys 37%, softirq 37%, user 19%) [worker]") {
		t.Errorf("the table does not say where TCN's time went:\n%s", out)
	}

	r.Schemes = r.Schemes[:2]
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Not comparable") || strings.Contains(b.String(), "a result") {
		t.Errorf("runs at ≥ %.0f%% busy flagged:\n%s", 100*demo.MinBusy, b.String())
	}
}

// Load judges the machine by its fixed thresholds: a CPU at SaturatedCPU,
// senders cwnd-limited less than MinCwndLimited of the window.
func TestLoadLimit(t *testing.T) {
	senders := func(busy, rwnd, sndbuf time.Duration) *demo.TCPLimits {
		return &demo.TCPLimits{Flows: 2, Window: 20 * time.Second, Busy: busy, RwndLimited: rwnd, SndbufLimited: sndbuf}
	}
	for _, c := range []struct {
		name  string
		l     demo.Load
		limit string // a part of Limit(), "" for none
		comp  bool
	}{
		{"quiet, cwnd-limited, idle port", demo.Load{Busy: 0.9, CPUs: []cpustat.Split{{Busy: 0.94}}, Senders: senders(20*time.Second, 0, 0)}, "", true},
		{"saturated CPU", demo.Load{Busy: 0.9, CPUs: []cpustat.Split{{CPU: 1, Busy: 0.95}}}, "CPU 1 95%", false},
		{"saturated CPU, busy port", demo.Load{Busy: 0.97, CPUs: []cpustat.Split{{CPU: 1, Busy: 0.99}}}, "CPU 1 99%", true},
		{"senders with nothing queued", demo.Load{Busy: 0.9, Senders: senders(17*time.Second, 0, 0)}, "cwnd-limited 85%", false},
		{"sndbuf-limited senders", demo.Load{Busy: 0.9, Senders: senders(20*time.Second, 0, 3*time.Second)}, "cwnd-limited 85%", false},
		{"rwnd-limited senders", demo.Load{Busy: 0.9, Senders: senders(20*time.Second, 4*time.Second, 0)}, "cwnd-limited 80%", false},
		{"open workload, idle senders", demo.Load{Busy: 0.3, Open: true, CPUs: []cpustat.Split{{Busy: 0.5}}}, "", true},
		{"open workload, saturated CPU", demo.Load{Busy: 0.3, Open: true, CPUs: []cpustat.Split{{Busy: 0.97}}}, "97%", false},
		{"unmeasured, idle port", demo.Load{Busy: 0.9, Unmeasured: true}, "not measured", false},
		{"unmeasured, busy port", demo.Load{Busy: 0.96, Unmeasured: true}, "not measured", true},
	} {
		lim := c.l.Limit()
		if c.limit == "" && lim != "" || !strings.Contains(lim, c.limit) || c.l.Comparable() != c.comp {
			t.Errorf("%s: Limit %q, Comparable %v; want %q in it, %v", c.name, lim, c.l.Comparable(), c.limit, c.comp)
		}
	}
	if got := senders(20*time.Second, 2*time.Second, time.Second).CwndLimited(); got != 0.85 {
		t.Errorf("CwndLimited = %v, want 0.85 (busy less rwnd and sndbuf, over the window)", got)
	}
}
