package config

import (
	"os"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/marking"
)

// FuzzParse checks that Parse never panics and that every error it
// returns is an *Error with a message; a config it accepts must build a
// dataplane.Config. Minimizing a large new input is slow on a busy host:
// run it with -fuzzminimizetime 10x.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(examplePath); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"ports: [{name: p1}, {name: p2, rate: 5Tbit}]",
		"ports: [{name: p, rate: 1Gbit, markers: {enqueue: [{scheme: dctcp, k: {lambda: 1, rtt: 100us}}]}}]",
		"port_defaults: {buffer: {cap: 1KB}}\nports: [{name: a, buffer: {alpha: 2}}]",
		"ports: [{name: p, delay: {per_dscp_class: {1: {fixed: 1us}}}}]\nclassifier: {dscp: {8: 3}}",
		"ports: &a [{name: p}]\nport_defaults: *a",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			es := errorsOf(err)
			if len(es) == 0 {
				t.Fatalf("error is not an *Error: %v", err)
			}
			for _, e := range es {
				if e.Msg == "" {
					t.Fatalf("empty message in %v", err)
				}
			}
			return
		}
		if _, err := c.Dataplane(); err != nil {
			t.Fatalf("accepted config does not build: %v", err)
		}
	})
}

// FuzzUnits checks that the unit parsers never panic, never return a
// negative quantity, and that a size or rate they accept survives being
// formatted and parsed again (testbed up and the summaries write them with
// FormatSize and FormatRate).
func FuzzUnits(f *testing.F) {
	for _, s := range []string{
		"0", "1500", "96KB", "64KiB", "2MB", " 1.5 KB ", "995Mbit", "2.5Gbit", "10Gbps", "25Gbit/s", "123456789bit",
		"100us", "1.5ms", "70µs", "2s", "20pkt", "10 x 1500B", "C*RTT(100us)", "0.17 × C × RTT(100us)", "150us", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil {
			if n < 0 {
				t.Fatalf("ParseSize(%q) = %d", s, n)
			}
			if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
				t.Fatalf("ParseSize(%q) = %d, formatted %q, parsed again %d, %v", s, n, FormatSize(n), back, err)
			}
		}
		if r, err := ParseRate(s); err == nil {
			if r < 0 {
				t.Fatalf("ParseRate(%q) = %d", s, r)
			}
			// FormatRate goes through a float64, exact below 2^53 bit/s:
			// far above any port's rate.
			if back, err := ParseRate(FormatRate(r)); r < 1<<53 && (err != nil || back != r) {
				t.Fatalf("ParseRate(%q) = %d, formatted %q, parsed again %d, %v", s, r, FormatRate(r), back, err)
			}
		}
		if d, err := ParseDuration(s); err == nil && d < 0 && !strings.Contains(s, "-") {
			t.Fatalf("ParseDuration(%q) = %v without a minus sign", s, d)
		}
		if th, err := ParseThreshold(s); err != nil && th != (marking.Threshold{}) {
			t.Fatalf("ParseThreshold(%q) failed with a threshold %+v", s, th)
		}
	})
}
