package main

import (
	"strings"
	"testing"
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
