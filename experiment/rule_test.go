package experiment

import (
	"github.com/ecnswitch/ecnswitch/demo"

	"math"
	"testing"
)

// TestRules: each builder's verdict and text come from the same numbers,
// at and around its bounds; NaN fails every rule, and a ratio's zero
// reference fails the rules that divide by it.
func TestRules(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		rule  Rule
		holds bool
		text  string
	}{
		{inRange("ratio", 1.1, 1.1, 2.7), true, "ratio in [1.1, 2.7]"},
		{inRange("ratio", 2.71, 1.1, 2.7), false, "ratio in [1.1, 2.7]"},
		{inRange("ratio", math.Inf(1), 0.8, 1.25), false, "ratio in [0.8, 1.25]"},
		{inRange("ratio", nan, 0.8, 1.25), false, "ratio in [0.8, 1.25]"},
		{withinFactor("growth", 2.85, 5.7, 2), true, "growth within 2× of 5.7× (2.85–11.4×)"},
		{withinFactor("growth", 2.8, 5.7, 2), false, "growth within 2× of 5.7× (2.85–11.4×)"},
		{withinFactor("growth", 9.8, 4.9, 2), true, "growth within 2× of 4.9× (2.45–9.8×)"},
		{atLeast("", 0.6, 0.6, "%"), true, "at least 60%"},
		{atLeast("", 0.59, 0.6, "%"), false, "at least 60%"},
		{atLeast("CoDel's drops", 0, 1, ""), false, "CoDel's drops at least 1"},
		{atMost("growth", 1.5, 1.5, "×"), true, "growth at most 1.5×"},
		{atMost("growth", 1.51, 1.5, "×"), false, "growth at most 1.5×"},
		{above("share", 0.7, 0.7, "1 : 4's"), false, "share above 1 : 4's"},
		{below("ECN♯", 1, 2, "TCN"), true, "ECN♯ below TCN"},
		{notBelow("busy", 0.9, 0.9, "the smaller headroom's"), true, "busy not below the smaller headroom's"},
		{notAbove("ECN♯'s", 3, 2, "CoDel's"), false, "ECN♯'s no more than CoDel's"},
		{atLeastOf("ECN♯", 95, 100, 0.95, "Tail's"), true, "ECN♯ at least 95% of Tail's"},
		{atLeastOf("ECN♯", 94.9, 100, 0.95, "Tail's"), false, "ECN♯ at least 95% of Tail's"},
		{atLeastOf("DCTCP's mean", 20, 10, 2, "DX's"), true, "DCTCP's mean at least 2× DX's"},
		{atLeastOf("DCTCP's median", 0, 0, 2, "DX's"), true, "DCTCP's median at least 2× DX's"},
		{atMostOf("", 50, 100, 0.5, "none's"), true, "at most 50% of none's"},
		{atMostOf("ECN♯", 151, 100, 1.5, "Tail's"), false, "ECN♯ at most 1.5× Tail's"},
		{near("", 95.5, 100, 0.05, "none's"), true, "within ±5% of none's"},
		{near("", 105.1, 100, 0.05, "none's"), false, "within ±5% of none's"},
		{near("", 0, 0, 0.05, "none's"), false, "within ±5% of none's"},
		{near("MQ-ECN", 1, 1, 0.15, ""), true, "MQ-ECN within ±15%"},
		{lower("MQ-ECN", 100, 89, 0.1, 0.8), true, "MQ-ECN lower by 10–80%"},
		{lower("MQ-ECN", 100, 91, 0.1, 0.8), false, "MQ-ECN lower by 10–80%"},
		{lower("MQ-ECN", 100, 19, 0.1, 0.8), false, "MQ-ECN lower by 10–80%"},
		{lower("MQ-ECN", 0, 0, 0.1, 0.8), false, "MQ-ECN lower by 10–80%"},
		{lower("ECN♯", 182, 8, 0.5, 1), true, "ECN♯ lower by at least 50%"},
		{lower("AVG", 100, 97.5, 0.025, 0.3), true, "AVG lower by 2.5–30%"},
		{shares([]float64{0.5, 0.3, 0.2}, []float64{0.5, 0.25, 0.25}, 0.1), true, "each queue within 10% of C of its share"},
		{shares([]float64{0.5, 0.36, 0.14}, []float64{0.5, 0.25, 0.25}, 0.1), false, "each queue within 10% of C of its share"},
		{shares([]float64{0.5}, []float64{0.5, 0.5}, 0.1), false, "each queue within 10% of C of its share"},
		{noStepDown([]float64{100, 96, 130}, 100, 0.05, "none's goodput"), true, "no step down by more than 5% of none's goodput"},
		{noStepDown([]float64{100, 94, 130}, 100, 0.05, "none's goodput"), false, "no step down by more than 5% of none's goodput"},
		{inRange("a", 1, 0, 2).and(inRange("b", 3, 0, 2)), false, "a in [0, 2] and b in [0, 2]"},
		{inRange("a", 1, 0, 2).because("why"), true, "a in [0, 2] (why)"},
		{inRange("a", 1, 0, 2).given(false), false, "a in [0, 2]"},
	} {
		if c.rule.Holds() != c.holds || c.rule.String() != c.text {
			t.Errorf("%q holds %v, want %q holding %v", c.rule, c.rule.Holds(), c.text, c.holds)
		}
	}
}

// TestClaimRule: a claim's verdict is its rule's, and the report prints
// the rule's text.
func TestClaimRule(t *testing.T) {
	c := Claim{Loads: []demo.Load{testLoad(0.97)}, Rule: lower("MQ-ECN", 100, 50, 0.1, 0.8)}
	if !c.Holds() || c.Verdict() != "holds" {
		t.Errorf("verdict %q", c.Verdict())
	}
	if rows := claimRows([]Claim{c}); rows[0][5] != "**holds**" || rows[0][6] != "MQ-ECN lower by 10–80%" {
		t.Errorf("row %q", rows[0])
	}
}
