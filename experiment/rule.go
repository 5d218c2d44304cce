package experiment

import (
	"fmt"
	"math"
	"strconv"
)

// Rule is a claim's test, fixed before the run: whether our value passes
// it, and how the report states it. The builders below (inRange, lower,
// atLeastOf, …) make both from one expression, so that the text cannot say
// one thing while the code tests another. A value that is NaN fails every
// rule, and so does a reference that is not positive where the rule
// divides by it (near, lower).
type Rule struct {
	holds bool
	text  string
}

// Holds reports whether our value passes the rule.
func (r Rule) Holds() bool { return r.holds }

// String returns the rule as the report states it, e.g. "ratio in [1.1, 2.7]".
func (r Rule) String() string { return r.text }

// and holds when both r and o hold: "r and o".
func (r Rule) and(o Rule) Rule {
	return Rule{holds: r.holds && o.holds, text: r.text + " and " + o.text}
}

// because adds why to the rule's text, in parentheses; the verdict is r's.
func (r Rule) because(why string) Rule {
	r.text += " (" + why + ")"
	return r
}

// given holds only when ok, which says that the data the rule reads are
// there (a level with samples, a count with runs); the text is r's.
func (r Rule) given(ok bool) Rule {
	r.holds = r.holds && ok
	return r
}

// subject prefixes a rule's text with the name of what it tests, if any.
func subject(name, text string) string {
	if name == "" {
		return text
	}
	return name + " " + text
}

// inRange holds when lo ≤ x ≤ hi: "name in [lo, hi]".
func inRange(name string, x, lo, hi float64) Rule {
	return Rule{holds: x >= lo && x <= hi, text: subject(name, fmt.Sprintf("in [%s, %s]", num(lo), num(hi)))}
}

// withinFactor holds when x is within a factor k of target, both ways:
// "name within 2× of 5.7× (2.85–11.4×)".
func withinFactor(name string, x, target, k float64) Rule {
	lo, hi := target/k, target*k
	return Rule{holds: x >= lo && x <= hi,
		text: subject(name, fmt.Sprintf("within %s× of %s× (%s–%s×)", num(k), num(target), num(lo), num(hi)))}
}

// atLeast holds when x ≥ bound: "name at least 60%" with unit "%" (x and
// bound are fractions), "name at least 1.5×" with "×", "name at least 1"
// with "".
func atLeast(name string, x, bound float64, unit string) Rule {
	return Rule{holds: x >= bound, text: subject(name, "at least "+withUnit(bound, unit))}
}

// atMost holds when x ≤ bound: "name at most 1.5×", as atLeast.
func atMost(name string, x, bound float64, unit string) Rule {
	return Rule{holds: x <= bound, text: subject(name, "at most "+withUnit(bound, unit))}
}

// above holds when x > y: "name above of".
func above(name string, x, y float64, of string) Rule {
	return Rule{holds: x > y, text: subject(name, "above "+of)}
}

// below holds when x < y: "name below of".
func below(name string, x, y float64, of string) Rule {
	return Rule{holds: x < y, text: subject(name, "below "+of)}
}

// notBelow holds when x ≥ y: "name not below of".
func notBelow(name string, x, y float64, of string) Rule {
	return Rule{holds: x >= y, text: subject(name, "not below "+of)}
}

// notAbove holds when x ≤ y: "name no more than of".
func notAbove(name string, x, y float64, of string) Rule {
	return Rule{holds: x <= y, text: subject(name, "no more than "+of)}
}

// atLeastOf holds when x ≥ f·y: "name at least 95% of of" for f below 1,
// "name at least 2× of" from 1 up.
func atLeastOf(name string, x, y, f float64, of string) Rule {
	return Rule{holds: x >= f*y, text: subject(name, "at least "+share(f, of))}
}

// atMostOf holds when x ≤ f·y: "name at most 50% of of", as atLeastOf.
func atMostOf(name string, x, y, f float64, of string) Rule {
	return Rule{holds: x <= f*y, text: subject(name, "at most "+share(f, of))}
}

// near holds when y > 0 and x is within ±tol of y (|x/y − 1| ≤ tol):
// "name within ±15% of of".
func near(name string, x, y, tol float64, of string) Rule {
	text := "within ±" + pct(tol) + "%"
	if of != "" {
		text += " of " + of
	}
	return Rule{holds: y > 0 && math.Abs(x/y-1) <= tol, text: subject(name, text)}
}

// lower holds when before > 0 and after is lower than before by lo to hi
// of it (lo ≤ 1 − after/before ≤ hi): "name lower by 10–80%", or "name
// lower by at least 50%" when hi is 1 or more.
func lower(name string, before, after, lo, hi float64) Rule {
	red := 1 - after/before
	text := "lower by " + pct(lo) + "–" + pct(hi) + "%"
	if hi >= 1 {
		text = "lower by at least " + pct(lo) + "%"
	}
	return Rule{holds: before > 0 && red >= lo && red <= hi, text: subject(name, text)}
}

// noStepDown holds when no x is below the one before it by more than a
// fraction f of ref: "no step down by more than 5% of none's goodput".
func noStepDown(xs []float64, ref, f float64, of string) Rule {
	ok := true
	for i := 1; i < len(xs); i++ {
		ok = ok && xs[i] >= xs[i-1]-f*ref
	}
	return Rule{holds: ok, text: "no step down by more than " + share(f, of)}
}

// shares holds when every queue's got is within tol of its want, both
// fractions of what the port can carry: "each queue within 10% of C of its
// share".
func shares(got, want []float64, tol float64) Rule {
	ok := len(got) == len(want)
	for i := range min(len(got), len(want)) {
		ok = ok && math.Abs(got[i]-want[i]) <= tol
	}
	return Rule{holds: ok, text: "each queue within " + pct(tol) + "% of C of its share"}
}

// share formats f of of: "95% of Tail's" below 1, "2× DX's" from 1 up.
func share(f float64, of string) string {
	if f < 1 {
		return pct(f) + "% of " + of
	}
	return num(f) + "× " + of
}

// withUnit formats a rule's bound: unit "%" takes it as a fraction.
func withUnit(x float64, unit string) string {
	if unit == "%" {
		return pct(x) + "%"
	}
	return num(x) + unit
}

// num formats x with at most four significant digits and no trailing
// zeros: 2.85, 11.4, 0.35.
func num(x float64) string {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// pct formats a fraction as a percentage without the sign: 0.1 is "10",
// 0.025 "2.5".
func pct(f float64) string { return num(100 * f) }
