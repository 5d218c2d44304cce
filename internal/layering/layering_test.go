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

// The floors of the house, bottom up (DESIGN.md, docs/architecture.md):
//
//	cmd → experiment → node → {config, telemetry, capture, bench, demo, closedloop, doctor} → {dataplane, loadgen} → leaves → packet
//
// A package may import packages of lower floors only, except the
// same-floor edges in sideways. testbed/dctcp and testbed/ect1, leaves
// that testbed imports, sit on the ground floor. A package's sub-packages
// (dataplane/dataplanetest, testbed/bulk, …) live on its floor unless
// listed, and may import their parent. internal/* leaves import nothing of
// ours and may be imported from every floor.
//
// loadgen, the load generator, stands beside dataplane: neither imports
// the other, and bench, which compares devices, drives both. The
// closed-loop simulator drives dataplane in virtual time, beside bench.
var floors = [][]string{
	{"packet", "testbed/dctcp", "testbed/ect1"},
	{"timestamp", "buffer", "scheduler", "marking", "ports", "testbed", "packet/packettest"},
	{"ports/memport", "ports/afxdp", "loadgen/xdpgen", "loadgen/xdpsink", "transport"},
	{"dataplane", "loadgen"},
	{"config", "telemetry", "capture", "bench", "demo", "closedloop", "doctor"},
	{"node"},
	{"experiment"},
	{"cmd"},
}

// sideways are the same-floor imports DESIGN.md allows: config reads the
// specs of what it configures besides the dataplane.
var sideways = map[string][]string{
	"config": {"capture", "telemetry"},
}

// forbidden are imports the floors would allow but DESIGN.md does not:
// cmd reaches the switch only through node and config, never the
// dataplane directly.
var forbidden = map[string][]string{
	"cmd": {"dataplane"},
}

// leaves list exactly what the packages below dataplane, and the load
// generator beside it, may import, as DESIGN.md's table does.
var leaves = map[string][]string{
	"packet":        {},
	"packet/intmd":  {"packet"}, // INT-MD's headers and records, for the switch, the capture and the endpoints
	"timestamp":     {"packet"},
	"buffer":        {"packet"},
	"scheduler":     {"packet"},
	"marking":       {"packet"},
	"ports":         {"packet"},
	"ports/memport": {"packet", "ports"},
	"ports/afxdp":   {"packet", "ports", "timestamp"},           // a NIC's hardware clock (PHC)
	"transport":     {"timestamp"},                              // DX's queueing delay
	"transport/udp": {"timestamp", "transport", "packet/intmd"}, // the endpoints: DX's stamps, the window laws, HPCC's INT
	"testbed":       {"packet", "testbed/dctcp", "testbed/ect1"},
	"testbed/dctcp": {},
	"testbed/ect1":  {},
	"dataplane":     {"packet", "packet/intmd", "timestamp", "buffer", "scheduler", "marking", "ports"},

	// The generators and sinks run over any ports.Port, AF_XDP ones in a
	// namespace, and load their own XDP programs.
	"loadgen":         {"packet", "timestamp", "ports", "ports/afxdp", "loadgen/xdpgen", "loadgen/xdpsink"},
	"loadgen/xdpgen":  {},
	"loadgen/xdpsink": {},
}

