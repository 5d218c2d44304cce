// Package layering holds the test that keeps DESIGN.md's import graph true.
package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ecnswitch/ecnswitch/"

// allowed lists, for each package, which of our packages it may import.
// internal/* leaves (spsc) may be imported by anyone below cmd. Packages
// not listed may import anything but cmd and bench.
var allowed = map[string][]string{
	"packet":        {},
	"timestamp":     {"packet"},
	"buffer":        {"packet"},
	"scheduler":     {"packet"},
	"marking":       {"packet"},
	"ports":         {"packet"},
	"ports/memport": {"packet", "ports"},
	"ports/afxdp":   {"packet", "ports"},
	"testbed":       {"packet"},
	"dataplane":     {"packet", "timestamp", "buffer", "scheduler", "marking", "ports"},
}

// composers (and their sub-packages) may import dataplane; no one may
// import cmd, and only cmd and bench's own sub-packages may import bench.
var composers = []string{"dataplane", "bench", "cmd", "config", "telemetry", "capture", "demo"}

// within reports whether pkg is root or lies below it.
func within(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		name := strings.TrimPrefix(p.ImportPath, module)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if strings.HasPrefix(dep, "internal/") && !strings.HasPrefix(name, "internal/") {
				continue
			}
			if strings.HasPrefix(name, "internal/") && !strings.HasSuffix(name, "test") {
				t.Errorf("%s imports %s: internal leaves import nothing of ours", name, dep)
			}
			if ok, listed := allowed[name]; listed && !slices.Contains(ok, dep) {
				t.Errorf("%s imports %s; DESIGN.md allows only %v", name, dep, ok)
			}
			if strings.HasPrefix(dep, "cmd/") {
				t.Errorf("%s imports %s: nothing imports a command", name, dep)
			}
			if within(dep, "bench") && !within(name, "cmd") && !within(name, "bench") {
				t.Errorf("%s imports %s: only cmd may import bench", name, dep)
			}
			if dep == "dataplane" && !slices.ContainsFunc(composers, func(c string) bool { return within(name, c) }) {
				t.Errorf("%s imports dataplane: only %v compose the switch", name, composers)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("go list saw %d packages; the test is not looking at the module", seen)
	}
}
