package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ecnswitch/ecnswitch/closedloop"
)

// closedloopUsage is the help of `ecnswitch closedloop`.
const closedloopUsage = `usage: ecnswitch closedloop table [--doc FILE] [--print] [--warmup D] [--duration D] [-q]

table reruns the papers' static-flow and RTT-variation experiments in the
closed loop of package closedloop (virtual time: window-based senders drive
the switch's real pipeline on memory ports) and rewrites the results table
in docs/marking.md, between <!-- closed-loop:begin --> and
<!-- closed-loop:end -->. The runs are deterministic: the same code gives the
same table. The closed loop's DX against DCTCP is an experiment:
'ecnswitch experiment dx-closedloop'.

'ecnswitch closedloop table -h' lists its flags.`

// closedloopCmd runs `ecnswitch closedloop table [flags]`.
func closedloopCmd(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(e.stderr, closedloopUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] != "table" {
		fmt.Fprintln(e.stderr, closedloopUsage)
		fmt.Fprintf(e.stderr, "ecnswitch closedloop: unknown command %q\n", args[0])
		return exitUsage
	}
	fs, _ := e.flagSet("closedloop table", "[flags]", "Rerun the closed-loop marking experiments in virtual time and rewrite their table in\n"+
		"docs/marking.md (--print: print it instead). About 10 s.")
	doc := fs.String("doc", "", "the document to update (default: docs/marking.md of the module the working directory is in)")
	printOnly := fs.Bool("print", false, "print the table on stdout instead of updating the document")
	warmup := fs.Duration("warmup", 0, "virtual warm-up per run (0: closedloop.DefaultWarmup)")
	duration := fs.Duration("duration", 0, "virtual measured time per run (0: closedloop.DefaultDuration)")
	quiet := fs.Bool("q", false, "do not report each run on stderr")
	if code, ok := parse(fs, args[1:], 0); !ok {
		return code
	}
	if *warmup < 0 || *duration < 0 {
		fmt.Fprintf(e.stderr, "ecnswitch closedloop table: --warmup %v, --duration %v: want times ≥ 0\n", *warmup, *duration)
		return exitUsage
	}
	if err := closedloopTable(e, *doc, *printOnly, *warmup, *duration, *quiet); err != nil {
		return e.fail("closedloop table", err)
	}
	return exitOK
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
