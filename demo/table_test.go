package demo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
)

// A run whose port was busy less than MinBusy of the time is flagged as
// not comparable, by name and busy fraction; one at or above it is not.
func TestTableFlagsIdlePort(t *testing.T) {
	r := demo.Result{Rate: 995e6, K: 32 << 10, Buffer: 96 << 10, CC: "cubic", Duration: 10 * time.Second, Warmup: time.Second, Flows: []int{1, 4}}
	for _, busy := range []struct {
		title string
		busy  float64
	}{{"per-port ECN", 0.976}, {"per-queue ECN", demo.MinBusy}, {"MQ-ECN", 0.948}} {
		s := demo.SchemeResult{Title: busy.title, Busy: busy.busy, Queues: make([]demo.QueueResult, 2)}
		s.Queues[0].Goodput, s.Queues[1].Goodput = 400e6, 480e6
		r.Schemes = append(r.Schemes, s)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "Not comparable")
	if i < 0 {
		t.Fatalf("MQ-ECN at 94.8%% busy not flagged:\n%s", out)
	}
	note := out[i:]
	if !strings.Contains(note, "MQ-ECN 94.8%") || strings.Contains(note, "per-port") || strings.Contains(note, "per-queue") {
		t.Errorf("note should name MQ-ECN 94.8%% alone:\n%s", note)
	}

	r.Schemes = r.Schemes[:2]
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Not comparable") {
		t.Errorf("runs at ≥ %.0f%% busy flagged:\n%s", 100*demo.MinBusy, b.String())
	}
}
