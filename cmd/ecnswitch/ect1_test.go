package main

import (
	"slices"
	"strings"
	"testing"
)

func TestTestbedECT1Ports(t *testing.T) {
	for _, s := range []string{"x", "5201,", "65536", "-1"} {
		code, out, errs := cli(t, "testbed", "up", "-n", "1", "--ect1-ports", s)
		if code != exitUsage || !strings.Contains(errs, "--ect1-ports") || !strings.Contains(errs, "want 0..65535") {
			t.Errorf("--ect1-ports %q: exit %d, want %d and an error naming the flag and the range:\n%s%s", s, code, exitUsage, out, errs)
		}
	}
	ps, err := parsePorts("5201, 0,9331")
	if err != nil || !slices.Equal(ps, []uint16{5201, 0, 9331}) {
		t.Errorf("parsePorts: %v, %v", ps, err)
	}
	if got := formatPorts(ps); got != "5201,all,9331" {
		t.Errorf("formatPorts(%v) = %q", ps, got)
	}
}
