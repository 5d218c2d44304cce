package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Every report also writes its claims as claims.json, so that the claims
// of all the experiments can be gathered into one table (WriteSummary):
// docs/experiments.md's, which `make experiments` rewrites.

// ClaimRecord is one claim as claims.json keeps it: what the report's
// claims table prints, and the verdict's parts.
type ClaimRecord struct {
	Experiment string `json:"experiment"`
	Source     string `json:"source"`
	What       string `json:"what"`
	Paper      string `json:"paper"`
	Ours       string `json:"ours"`
	Busy       string `json:"port_busy"`
	Rule       string `json:"rule"`
	Holds      bool   `json:"holds"`
	Comparable bool   `json:"comparable"`
	Verdict    string `json:"verdict"`
	Machine    string `json:"machine"`
}

// claimsFile is the name of a report's claims.
const claimsFile = "claims.json"

// records returns the report's claims as records.
func (r *Report) records() []ClaimRecord {
	out := make([]ClaimRecord, len(r.Claims))
	for i, c := range r.Claims {
		out[i] = ClaimRecord{
			Experiment: r.Name, Source: c.Source, What: c.What, Paper: c.Paper, Ours: c.Ours, Busy: c.busyRange(),
			Rule: c.Rule.String(), Holds: c.Holds(), Comparable: c.Comparable(), Verdict: c.Verdict(), Machine: c.Machine(),
		}
	}
	return out
}

// writeClaims writes the report's claims to dir/claims.json.
func (r *Report) writeClaims(dir string) error {
	b, err := json.MarshalIndent(r.records(), "", "  ")
	if err != nil {
		return fmt.Errorf("experiment: %s: claims: %w", r.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, claimsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	return nil
}

// WriteSummary reads the claims.json of each report directory in dirs (in
// order; a directory without one is skipped) and writes one Markdown table
// of every claim to w, then how many hold, and how many of those that do
// not were limited by the machine.
func WriteSummary(w io.Writer, dirs []string) error {
	var all []ClaimRecord
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, claimsFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("experiment: summary: %w", err)
		}
		var rs []ClaimRecord
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("experiment: summary: %s: %w", filepath.Join(d, claimsFile), err)
		}
		all = append(all, rs...)
	}
	var b strings.Builder
	var rows [][]string
	holds, limited := 0, 0
	for _, c := range all {
		rows = append(rows, []string{c.Experiment, c.Source, c.What, c.Paper, c.Ours, c.Busy, "**" + c.Verdict + "**", c.Machine})
		switch {
		case c.Holds:
			holds++
		case !c.Comparable:
			limited++
		}
	}
	writeTable(&b, []string{"experiment", "source", "what", "paper", "ours (median of the runs)", "port busy", "verdict", "the machine"}, rows)
	fmt.Fprintf(&b, "\n%d of %d claims hold; of the %d that do not, %d rest on runs the machine limited (a CPU saturated, or senders not cwnd-limited, while the port idled).\n",
		holds, len(all), len(all)-holds, limited)
	_, err := io.WriteString(w, b.String())
	return err
}

// Markers of the claims table in a Markdown file (docs/experiments.md):
// UpdateSummary rewrites what lies between them.
const (
	summaryBegin = "<!-- claims: written by `ecnswitch experiment summary`; do not edit -->"
	summaryEnd   = "<!-- /claims -->"
)

// UpdateSummary writes the summary of the reports in dirs (WriteSummary)
// into the Markdown file at path, in place of what lies between its
// claims markers, which it must have.
func UpdateSummary(path string, dirs []string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("experiment: summary: %w", err)
	}
	s := string(old)
	i, j := strings.Index(s, summaryBegin), strings.Index(s, summaryEnd)
	if i < 0 || j < i {
		return fmt.Errorf("experiment: summary: %s has no claims markers (%s … %s)", path, summaryBegin, summaryEnd)
	}
	var b strings.Builder
	b.WriteString(s[:i+len(summaryBegin)])
	b.WriteString("\n\n")
	if err := WriteSummary(&b, dirs); err != nil {
		return err
	}
	b.WriteString("\n")
	b.WriteString(s[j:])
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
