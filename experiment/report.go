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
// sending for its run to count without further question: below it, the
// machine may not have kept up with C (issue 11: "runs must be at ≥ 95%
// port busy"). It is the demo's.
const MinBusy = demo.MinBusy

// Busy formats a busy fraction as a report prints it beside a number:
// "97.3%".
func Busy(busy float64) string { return fmt.Sprintf("%.1f%%", 100*busy) }

// loadBusy formats a run's busy fraction, adding "(not comparable)" when
// the machine limited a run whose port idled (demo.Load.Comparable).
func loadBusy(l demo.Load) string {
	s := Busy(l.Busy)
	if !l.Comparable() {
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
	// Transport says what the hosts ran and with which timers, citing the
	// paper's section; NonECT what the switch does with a Not-ECT packet a
	// marker would mark, and how the report counts such drops.
	Transport, NonECT string
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
	// Loads are what the machine did in the runs Ours rests on: the
	// bottleneck ports' busy fractions, the CPUs, the senders.
	Loads []demo.Load
	// Rule is the test of whether our value has the paper's direction and
	// rough magnitude, e.g. "ratio in [1.1, 2.7]", with its outcome.
	Rule Rule
}

// Holds reports whether our value passes the claim's rule.
func (c Claim) Holds() bool { return c.Rule.Holds() }

// Comparable reports whether every run the claim rests on was comparable
// (demo.Load.Comparable): its port busy at least MinBusy, or left idle by
// the scheme and the transport, not by the machine.
func (c Claim) Comparable() bool {
	return !slices.ContainsFunc(c.Loads, func(l demo.Load) bool { return !l.Comparable() })
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
	if len(c.Loads) == 0 {
		return "–"
	}
	busy := make([]float64, len(c.Loads))
	for i, l := range c.Loads {
		busy[i] = l.Busy
	}
	lo, hi := slices.Min(busy), slices.Max(busy)
	s := Busy(lo)
	if hi-lo >= 0.0005 {
		s = fmt.Sprintf("%.1f–%.1f%%", 100*lo, 100*hi)
	}
	if !c.Comparable() {
		s += " (not comparable)"
	}
	return s
}

// Machine says what the machine did in the claim's runs, measured: the
// limits of the runs it makes not comparable; else, for a claim that does
// not hold, that the machine did not cause it (its busiest CPU and its
// least cwnd-limited senders); "–" for a claim that holds on runs the
// machine did not limit.
func (c Claim) Machine() string {
	n, worst := 0, -1
	for i, l := range c.Loads {
		if !l.Comparable() {
			if n++; worst < 0 || busiest(l) > busiest(c.Loads[worst]) {
				worst = i
			}
		}
	}
	if n > 0 {
		return fmt.Sprintf("machine-limited in %d of %d runs: %s", n, len(c.Loads), c.Loads[worst].Limit())
	}
	if c.Holds() || len(c.Loads) == 0 {
		return "–"
	}
	return "not the machine: " + headroom(c.Loads)
}

// busiest returns the busy fraction of l's busiest CPU.
func busiest(l demo.Load) float64 {
	b := 0.0
	for _, c := range l.CPUs {
		b = max(b, c.Busy)
	}
	return b
}

// headroom sums up the loads' machine: "busiest CPU 88%, senders
// cwnd-limited ≥ 97%".
func headroom(ls []demo.Load) string {
	cpu, cwnd, senders := 0.0, 1.0, false
	for _, l := range ls {
		for _, c := range l.CPUs {
			cpu = max(cpu, c.Busy)
		}
		if l.Senders != nil && l.Senders.Flows > 0 {
			cwnd, senders = min(cwnd, l.Senders.CwndLimited()), true
		}
	}
	s := fmt.Sprintf("busiest CPU %.0f%%", 100*cpu)
	if senders {
		s += fmt.Sprintf(", senders cwnd-limited ≥ %.0f%%", 100*cwnd)
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

// Write writes report.md, claims.json (WriteSummary reads it) and every
// plot into dir, creating it.
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
	if err := r.writeClaims(dir); err != nil {
		return err
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
	if r.Transport != "" || r.NonECT != "" {
		b.WriteString("## Hosts and Not-ECT packets\n\n")
		for _, p := range []string{r.Transport, r.NonECT} {
			if p != "" {
				b.WriteString(p + "\n\n")
			}
		}
	}
	if r.Scaling != "" {
		b.WriteString("## Scaling\n\n" + r.Scaling + "\n\n")
	}
	if len(r.Claims) > 0 {
		b.WriteString("## The paper's numbers beside ours\n\n")
		fmt.Fprintf(&b, "A run whose bottleneck port was busy less than %.0f%% of the time is not comparable when the machine limited it: "+
			"a CPU %.0f%% busy or more (/proc/stat over the window), or senders cwnd-limited less than %.0f%% of it (TCP_INFO). "+
			"A port left idle by cwnd-limited senders on CPUs with time to spare is the scheme's and the transport's utilisation, a result. "+
			"Ours is the median of the runs, their range and count in brackets.\n\n", 100*MinBusy, 100*demo.SaturatedCPU, 100*demo.MinCwndLimited)
		writeTable(&b, []string{"source", "what", "paper", "ours", "port busy", "verdict", "rule", "the machine"}, claimRows(r.Claims))
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
		rows[i] = []string{c.Source, c.What, c.Paper, c.Ours, c.busyRange(), "**" + c.Verdict() + "**", c.Rule.String(), c.Machine()}
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
