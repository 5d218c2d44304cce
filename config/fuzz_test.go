package config

import (
	"os"
	"testing"
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
