package config

import (
	"strings"
	"testing"
)

// A port's int section lands in the port's dataplane.INT, and the switch
// builds with it; port_defaults gives it to every port.
func TestINTConfig(t *testing.T) {
	c := mustParse(t, `
ports:
  - {name: a, rate: 1Gbit}
  - {name: b, rate: 1Gbit, int: {port: 4790, dscp: 26, node_id: 7}}
  - {name: c, rate: 1Gbit, int: {dscp: 0}}
`)
	if in := c.Switch.Ports[0].INT; in != nil {
		t.Errorf("port a: INT %+v, want none", in)
	}
	if in := c.Switch.Ports[1].INT; in == nil || in.Port != 4790 || in.DSCP == nil || *in.DSCP != 26 || in.NodeID != 7 {
		t.Errorf("port b: INT %+v", in)
	}
	if in := c.Switch.Ports[2].INT; in == nil || in.Port != 0 || in.DSCP == nil || *in.DSCP != 0 {
		t.Errorf("port c: INT %+v, want DSCP 0 alone", in)
	}
	if st := build(t, c).Stats(); st.Ports[1].INT == nil || st.Ports[1].INT.Limit != 1514 || st.Ports[0].INT != nil {
		t.Errorf("built switch's INT stats: %+v, %+v", st.Ports[0].INT, st.Ports[1].INT)
	}
	d := mustParse(t, "port_defaults: {rate: 1Gbit, int: {port: 9}}\nports: [{name: a}, {name: b}]\n")
	for i, p := range d.Switch.Ports {
		if p.INT == nil || p.INT.Port != 9 {
			t.Errorf("port_defaults: port %d's INT %+v", i, p.INT)
		}
	}
}

// What an int section cannot be: each error names its key.
func TestINTConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, key, msg string }{
		{"nothing says which packets", "ports: [{name: p1, rate: 1Gbit, int: {node_id: 3}}]", "ports[0].int", "neither port nor dscp"},
		{"port 0", "ports: [{name: p1, rate: 1Gbit, int: {port: 0}}]", "ports[0].int.port", "0 outside [1, 65535]"},
		{"port too big", "ports: [{name: p1, rate: 1Gbit, int: {port: 70000}}]", "ports[0].int.port", "70000 outside [1, 65535]"},
		{"dscp", "ports: [{name: p1, rate: 1Gbit, int: {dscp: 64}}]", "ports[0].int.dscp", "64 outside [0, 63]"},
		{"unshaped", "ports: [{name: p1, int: {port: 4790}}]", "ports[0].int", "unshaped port"},
		{"unshaped through port_defaults", "port_defaults: {int: {port: 4790}}\nports: [{name: p1}]", "port_defaults.int", "unshaped port"},
		{"unknown key", "ports: [{name: p1, rate: 1Gbit, int: {port: 1, hops: 5}}]", "ports[0].int.hops", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			for _, e := range errorsOf(err) {
				if e.Key == tc.key && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("want key %q with %q; got %v", tc.key, tc.msg, err)
		})
	}
}

// A running switch's INT cannot change: Changes refuses, naming the key.
func TestINTChangeRefused(t *testing.T) {
	c := mustParse(t, "ports: [{name: a, rate: 1Gbit}]")
	next := mustParse(t, "ports: [{name: a, rate: 1Gbit, int: {port: 4790}}]")
	if _, err := c.Changes(next); err == nil || !strings.Contains(err.Error(), "ports[0].int: off → port 4790, node 0: cannot change while the switch runs") {
		t.Errorf("Changes = %v", err)
	}
	if ch, err := next.Changes(mustParse(t, "ports: [{name: a, rate: 2Gbit, int: {port: 4790}}]")); err != nil || len(ch) != 1 {
		t.Errorf("a new rate with INT on: %v, %v; want one change", ch, err)
	}
}

// INT's DSCP may not be the one that marks trimmed packets: every trimmed
// header would then be looked into as an INT packet.
func TestINTDSCPIsNotTrimDSCP(t *testing.T) {
	src := `ports:
  - name: a
    rate: 1Gbit
    queues: 2
    scheduler: {queues: {1: {strict: true}}}
    trim: {queue: 1, dscp: 46}
    int: {dscp: 46}
  - name: b
`
	_, err := Parse([]byte(src))
	if err == nil || !strings.Contains(err.Error(), "ports[0].int.dscp") {
		t.Fatalf("INT and trimming on DSCP 46: %v; want an error at ports[0].int.dscp", err)
	}
	if _, err := Parse([]byte(strings.Replace(src, "int: {dscp: 46}", "int: {dscp: 26}", 1))); err != nil {
		t.Fatalf("INT on DSCP 26, trimming on 46: %v", err)
	}
}
