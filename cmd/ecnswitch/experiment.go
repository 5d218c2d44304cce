package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ecnswitch/ecnswitch/experiment"
)

// experimentCmd runs one of the papers' experiments (package experiment)
// and writes its report.md and plots to --out; "list" lists them. Ctrl-C
// stops the flows and tears the testbed down.
func experimentCmd(e *env, args []string) int {
	var help strings.Builder
	help.WriteString("Rerun one of the papers' experiments on real kernel TCP through ecnswitch on a testbed,\n" +
		"and write report.md and PNG plots to --out: the paper's numbers beside ours, with the\n" +
		"bottleneck port's busy fraction (runs below 95% are marked not comparable). Run it\n" +
		"on a quiet machine. Everything is torn down at the end, on error and on Ctrl-C.\n" +
		"Needs root. 'ecnswitch experiment list' lists the experiments:\n")
	w := 0 // the name column's width
	for _, x := range experiment.All() {
		w = max(w, len(x.Name))
	}
	for _, x := range experiment.All() {
		fmt.Fprintf(&help, "\n  %-*s %s", w, x.Name, x.Summary)
	}
	fs, level := e.flagSet("experiment", "[flags] NAME | list", help.String())
	out := fs.String("out", "", "directory for report.md and the plots (default out/experiments/NAME)")
	short := fs.Bool("short", false, "quick run: 2s per run after 500ms of warm-up")
	duration := fs.Duration("duration", 0, "measured time per run (default: the experiment's)")
	subnet := fs.String("subnet", "", "the hosts' IPv4 subnet inside 198.18.0.0/15 (default: the testbed's)")
	// The name may come before, between or after the flags.
	var names []string
	for rest := args; ; {
		if code, ok := parse(fs, rest, math.MaxInt); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	if len(names) > 1 {
		fmt.Fprintf(e.stderr, "ecnswitch experiment: %d names, %s: run one at a time\n", len(names), strings.Join(names, ", "))
		return exitUsage
	}
	var name string
	if len(names) == 1 {
		name = names[0]
	}
	if name == "" {
		fmt.Fprintln(e.stderr, "ecnswitch experiment: which one? 'ecnswitch experiment list' lists them")
		return exitUsage
	}
	if name == "list" {
		for _, x := range experiment.All() {
			fmt.Fprintf(e.stdout, "%-*s %s\n%-*s %s\n", w, x.Name, x.Summary, w, "", x.Paper)
		}
		return exitOK
	}
	x, err := experiment.Lookup(name)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch", err)
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintf(e.stderr, "ecnswitch experiment: --duration %v: want a positive time\n", *duration)
		return exitUsage
	}
	lvl := *level
	if lvl == "" {
		lvl = "warn" // lifecycle logs would drown the progress lines
	}
	log, err := newLogger(lvl, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch experiment:", err)
		return exitUsage
	}
	defer log.Sync()
	xe := experiment.Env{
		Duration: *duration, Short: *short, Out: e.stdout, Logger: log,
		Command: strings.Join(append([]string{"ecnswitch", "experiment"}, args...), " "),
	}
	if *subnet != "" {
		p, err := netip.ParsePrefix(*subnet)
		if err != nil {
			fmt.Fprintf(e.stderr, "ecnswitch experiment: --subnet %q: %v\n", *subnet, err)
			return exitUsage
		}
		xe.Subnet = p
	}
	dir := *out
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
