package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecnswitch/ecnswitch/doctor"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// doctorCommand is `ecnswitch doctor`: what this host can do for the
// switch, and how to fix what it cannot.
func doctorCommand() *command {
	return &command{
		name: "doctor", synopsis: "[--iface IF,...] [--json]",
		summary: "check what this host can do for the switch, and say how to fix what it cannot",
		help: "Check this host: AF_XDP sockets and XDP, live frames, BTF, the XDP RX metadata\n" +
			"kfuncs and XSK TX metadata (hardware stamps), PTP hardware clocks, struct_ops and\n" +
			"DCTCP (the papers' hosts), and CPUs isolated from interrupts; then, per interface,\n" +
			"native XDP, zero-copy, redirects, RX and TX stamps, its PHC and threaded NAPI.\n" +
			"One line per check: OK, WARN (the switch runs, slower or with less) or MISSING,\n" +
			"with what to do about it. It only reads: no program is attached and no interface\n" +
			"changed. Run it as root, or the probes that load a BPF program cannot tell.\n" +
			"Exits 0 if the switch can run here at all, 1 if it cannot (no AF_XDP or XDP).",
		setup: func(fs *flag.FlagSet) action {
			ifaces := fs.String("iface", "", "check only these interfaces, `IF,...` (default: every one but loopback)")
			asJSON := fs.Bool("json", false, "print the checks, with the build and the machine, as JSON")
			return func(e *env, _ []string) int {
				var names []string
				if *ifaces != "" {
					names = strings.Split(*ifaces, ",")
				}
				return runDoctor(e, doctor.System(), names, *asJSON)
			}
		},
	}
}

// doctorReport is what doctor --json prints.
type doctorReport struct {
	Build  buildinfo.Info `json:"build"`
	CanRun bool           `json:"can_run"`
	Checks []doctor.Check `json:"checks"`
}

func runDoctor(e *env, h doctor.Host, ifaces []string, asJSON bool) int {
	cs := doctor.Run(h, ifaces)
	ok := doctor.CanRun(cs)
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false) // the fixes' shell commands have > and &
		enc.SetIndent("", "  ")
		if err := enc.Encode(doctorReport{Build: buildinfo.Read(), CanRun: ok, Checks: cs}); err != nil {
			return e.fail("doctor", err)
		}
	} else {
		writeChecks(e.stdout, cs)
	}
	if !ok {
		return exitFail
	}
	return exitOK
}

// writeChecks prints one line per check: status, name, what was found
// and, unless it is OK, the fix; then a summary.
func writeChecks(w io.Writer, cs []doctor.Check) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var warn, missing []string
	for _, c := range cs {
		line := c.Detail
		if c.Fix != "" && c.Status != doctor.OK {
			line += "; fix: " + c.Fix
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, line)
		switch c.Status {
		case doctor.Warn:
			warn = append(warn, c.Name)
		case doctor.Missing:
			missing = append(missing, c.Name)
		}
	}
	tw.Flush()
	switch {
	case !doctor.CanRun(cs):
		fmt.Fprintf(w, "\nthe switch cannot run here: %s missing\n", strings.Join(required(cs), ", "))
	case len(missing) > 0:
		fmt.Fprintf(w, "\nthe switch can run here; missing: %s; %d warnings\n", strings.Join(missing, ", "), len(warn))
	default:
		fmt.Fprintf(w, "\nthe switch can run here; %d warnings\n", len(warn))
	}
}

// required returns the names of the required checks that are missing.
func required(cs []doctor.Check) []string {
	var names []string
	for _, c := range cs {
		if c.Required && c.Status == doctor.Missing {
			names = append(names, c.Name)
		}
	}
	return names
}
