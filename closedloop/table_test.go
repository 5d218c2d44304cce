package closedloop

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	doc := "# t\n\n## Closed-loop results\n\nprose\n\n" + BeginMarker + "\nold\ntable\n" + EndMarker + "\n\nafter\n"
	out, err := ReplaceSection([]byte(doc), "new | table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# t\n\n## Closed-loop results\n\nprose\n\n" + BeginMarker + "\nnew | table\n" + EndMarker + "\n\nafter\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	again, _ := ReplaceSection(out, "new | table")
	if string(again) != want {
		t.Fatal("replacing with the same content changed the document")
	}
	for _, bad := range []string{"no markers", EndMarker + "\n" + BeginMarker, BeginMarker + " only"} {
		if _, err := ReplaceSection([]byte(bad), "x"); !errors.Is(err, ErrNoMarkers) {
			t.Errorf("%q: got %v, want ErrNoMarkers", bad, err)
		}
	}
}

func TestMarkdownRows(t *testing.T) {
	sc, _ := Scenario{Scheme: ECNSharp, CC: DCTCP, Flows: []int{1, 4}, PstTarget: ECNSharpTestbedPstTarget}.withDefaults()
	r := Result{Scenario: sc, Marking: "m", Share: []float64{0.4061, 0.5939}, Throughput: 1,
		QueueMean: []float64{1600, 20500}, QueueP99: []float64{6100, 33300}, PortMean: 22100, PortP99: 34800,
		RTTMean: 430 * time.Microsecond, RTTP99: 702 * time.Microsecond, Marks: []uint64{2629, 3453}}
	four := r
	four.PortMean = 88400
	rsc, _ := RTTVariation(DCTCP, CoDel, 0).withDefaults()
	rr := Result{Scenario: rsc, Marking: "c", Share: []float64{0.999}, Throughput: 0.999,
		QueueMean: []float64{13200}, QueueP99: []float64{18200}, RTTMean: 229 * time.Microsecond, RTTP99: 351 * time.Microsecond, Marks: []uint64{2762}}
	md := Tables{Static: []Result{r}, Active: [][2]Result{{r, four}}, RTT: []Result{rr}}.Markdown()
	for _, want := range []string{
		"| dctcp | CoDel | c | 0.999 | 13.2 / 18.2 | 229 / 351 | 2762 | 0 |",
		"base RTTs of 70µs and 210µs; thresholds from the high-percentile RTT 210µs (K = λ·C·RTT = 26250 B), ECN♯'s pst_target from the mean 140µs",
		"| dctcp | ECN♯ (pst_target 85µs) | m | 0.406 | 0.594 | 1.000 | 1.6 / 6.1 | 20.5 / 33.3 | 22.1 / 34.8 | 430 / 702 | 2629 / 3453 | 0 |",
		"| 22.1 / 34.8 | 430 / 702 | 1.000 | 88.4 / 34.8 | 430 / 702 | 1.000 | 4.00× |",
		"K = λ·C·RTT = 31250 B", Command,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The table in docs/marking.md is what Command produces now: the runs are
// deterministic, so any difference means the doc is stale.
func TestDocTableIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario of the doc (about 12 s)")
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "marking.md"))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := Collect(0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceSection(doc, tables.Markdown())
	if err != nil {
		t.Fatalf("docs/marking.md: %v", err)
	}
	if string(want) != string(doc) {
		t.Errorf("docs/marking.md's closed-loop table is stale; regenerate it with %s", Command)
	}
}
