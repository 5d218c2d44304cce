package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/cpustat"
)

// testLoad is a run's load at busy on a machine that did not limit it
// when busy is at least MinBusy (CPUs 80% busy, senders cwnd-limited),
// and that did (a CPU at 100%) when it is below.
func testLoad(busy float64) demo.Load {
	cpu := 0.8
	if busy < MinBusy {
		cpu = 1
	}
	return demo.Load{Busy: busy, WorkerCPU: 1, CPUs: []cpustat.Split{{CPU: 0, Busy: 0.8, User: 0.8}, {CPU: 1, Busy: cpu, SoftIRQ: cpu}},
		Senders: &demo.TCPLimits{Flows: 1, Window: time.Second, Busy: time.Second}}
}

// rounds returns three rounds of the same run, each a result of its own.
func rounds(r *demo.Result) []*demo.Result {
	out := make([]*demo.Result, 3)
	for i := range out {
		c := *r
		out[i] = &c
	}
	return out
}

// The kit runs a demo's schemes in rounds and cuts them apart: three
// rounds of two schemes become three results of two.
func TestSplitRounds(t *testing.T) {
	res := &demo.Result{Rate: 1e9}
	for i := range 6 {
		res.Schemes = append(res.Schemes, demo.SchemeResult{Scheme: []string{demo.PerQueue, demo.MQECN}[i%2], Busy: float64(i) / 10})
	}
	rs, err := splitRounds(res, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || len(rs[2].Schemes) != 2 || rs[2].Schemes[1].Busy != 0.5 || rs[0].Rate != 1e9 {
		t.Fatalf("rounds %+v", rs)
	}
	if got := over(schemeRuns(rs, demo.MQECN), func(s demo.SchemeResult) float64 { return s.Busy }); got.Median() != 0.3 {
		t.Errorf("MQ-ECN's busy over the rounds %v, median %v; want 0.1, 0.3, 0.5", got, got.Median())
	}
	if _, err := splitRounds(res, 4, 2); err == nil {
		t.Error("6 scheme runs split as 2 rounds of 4")
	}
}

// A claim on runs the machine limited says so, and names the limit; one
// that does not hold on runs it did not limit says it was not the machine.
func TestClaimMachine(t *testing.T) {
	c := Claim{Rule: Rule{holds: false}, Loads: []demo.Load{testLoad(0.97), testLoad(0.9)}}
	if c.Comparable() || c.Machine() != "machine-limited in 1 of 2 runs: CPU 1 100% busy" || c.Verdict() != "does not hold (not comparable)" {
		t.Errorf("limited: comparable %v, machine %q, verdict %q", c.Comparable(), c.Machine(), c.Verdict())
	}
	quiet := testLoad(0.9)
	quiet.CPUs[1].Busy = 0.8
	c = Claim{Rule: Rule{holds: false}, Loads: []demo.Load{testLoad(0.97), quiet}}
	if !c.Comparable() || c.Machine() != "not the machine: busiest CPU 80%, senders cwnd-limited ≥ 100%" || c.busyRange() != "90.0–97.0%" {
		t.Errorf("a result: comparable %v, machine %q, busy %q", c.Comparable(), c.Machine(), c.busyRange())
	}
	c.Rule.holds = true
	if c.Machine() != "–" || c.Verdict() != "holds" {
		t.Errorf("holding: machine %q, verdict %q", c.Machine(), c.Verdict())
	}
	// Runs that measured only their ports keep the old rule: below
	// MinBusy, not comparable.
	if c := (Claim{Loads: busyOnly(0.97, 0.9)}); c.Comparable() || c.Machine() != "machine-limited in 1 of 2 runs: the machine, not measured" {
		t.Errorf("busy only: comparable %v, machine %q", c.Comparable(), c.Machine())
	}
	rows := demoLoadRows("1 : 4", []*demo.Result{{Schemes: []demo.SchemeResult{{Title: "MQ-ECN", Load: testLoad(0.9)}}}})
	tab := loadTable(rows)
	if len(tab.Rows) != 1 || tab.Rows[0][0] != "1 : 4, MQ-ECN, run 1" || !strings.Contains(tab.Rows[0][1], "not comparable") ||
		!strings.Contains(tab.Rows[0][2], "[worker]") || tab.Rows[0][6] != "none" {
		t.Errorf("load table %+v", tab.Rows)
	}
}

// Each report writes its claims as claims.json; the summary gathers them
// into one table and counts what holds and what the machine limited.
func TestSummary(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	held := &Report{Name: "a", Title: "a", Claims: []Claim{{Source: "001 Fig. 1", What: "x", Paper: "1", Ours: "1.1", Loads: []demo.Load{testLoad(0.97)}, Rule: Rule{true, "r"}}}}
	failed := &Report{Name: "b", Title: "b", Claims: []Claim{
		{Source: "000 Fig. 16", What: "y", Loads: []demo.Load{testLoad(0.9)}, Rule: Rule{false, "r"}},
		{Source: "000 Fig. 17", What: "z", Loads: []demo.Load{testLoad(0.97)}, Rule: Rule{false, "r"}},
	}}
	for d, r := range map[string]*Report{a: held, b: failed} {
		if err := r.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := WriteSummary(&out, []string{a, filepath.Join(dir, "none"), b}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"| a | 001 Fig. 1 | x | 1 | 1.1 | 97.0% | **holds** | – |", "| b | 000 Fig. 16 | y |",
		"machine-limited in 1 of 1 runs: CPU 1 100% busy", "not the machine: busiest CPU 80%", "1 of 3 claims hold; of the 2 that do not, 1 rest on runs the machine limited"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}

	// UpdateSummary puts the same table between a file's claims markers,
	// and leaves the rest of the file alone; a file without them is an
	// error.
	doc := filepath.Join(dir, "experiments.md")
	before, after := "# Experiments\n\n", "\n\nThe rest.\n"
	if err := os.WriteFile(doc, []byte(before+summaryBegin+"\nold table\n"+summaryEnd+after), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSummary(doc, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	if want := before + summaryBegin + "\n\n" + s + "\n" + summaryEnd + after; string(got) != want {
		t.Errorf("the file after UpdateSummary:\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(doc, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSummary(doc, []string{a}); err == nil {
		t.Error("UpdateSummary of a file without claims markers succeeded")
	}
}
