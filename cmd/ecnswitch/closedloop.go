// Command table runs the closed-loop marking experiments of package
// closedloop and writes their results table into docs/marking.md, between
// the markers <!-- closed-loop:begin --> and <!-- closed-loop:end -->.
//
// Run it from anywhere inside the module:
//
//	go run ./bench/closedloop/cmd/table            # rewrite docs/marking.md
//	go run ./bench/closedloop/cmd/table -print     # print the table only
//
// Every run is in virtual time and deterministic: the same code gives the
// same table.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ecnswitch/ecnswitch/bench/closedloop"
)

func main() {
	doc := flag.String("doc", "", "the document to update (default: docs/marking.md of the module)")
	printOnly := flag.Bool("print", false, "print the table on stdout instead of updating the document")
	warmup := flag.Duration("warmup", 0, "virtual warm-up per run (0: closedloop.DefaultWarmup)")
	duration := flag.Duration("duration", 0, "virtual measured time per run (0: closedloop.DefaultDuration)")
	quiet := flag.Bool("q", false, "do not report each run on stderr")
	flag.Parse()
	if err := run(*doc, *printOnly, *warmup, *duration, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}

func run(doc string, printOnly bool, warmup, duration time.Duration, quiet bool) error {
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
			fmt.Fprintf(os.Stderr, "%-40s share %.3f throughput %.3f port %.1f kB\n",
				r.Scenario.Name, r.Share, r.Throughput, r.PortMean/1000)
		}
	}
	t, err := closedloop.Collect(warmup, duration, progress)
	if err != nil {
		return err
	}
	table := t.Markdown()
	if printOnly {
		fmt.Print(table)
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
		fmt.Fprintf(os.Stderr, "wrote %s in %v\n", doc, time.Since(start).Round(time.Millisecond))
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
			return "", errors.New("no go.mod at or above the working directory; run inside the module or pass -doc")
		}
		dir = parent
	}
}
