package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ecnswitch/ecnswitch/experiment"
)

// experimentCommand is `ecnswitch experiment`: one of the papers'
// experiments (package experiment), its report.md and plots written to
// --out; "list" lists them. Ctrl-C stops the flows and tears the testbed
// down.
func experimentCommand() *command {
	var help strings.Builder
	help.WriteString("Rerun one of the papers' experiments on real kernel TCP through ecnswitch on a testbed,\n" +
		"and write report.md, claims.json and PNG plots to --out: the paper's numbers beside\n" +
		"ours (the median of three runs), with the bottleneck port's busy fraction and, where the\n" +
		"port idled, whether the machine limited the run (a CPU saturated, or senders not\n" +
		"cwnd-limited: then it is not comparable), and the build, kernel and CPU model that made\n" +
		"them. Run it on a quiet machine. Everything is torn down at the end, on error and on\n" +
		"Ctrl-C. Needs root, except the virtual ones (dx-closedloop), which run in virtual time in\n" +
		"this process. 'ecnswitch experiment summary --into FILE DIR…' rewrites the claims table\n" +
		"of FILE (docs/experiments.md) from the reports in DIR….\n" +
		"'ecnswitch experiment list' lists the experiments:\n")
	w := nameWidth()
	for _, x := range experiment.All() {
		fmt.Fprintf(&help, "\n  %-*s %s", w, x.Name, x.Summary)
	}
	return &command{
		name: "experiment", synopsis: "NAME | list | summary --into FILE DIR… [flags]", args: -1,
		summary: "rerun one of the papers' experiments on a testbed: report.md and plots (root)",
		help:    help.String(),
		setup:   experimentSetup,
	}
}

// nameWidth is the width of the experiments' name column.
func nameWidth() int {
	w := 0
	for _, x := range experiment.All() {
		w = max(w, len(x.Name))
	}
	return w
}

func experimentSetup(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write report.md and the plots into `DIR` (default out/experiments/NAME)")
	short := fs.Bool("short", false, "quick run: 2s per run after 500ms of warm-up")
	duration := durationFlag(fs, "duration", 0, "measured time per run (default: the experiment's)")
	subnet := fs.String("subnet", "", "the hosts' IPv4 `PREFIX` inside 198.18.0.0/15 (default: the testbed's)")
	level := logLevelFlag(fs, "warn", "")
	into := fs.String("into", "", "summary: the Markdown `FILE` whose claims table to rewrite (stdout without)")
	return func(e *env, pos []string) int {
		switch {
		case len(pos) == 0:
			return e.usageError("experiment", "which one? 'ecnswitch experiment list' lists them")
		case pos[0] == "summary":
			if len(pos) == 1 {
				return e.usageError("experiment", "summary of which reports? name their directories")
			}
			var err error
			if *into == "" {
				err = experiment.WriteSummary(e.stdout, pos[1:])
			} else {
				err = experiment.UpdateSummary(*into, pos[1:])
			}
			if err != nil {
				fmt.Fprintln(e.stderr, "ecnswitch:", err)
				return exitFail
			}
			return exitOK
		case len(pos) > 1:
			return e.usageError("experiment", "%d names, %s: run one at a time", len(pos), strings.Join(pos, ", "))
		}
		if pos[0] == "list" {
			w := nameWidth()
			for _, x := range experiment.All() {
				fmt.Fprintf(e.stdout, "%-*s %s\n%-*s %s\n", w, x.Name, x.Summary, w, "", x.Paper)
			}
			return exitOK
		}
		xe := experiment.Env{Duration: *duration, Short: *short}
		if *subnet != "" {
			p, err := netip.ParsePrefix(*subnet)
			if err != nil {
				return e.usageError("experiment", "--subnet %q: %v", *subnet, err)
			}
			xe.Subnet = p
		}
		return runExperiment(e, pos[0], *out, *level, xe)
	}
}

// runExperiment runs the experiment called name with xe and writes its
// report to dir (default out/experiments/NAME).
func runExperiment(e *env, name, dir, level string, xe experiment.Env) int {
	x, err := experiment.Lookup(name)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch", err)
		return exitUsage
	}
	if xe.Duration < 0 {
		return e.usageError("experiment", "--duration %v: want a positive time", xe.Duration)
	}
	log, err := newLogger(level, e.stderr) // lifecycle logs above warn would drown the progress lines
	if err != nil {
		return e.usageError("experiment", "%v", err)
	}
	defer log.Sync()
	xe.Out, xe.Logger = e.stdout, log
	xe.Command = e.commandLine()
	if dir == "" {
		dir = filepath.Join("out", "experiments", name)
	}
	if os.Geteuid() != 0 && !x.Virtual {
		return e.fail("experiment", errors.New("experiments create network namespaces, veth pairs and XDP programs: run them as root"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	unwatch := context.AfterFunc(ctx, func() {
		fmt.Fprintln(e.stdout, "interrupted: stopping the flows and tearing the testbed down (again to kill at once)")
		stop()
	})
	defer unwatch()
	rep, err := x.Run(ctx, xe)
	if errors.Is(err, context.Canceled) {
		return e.fail("experiment", errors.New("interrupted; the testbed is torn down"))
	}
	if err != nil {
		return e.fail("experiment", err)
	}
	if err := rep.Write(dir); err != nil {
		return e.fail("experiment", err)
	}
	fmt.Fprintf(e.stdout, "\n%s: report and plots in %s\n", x.Name, dir)
	for _, c := range rep.Claims {
		fmt.Fprintf(e.stdout, "  %-14s %-70s %s\n", c.Source, c.What, c.Verdict())
	}
	return exitOK
}