// within reports whether pkg is root or lies below it.
func within(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// floor returns the floor of pkg and the package that gives it that floor:
// the longest listed package pkg lies within.
func floor(pkg string) (int, string) {
	best, at := "", -1
	for i, f := range floors {
		for _, p := range f {
			if within(pkg, p) && len(p) > len(best) {
				best, at = p, i
			}
		}
	}
	return at, best
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportDirection(t *testing.T) {
	// -pgo=off: each package once, not again as "pkg [main]" for every
	// main package that builds it with its profile (cmd/ecnswitch/default.pgo).
	out, err := exec.Command("go", "list", "-pgo=off", "-json", module+"...").Output()
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
			if err := check(name, strings.TrimPrefix(imp, module)); err != "" {
				t.Error(err)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("go list saw %d packages; the test is not looking at the module", seen)
	}
}

// check returns why name may not import dep, or "".
func check(name, dep string) string {
	if within(dep, "internal") {
		if within(name, "internal") && !strings.HasSuffix(name, "test") {
			return name + " imports " + dep + ": internal leaves import nothing of ours"
		}
		return ""
	}
	if ok, listed := leaves[name]; listed && !slices.Contains(ok, dep) {
		return name + " imports " + dep + "; DESIGN.md allows only " + strings.Join(ok, ", ")
	}
	for root, deps := range forbidden {
		for _, d := range deps {
			if within(name, root) && within(dep, d) {
				return name + " imports " + dep + ": DESIGN.md keeps " + root + " off " + d + " (re-export what it needs through node)"
			}
		}
	}
	nf, nroot := floor(name)
	df, droot := floor(dep)
	switch {
	case nf < 0:
		return name + " is on no floor: add it to floors in internal/layering"
	case df < 0:
		return dep + " is on no floor: add it to floors in internal/layering"
	case nroot == droot && within(name, dep):
		return "" // a sub-package uses its parent
	case df < nf:
		return ""
	case df == nf && slices.Contains(sideways[nroot], droot):
		return ""
	}
	return name + " imports " + dep + ": " + droot + " is not below " + nroot + " (cmd → experiment → node → config, telemetry, capture, bench, demo, closedloop → dataplane, loadgen → …)"
}

// The rule itself: the edges DESIGN.md draws pass, the ones it forbids
// fail.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, dep string
		ok        bool
	}{
		{"cmd/ecnswitch", "node", true},
		{"node", "config", true},
		{"node", "demo", true},
		{"node", "ports/afxdp", true},
		{"config", "dataplane", true},
		{"config", "capture", true},
		{"demo", "testbed/bulk", true},
		{"bench", "loadgen", true},
		{"bench", "loadgen/xdpgen", true},
		{"loadgen", "ports/afxdp", true},
		{"loadgen", "loadgen/xdpsink", true},
		{"loadgen", "dataplane", false},
		{"loadgen", "testbed", false},
		{"loadgen", "bench", false},
		{"dataplane", "loadgen", false},
		{"loadgen/xdpsink", "packet", false},
		{"closedloop", "dataplane", true},
		{"closedloop", "ports/memport", true},
		{"closedloop", "bench", false},
		{"bench", "closedloop", false},
		{"experiment", "closedloop", true},
		{"closedloop", "experiment", false},
		{"dataplane/dataplanetest", "ports/memport", true},
		{"dataplane", "marking", true},
		{"packet/intmd", "packet", true},
		{"transport/udp", "packet/intmd", true},
		{"packet/intmd", "timestamp", false},
		{"config", "node", false},
		{"demo", "node", false},
		{"experiment", "node", true},
		{"experiment", "demo", true},
		{"node", "experiment", false},
		{"demo", "experiment", false},
		{"bench", "config", false},
		{"capture", "config", false},
		{"telemetry", "capture", false},
		{"dataplane", "config", false},
		{"dataplane", "ports/afxdp", false},
		{"marking", "buffer", false},
		{"node", "cmd/ecnswitch", false},
		{"cmd/ecnswitch", "dataplane", false},
		{"cmd/ecnswitch", "dataplane/dataplanetest", false},
		{"cmd/ecnswitch", "config", true},
		{"internal/spsc", "packet", false},
		{"ports/memport", "internal/spsc", true},
		{"testbed", "testbed/dctcp", true},
		{"testbed/dctcp", "testbed", false},
		{"testbed/dctcp", "packet", false},
		{"testbed", "testbed/ect1", true},
		{"testbed/ect1", "testbed", false},
	} {
		if got := check(c.name, c.dep) == ""; got != c.ok {
			t.Errorf("%s → %s allowed = %v, want %v (%s)", c.name, c.dep, got, c.ok, check(c.name, c.dep))
		}
	}
}
