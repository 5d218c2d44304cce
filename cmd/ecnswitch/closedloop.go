package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ecnswitch/ecnswitch/closedloop"
)

// closedloopCommand is `ecnswitch closedloop`: the closed-loop simulator's
// tables (package closedloop).
func closedloopCommand() *command {
	return &command{
		name: "closedloop", synopsis: "table [flags]",
		summary: "rerun the closed-loop marking experiments in virtual time; rewrite docs/marking.md's table",
		help: "The closed loop of package closedloop: window-based senders in virtual time drive the\n" +
			"switch's real pipeline on memory ports. Its DX against DCTCP is an experiment:\n" +
			"'ecnswitch experiment dx-closedloop'.",
		subs: []*command{
			{name: "table", synopsis: "[--doc FILE] [--print] [--warmup D] [--duration D] [-q]",
				summary: "rerun the static-flow and RTT-variation runs and rewrite their table",
				short:   map[string]string{"q": "quiet"},
				help: "Rerun the papers' static-flow and RTT-variation experiments in the closed loop and\n" +
					"rewrite the results table in docs/marking.md, between " + closedloop.BeginMarker + " and\n" +
					closedloop.EndMarker + " (--print: print it instead). The runs are deterministic:\n" +
					"the same code gives the same table. About 10 s.",
				setup: closedloopTableSetup},
		},
	}
}

func closedloopTableSetup(fs *flag.FlagSet) action {
	doc := fs.String("doc", "", "the document `FILE` to update (default: docs/marking.md of the module the working directory is in)")
	printOnly := fs.Bool("print", false, "print the table on stdout instead of updating the document")
	warmup := durationFlag(fs, "warmup", 0, "virtual warm-up per run (0: closedloop.DefaultWarmup)")
	duration := durationFlag(fs, "duration", 0, "virtual measured time per run (0: closedloop.DefaultDuration)")
	quiet := fs.Bool("quiet", false, "do not report each run on stderr")
	return func(e *env, _ []string) int {
		if *warmup < 0 || *duration < 0 {
			return e.usageError("closedloop table", "--warmup %v, --duration %v: want times ≥ 0", *warmup, *duration)
		}
		if err := closedloopTable(e, *doc, *printOnly, *warmup, *duration, *quiet); err != nil {
			return e.fail("closedloop table", err)
		}
		return exitOK
	}
}

// closedloopTable runs closedloop.Collect and writes its table into doc,
// or prints it.
func closedloopTable(e *env, doc string, printOnly bool, warmup, duration time.Duration, quiet bool) error {
	if doc == "" && !printOnly {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		doc = filepath.Join(root, "docs", "marking.md")
	}
	var old []byte
	if !printOnly {
		var err error
		if old, err = os.ReadFile(doc); err != nil {
			return err
		}
		if _, err := closedloop.ReplaceSection(old, ""); err != nil {
			return fmt.Errorf("%s: %w", doc, err)
		}
	}
	start := time.Now()
	progress := func(r closedloop.Result) {
		if !quiet {
			fmt.Fprintf(e.stderr, "%-40s share %.3f throughput %.3f port %.1f kB\n",
				r.Scenario.Name, r.Share, r.Throughput, r.PortMean/1000)
		}
	}
	t, err := closedloop.Collect(warmup, duration, progress)
	if err != nil {
		return err
	}
	table := t.Markdown()
	if printOnly {
		fmt.Fprint(e.stdout, table)
		return nil
	}
	out, err := closedloop.ReplaceSection(old, table)
	if err != nil {
		return err
	}
	if err := os.WriteFile(doc, out, 0o644); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(e.stderr, "wrote %s in %v\n", doc, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// moduleRoot returns the nearest directory at or above the working
// directory that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory; run inside the module or pass --doc")
		}
		dir = parent
	}
}
