package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// MinBusy is the least fraction of the time a bottleneck port must be
// sending for its run to count: below it, the machine did not keep up
// with C, and the shares and delays describe CPU contention as much as
// marking (issue 11: "runs must be at ≥ 95% port busy"). It is the
// demo's.
const MinBusy = demo.MinBusy

// Comparable reports whether a run whose bottleneck port was busy the
// fraction busy of the time may be compared with the paper.
func Comparable(busy float64) bool { return busy >= MinBusy }

// Busy formats a busy fraction as a report prints it beside a number:
// "97.3%", or "93.1% (not comparable)" below MinBusy.
func Busy(busy float64) string {
	s := fmt.Sprintf("%.1f%%", 100*busy)
	if !Comparable(busy) {
		s += " (not comparable)"
	}
	return s
}

// Report is what an experiment found, as report.md and its plots.
type Report struct {
	Name    string    // the experiment's name
	Title   string    // the report's heading
	Paper   string    // what of the papers it reproduces
	Command string    // the command that made it
	Date    time.Time // when it ran
	// Build is the build of ecnswitch and the machine it ran on (the
	// kernel, the CPU model and count); Write fills it in when it is left
	// zero.
	Build buildinfo.Info
	// Setup describes the testbed, the switch and the traffic, a
	// paragraph each.
	Setup []string
	// Scaling says how the paper's rate and time constants map onto the
	// testbed's.
	Scaling string
	// Claims set the paper's numbers beside ours.
	Claims []Claim
	Tables []Table
	Plots  []Plot
	// Limits say where the run stops short of the paper, and why.
	Limits []string
}

// Claim is one of the paper's numbers beside ours.
type Claim struct {
	Source string // the paper's figure or table, e.g. "001 Fig. 3(a)"
	What   string // what is compared
	Paper  string // the paper's value
	Ours   string // our value
	// Busy are the busy fractions of the bottleneck ports of the runs Ours
	// rests on.
	Busy []float64
	// Rule is the test of whether our value has the paper's direction and
	// rough magnitude, e.g. "ratio in [1.1, 2.7]", with its outcome.
	Rule Rule
}

// Holds reports whether our value passes the claim's rule.
func (c Claim) Holds() bool { return c.Rule.Holds() }

// Comparable reports whether every run the claim rests on was comparable.
func (c Claim) Comparable() bool {
	return !slices.ContainsFunc(c.Busy, func(b float64) bool { return !Comparable(b) })
}

// Verdict returns "holds" or "does not hold", with "not comparable" added
// when a run the claim rests on was not.
func (c Claim) Verdict() string {
	v := "does not hold"
	if c.Holds() {
		v = "holds"
	}
	if !c.Comparable() {
		v += " (not comparable)"
	}
	return v
}

// busyRange formats the claim's busy fractions as their lowest and highest.
func (c Claim) busyRange() string {
	if len(c.Busy) == 0 {
		return "–"
	}
	lo, hi := slices.Min(c.Busy), slices.Max(c.Busy)
	if hi-lo < 0.0005 {
		return Busy(lo)
	}
	s := fmt.Sprintf("%.1f–%.1f%%", 100*lo, 100*hi)
	if !Comparable(lo) {
		s += " (not comparable)"
	}
	return s
}

// Table is a table of a report.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	Note   string // printed under the table
}

// Plot is a PNG of a report: File in the report's directory, drawn by
// Draw(path).
type Plot struct {
	File    string
	Caption string
	Draw    func(path string) error
}

// Write writes report.md and every plot into dir, creating it.
func (r *Report) Write(dir string) error {
	if r.Build == (buildinfo.Info{}) {
		r.Build = buildinfo.Read()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	for _, p := range r.Plots {
		if err := p.Draw(filepath.Join(dir, p.File)); err != nil {
			return fmt.Errorf("experiment: %s: plot %s: %w", r.Name, p.File, err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	err = r.WriteMarkdown(f)
	return errors.Join(err, f.Close())
}

// WriteMarkdown writes the report as Markdown: setup, scaling, the claims
// beside the paper's, the tables, the plots and the limits.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	fmt.Fprintf(&b, "Reproduces %s. Made by `%s` on %s.\n\n", r.Paper, r.Command, r.Date.UTC().Format("2006-01-02 15:04 MST"))
	if r.Build != (buildinfo.Info{}) {
		fmt.Fprintf(&b, "Ran on %s.\n\n", r.Build)
	}
	if len(r.Setup) > 0 {
		b.WriteString("## Setup\n\n")
		for _, p := range r.Setup {
			b.WriteString(p + "\n\n")
		}
	}
	if r.Scaling != "" {
		b.WriteString("## Scaling\n\n" + r.Scaling + "\n\n")
	}
	if len(r.Claims) > 0 {
		b.WriteString("## The paper's numbers beside ours\n\n")
		fmt.Fprintf(&b, "A run whose bottleneck port was busy less than %.0f%% of the time is not comparable: the machine, not the marking, shaped it.\n\n", 100*MinBusy)
		writeTable(&b, []string{"source", "what", "paper", "ours", "port busy", "verdict", "rule"}, claimRows(r.Claims))
		b.WriteString("\n")
	}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "## %s\n\n", t.Title)
		writeTable(&b, t.Header, t.Rows)
		if t.Note != "" {
			b.WriteString("\n" + t.Note + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.Plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range r.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n%s\n\n", p.File, p.File, p.Caption)
		}
	}
	if len(r.Limits) > 0 {
		b.WriteString("## Limits\n\n")
		for _, l := range r.Limits {
			b.WriteString("- " + l + "\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func claimRows(cs []Claim) [][]string {
	rows := make([][]string, len(cs))
	for i, c := range cs {
		rows[i] = []string{c.Source, c.What, c.Paper, c.Ours, c.busyRange(), "**" + c.Verdict() + "**", c.Rule.String()}
	}
	return rows
}

// writeTable writes a Markdown table, escaping the cells' pipes.
func writeTable(b *strings.Builder, header []string, rows [][]string) {
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}
