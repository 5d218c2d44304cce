package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/loadgen"
)

func TestBenchSinkFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "sink", "--mode", "socket", "--iface", "x"}, `--mode "socket": want auto, xdp or afxdp`},
		{[]string{"bench", "sink", "--mode", "xdp"}, "--iface is required"},
		{[]string{"bench", "sink", "--run", "70000", "--iface", "x"}, "--run 70000"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, exitUsage, c.want, errs)
		}
	}
	if code, out, _ := cli(t, "bench", "sink", "-h"); code != exitOK || !strings.Contains(out, "--sample") || !strings.Contains(out, "counts in an XDP program") {
		t.Errorf("bench sink -h: exit %d\n%s", code, out)
	}
}

func TestBenchCacheLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "cacheline", "--cpus", "1"}, `--cpus "1": want two CPUs`},
		{[]string{"bench", "cacheline", "--rounds", "0"}, "--rounds must be positive"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, exitUsage, c.want, errs)
		}
	}
	code, out, errs := cli(t, "bench", "cacheline", "--rounds", "1000")
	switch {
	case code == exitOK && !strings.Contains(out, "CPU 0 <-> 1: "):
		t.Errorf("bench cacheline: %q, want a line with \"CPU 0 <-> 1: \"", out)
	case code != exitOK && !strings.Contains(errs, "CPU 1 is not one this process may run on"): // a machine with one CPU
		t.Errorf("bench cacheline: exit %d\n%s", code, errs)
	}
}

// bench gen --json and bench sink --json record the build and the machine
// beside the counters, which keep their names.
func TestBenchJSONRecordsBuild(t *testing.T) {
	dir := t.TempDir()
	i := buildinfo.Info{Version: "v1.2.0", Kernel: "6.18.4", CPU: "AMD EPYC"}
	gen, sink := filepath.Join(dir, "gen.json"), filepath.Join(dir, "sink.json")
	if err := writeJSON(gen, genJSON{i, loadgen.GeneratorStats{Sent: 7}}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(sink, sinkJSON{i, loadgen.Report{Received: 5, Mode: "xdp"}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{gen: `"sent": 7`, sink: `"received": 5`} {
		var m map[string]any
		b, _ := os.ReadFile(path)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		build, _ := m["build"].(map[string]any)
		if build["kernel"] != "6.18.4" || build["cpu"] != "AMD EPYC" || !strings.Contains(string(b), want) {
			t.Errorf("%s:\n%s", path, b)
		}
	}
}

// The flags of a device under test between two interfaces: each misuse
// is a usage error that names the flag; interfaces that do not exist
// fail the run (exit 1), naming the flag and the interface.
func TestBenchExternalFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "switch", "--gen-iface", "a"}, "--gen-iface and --sink-iface go together"},
		{[]string{"bench", "switch", "--sink-iface", "b"}, "--gen-iface and --sink-iface go together"},
		{[]string{"bench", "switch", "--dst-mac", "02:00:00:00:00:01"}, "--dst-mac is for an external device"},
		{[]string{"bench", "switch", "--no-learn"}, "--no-learn is for an external device"},
		{[]string{"bench", "switch", "--gen-iface", "a", "--sink-iface", "b", "--devices", "bridge"}, "--devices: an external device"},
		{[]string{"bench", "switch", "--gen-iface", "a", "--sink-iface", "b", "--tx-clock", "hw"}, `--tx-clock, --rx-clock "hw": want monotonic or phc`},
		{[]string{"bench", "switch", "--gen-iface", "a", "--sink-iface", "b", "--dst-mac", "nope"}, "--dst-mac"},
		{[]string{"bench", "switch", "--gen-iface", "a", "--sink-iface", "b", "--src-ip", "nope"}, "--src-ip"},
		{[]string{"bench", "gen", "--gen-iface", "a", "--iface", "a"}, "--iface and --gen-iface name the same thing"},
		{[]string{"bench", "gen", "--sink-iface", "b"}, "--gen-iface is required with --gen-iface or --sink-iface"},
		{[]string{"bench", "gen", "--iface", "a", "--force"}, "--force is for --gen-iface and --sink-iface"},
		{[]string{"bench", "gen", "--iface", "a", "--mode", "xdp", "--tx-clock", "phc"}, "--tx-clock phc needs the AF_XDP generator"},
		{[]string{"bench", "sink", "--iface", "b", "--tx-clock", "phc"}, "--tx-clock phc needs --gen-iface"},
		{[]string{"bench", "sink", "--iface", "b", "--mode", "xdp", "--rx-clock", "phc"}, "--rx-clock phc needs the AF_XDP sink"},
		{[]string{"bench", "sink", "--iface", "b", "--max-clock-offset", "-1us"}, "--max-clock-offset -1µs: want ≥ 0"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, exitUsage, c.want, errs)
		}
	}
	code, _, errs := cli(t, "bench", "switch", "--gen-iface", "ecnx-none-g", "--sink-iface", "ecnx-none-s")
	if code != exitFail || !strings.Contains(errs, "--gen-iface ecnx-none-g") || !strings.Contains(errs, "--sink-iface ecnx-none-s") {
		t.Errorf("interfaces that do not exist: exit %d, want %d naming both:\n%s", code, exitFail, errs)
	}
}
