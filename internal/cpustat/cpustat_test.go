package cpustat

import (
	"math"
	"strings"
	"testing"
)

const stat0 = `cpu  100 0 50 1000 0 0 10 0 0 0
cpu0 50 0 20 500 0 0 5 0 0 0
cpu1 50 0 30 500 0 0 5 0 0 0
intr 1 2 3
`

// One second later at 100 ticks a second: CPU 0 was 93% busy (37 sys, 37
// softirq, 19 user), the figures for the worker's CPU; CPU 1 82%.
const stat1 = `cpu  0 0 0 0 0 0 0 0 0 0
cpu0 69 0 57 507 0 0 42 0 0 0
cpu1 110 2 40 518 0 0 15 0 0 0
`

func TestBetween(t *testing.T) {
	a, err := Parse(strings.NewReader(stat0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(strings.NewReader(stat1))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || a[1].ID != 1 || a[1].System != 30 {
		t.Fatalf("parsed %+v: want cpu0 and cpu1 without the aggregate line", a)
	}
	s := Between(a, b)
	if len(s) != 2 {
		t.Fatalf("%d splits, want 2", len(s))
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	c0 := s[0]
	if c0.CPU != 0 || !near(c0.Busy, 0.93) || !near(c0.System, 0.37) || !near(c0.SoftIRQ, 0.37) || !near(c0.User, 0.19) {
		t.Errorf("CPU 0: %+v, want 93%% busy: 37 sys, 37 softirq, 19 user", c0)
	}
	if got := c0.String(); got != "CPU 0 93% (sys 37%, softirq 37%, user 19%)" {
		t.Errorf("String() = %q", got)
	}
	c1 := s[1]
	if !near(c1.Busy, 0.82) || !near(c1.User, 0.62) || !near(c1.Busy, c1.User+c1.System+c1.SoftIRQ+c1.IRQ+c1.Steal) {
		t.Errorf("CPU 1: %+v, want 82%% busy, 62%% of it user and nice, the parts adding up", c1)
	}
	// A CPU whose counters did not move is left out.
	if got := Between(a, a); len(got) != 0 {
		t.Errorf("an empty window gives %+v", got)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "intr 1 2\n", "cpuX 1 2 3 4 5\n", "cpu0 1 2 x 4 5\n"} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) took it", in)
		}
	}
}

func TestRead(t *testing.T) {
	s, err := Read()
	if err != nil {
		t.Skip("no /proc/stat:", err)
	}
	if len(s) == 0 || s[0].total() == 0 {
		t.Errorf("read %+v", s)
	}
}
