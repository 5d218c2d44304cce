package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// trimPort is a port whose queue 7 is strict with a reserve, and DSCP 46
// classified into it: a trim queue as it should be.
const trimPort = `
classifier: {dscp: {46: 7}}
ports:
  - name: p1
    scheduler: {queues: {7: {strict: true}}}
    buffer: {queues: {7: {reserve: 10KB}}}
`

// TestTrimKeys: a trim section becomes the port's dataplane.Trim, the
// switch builds, and a trim queue as it should be draws no warning.
func TestTrimKeys(t *testing.T) {
	c := mustParse(t, trimPort+"    trim: {bytes: 128, queue: 7, dscp: 46, queues: [0, 1]}\n")
	want := dataplane.Trim{Size: 128, Queue: 7, DSCP: 46, Queues: []int{0, 1}}
	if got := c.Switch.Ports[0].Trim; got == nil || got.Size != want.Size || got.Queue != want.Queue || got.DSCP != want.DSCP || !slices.Equal(got.Queues, want.Queues) {
		t.Errorf("trim = %+v, want %+v", got, want)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q, want none", c.Warnings)
	}
	build(t, c)
	c = mustParse(t, trimPort+"    trim: {queue: 7, dscp: 46}\n")
	if got := c.Switch.Ports[0].Trim; got == nil || got.Size != 0 || got.Queues != nil {
		t.Errorf("trim = %+v, want the default size and queues", got)
	}
	// port_defaults' trim reaches every port; a port without it trims nothing.
	c = mustParse(t, "port_defaults: {trim: {queue: 1, dscp: 5}}\nports: [{name: a}, {name: b}]\n")
	for i, p := range c.Switch.Ports {
		if p.Trim == nil || p.Trim.Queue != 1 || p.Trim.DSCP != 5 {
			t.Errorf("ports[%d].trim = %+v, want port_defaults'", i, p.Trim)
		}
	}
	if c := mustParse(t, "ports: [{name: a}]\n"); c.Switch.Ports[0].Trim != nil {
		t.Errorf("a port without trim: %+v", c.Switch.Ports[0].Trim)
	}
}

// TestTrimErrors: the combinations that cannot work are errors at their
// key.
func TestTrimErrors(t *testing.T) {
	for _, tc := range []struct {
		name, trim, key, msg string
	}{
		{"no queue", "{dscp: 46}", "ports[0].trim.queue", "missing"},
		{"no dscp", "{queue: 7}", "ports[0].trim.dscp", "missing"},
		{"queue out of range", "{queue: 8, dscp: 46}", "ports[0].trim.queue", "8 outside [0, 7]"},
		{"dscp out of range", "{queue: 7, dscp: 64}", "ports[0].trim.dscp", "64 outside [0, 63]"},
		{"bytes too small", "{bytes: 20, queue: 7, dscp: 46}", "ports[0].trim.bytes", `"20" outside [60, 64KiB]`},
		{"bytes not below the mtu", "{bytes: 1514, queue: 7, dscp: 46}", "ports[0].trim.bytes", "not below the port's mtu 1514: no frame is longer"},
		{"trim queue eligible", "{queue: 7, dscp: 46, queues: [0, 7]}", "ports[0].trim.queues[1]", "7 is trim.queue"},
		{"eligible twice", "{queue: 7, dscp: 46, queues: [1, 1]}", "ports[0].trim.queues[1]", "listed twice"},
		{"eligible out of range", "{queue: 7, dscp: 46, queues: [9]}", "ports[0].trim.queues[0]", "9 outside [0, 7]"},
		{"no eligible queue", "{queue: 7, dscp: 46, queues: []}", "ports[0].trim.queues", "empty"},
		{"unknown key", "{queue: 7, dscp: 46, size: 100}", "ports[0].trim.size", "unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(trimPort + "    trim: " + tc.trim + "\n"))
			es := errorsOf(err)
			if len(es) != 1 || es[0].Key != tc.key || !strings.Contains(es[0].Msg, tc.msg) || es[0].Line == 0 && tc.msg != "missing" {
				t.Errorf("errors:\n%v\nwant one at %s (with its line) saying %q", err, tc.key, tc.msg)
			}
		})
	}
	for _, tc := range []struct {
		name, yaml, key, msg string
	}{
		{"one queue", "ports: [{name: p1, queues: 1, trim: {queue: 0, dscp: 46}}]", "ports[0].trim.queue", "the port's only queue"},
		{"no room", "ports: [{name: p1, queues: 2, buffer: {queues: {1: {cap: 100}}}, trim: {queue: 1, dscp: 46}}]",
			"ports[0].trim.queue", "cannot hold one 106-byte trimmed packet; raise ports[0].buffer.queues.1.cap"},
		{"in port_defaults", "port_defaults: {trim: {queue: 9, dscp: 1}}\nports: [{name: a}, {name: b}]", "port_defaults.trim.queue", "9 outside [0, 7]"},
		{"on a dualq port", "ports: [{name: p1, scheduler: {kind: dualq}, trim: {queue: 1, dscp: 46}}]", "ports[0].trim", "set on a port of scheduler kind dualq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml + "\n"))
			es := errorsOf(err)
			if len(es) != 1 || es[0].Key != tc.key || !strings.Contains(es[0].Msg, tc.msg) {
				t.Errorf("errors:\n%v\nwant one at %s saying %q", err, tc.key, tc.msg)
			}
		})
	}
}

// TestTrimWarnings: a trim that works but likely not as meant draws a
// warning naming the key: a trim queue that is not strict, one without a
// reserve, a trim DSCP classified into another queue.
func TestTrimWarnings(t *testing.T) {
	c := mustParse(t, "ports: [{name: p1, trim: {queue: 7, dscp: 5}}]\n")
	want := []string{
		"ports[0].trim.queue: queue 7 is not strict priority",
		"ports[0].trim.queue: queue 7 has no buffer reserve",
		"ports[0].trim.dscp: DSCP 5 is classified to queue 0, not trim.queue 7",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(c.Warnings, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) || !strings.Contains(c.Warnings[i], "(line 1)") {
			t.Errorf("warning %q, want %q… (line 1)", c.Warnings[i], w)
		}
	}
	// SP makes every queue strict; the warning goes.
	c = mustParse(t, "classifier: {dscp: {5: 7}}\nports: [{name: p1, scheduler: {kind: sp}, buffer: {queues: {7: {reserve: 2KB}}}, trim: {queue: 7, dscp: 5}}]\n")
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q, want none", c.Warnings)
	}
	// From port_defaults, one warning for all ports.
	c = mustParse(t, "classifier: {dscp: {5: 7}}\nport_defaults: {buffer: {queues: {7: {reserve: 2KB}}}, trim: {queue: 7, dscp: 5}}\nports: [{name: a}, {name: b}]\n")
	if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], "port_defaults.trim.queue: queue 7 is not strict") {
		t.Errorf("warnings %q, want one at port_defaults.trim.queue", c.Warnings)
	}
}
