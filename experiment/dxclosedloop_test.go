package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDXClosedLoop runs the closed loop's DX against DCTCP on short
// virtual runs, without a testbed or root, and renders it through the
// experiments' report: every claim holds at 100 ms (closedloop's
// TestDXAgainstDCTCP asserts the same shape), the tables have a row per
// run and per DX run, and both plots are written.
func TestDXClosedLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("four closed-loop runs")
	}
	x, err := Lookup("dx-closedloop")
	if err != nil || !x.Virtual {
		t.Fatalf("Lookup: %+v, %v; want a virtual experiment", x, err)
	}
	rep, err := x.Run(context.Background(), Env{Duration: 100 * time.Millisecond, Command: "test",
		Now: func() time.Time { return time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Claims) != 6 {
		t.Errorf("%d claims, want 6", len(rep.Claims))
	}
	for _, c := range rep.Claims {
		if c.Verdict() != "holds" {
			t.Errorf("%s, %s: %s (ours %s, paper %s, rule %s)", c.Source, c.What, c.Verdict(), c.Ours, c.Paper, c.Rule)
		}
	}
	if len(rep.Tables) != 2 || len(rep.Tables[0].Rows) != 4 || len(rep.Tables[1].Rows) != 2 {
		t.Errorf("tables: %+v; want 4 runs and 2 DX runs", rep.Tables)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "measured per run") || !strings.Contains(string(md), "100ms measured") {
		t.Errorf("report.md does not say the measured time:\n%s", md)
	}
	for _, p := range []string{"queue-time.png", "queue-cdf.png"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
}
