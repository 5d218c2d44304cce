package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// twoPorts is a running config as `testbed up` writes one: markers from
// port_defaults, a third port with a chain of its own.
const twoPorts = `port_defaults:
  queues: 4
  scheduler: {kind: dwrr}
  rate: 995Mbit
  markers:
    enqueue:
      - scheme: dctcp
        k: 30KB
ports:
  - {name: h1, interface: veth1}
  - {name: h2, interface: veth2}
  - name: h3
    interface: veth3
    markers:
      enqueue: [{scheme: red, k: 40KB}, {scheme: red, name: red2, measure: port, k: 100KB}]
      dequeue: [{scheme: tcn, threshold: 100us}, {scheme: codel, name: cd, target: 500us, interval: 10ms}]
`

func set(t *testing.T, c *Config, port string, queue int, words ...string) (*Config, error) {
	t.Helper()
	as, err := ParseAssignments(words)
	if err != nil {
		t.Fatalf("%v: %v", words, err)
	}
	return c.Set(port, queue, as)
}

func TestParseAssignments(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  []Assignment
		err   string
	}{
		{[]string{"k=60KB"}, []Assignment{{"k", "60KB"}}, ""},
		{[]string{"red.kmin=20KB", "k="}, []Assignment{{"red.kmin", "20KB"}, {"k", ""}}, ""},
		{[]string{"markers.enqueue=[{scheme: red, k: 60KB}]"}, []Assignment{{"markers.enqueue", "[{scheme: red, k: 60KB}]"}}, ""},
		{[]string{"rate=1Gbit", "x=a=b"}, []Assignment{{"rate", "1Gbit"}, {"x", "a=b"}}, ""},
		{nil, nil, "nothing to set"},
		{[]string{"k"}, nil, `"k": want KEY=VALUE`},
		{[]string{"=60KB"}, nil, `"" is not a key`},
		{[]string{"a..b=1"}, nil, `"a..b" is not a key`},
		{[]string{"k=1", "k=2"}, nil, "k given twice"},
	} {
		got, err := ParseAssignments(tc.words)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.words, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.words, got, err, tc.want)
		}
	}
}

// A marker's parameter set on one port changes that port's marker only,
// even where every port's comes from port_defaults; the change is that
// port's chain, and the running document records it.
func TestSetMarkerParameter(t *testing.T) {
	c := mustParse(t, twoPorts)
	next, err := set(t, c, "h2", NoQueue, "k=60KB")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Changes(next)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || ch[0].String() != "ports[1].markers.enqueue: dctcp k=30KB → dctcp k=60KB" {
		t.Fatalf("changes %v", ch)
	}
	st := next.Settings()
	if st[0].Markers[0].Params["k"] != "30KB" || st[1].Markers[0].Params["k"] != "60KB" {
		t.Errorf("settings %+v, %+v", st[0].Markers, st[1].Markers)
	}
	// The document Set wrote parses to the same config: a later set, or a
	// restart from it, starts from the changed values.
	again := mustParse(t, string(next.YAML()))
	if ch, err := next.Changes(again); err != nil || len(ch) != 0 {
		t.Errorf("the written document differs from the config it made: %v %v", ch, err)
	}
	if c.Settings()[1].Markers[0].Params["k"] != "30KB" {
		t.Error("Set changed the config it was called on")
	}

	// By name, and several at once; an empty value removes a key.
	next, err = set(t, c, "h3", NoQueue, "cd.target=1ms", "tcn.threshold=200us", "red.k=", "red.kmin=20KB", "red.kmax=60KB")
	if err != nil {
		t.Fatal(err)
	}
	ch, err = c.Changes(next)
	if err != nil || len(ch) != 2 {
		t.Fatalf("changes %v %v", ch, err)
	}
	if ch[0].New != "red kmin=20KB kmax=60KB, red2 (red) measure=port k=100KB" || ch[1].New != "tcn threshold=200us, cd (codel) target=1ms interval=10ms" {
		t.Errorf("changes %q, %q", ch[0].New, ch[1].New)
	}
}

// Every error names the key as the file writes it and what is allowed,
// and nothing of a line in a document no one wrote.
func TestSetErrors(t *testing.T) {
	c := mustParse(t, twoPorts)
	for _, tc := range []struct {
		port  string
		queue int
		words []string
		want  string
	}{
		{"h2", NoQueue, []string{"k=banana"}, `ports[1].markers.enqueue[0].k: "banana" is not a threshold`},
		{"h2", NoQueue, []string{"k=-5KB"}, `ports[1].markers.enqueue[0].k: "-5KB"`},
		{"h2", NoQueue, []string{"rate=5Tbit"}, `ports[1].rate: "5Tbit" outside [1Mbit, 400Gbit] (or 0 for unshaped)`},
		{"h3", NoQueue, []string{"red.k=60KB", "red.kmin=20KB"}, "k set with kmin/kmax"},
		{"h2", NoQueue, []string{"weight=3"}, "weight: neither a key of port h2 nor a parameter of its markers (dctcp); a queue's weight is set with queue Q weight=…"},
		{"h2", NoQueue, []string{"alpha=3"}, "every queue's with buffer.alpha=…"},
		{"h3", NoQueue, []string{"bogus.k=1"}, "port h3 has no marker called bogus; its markers are red, red2, tcn, cd"},
		{"h3", NoQueue, []string{"k=1KB"}, "k: markers red, red2 have k; say which: red.k=…, red2.k=…"},
		{"h9", NoQueue, []string{"k=1KB"}, `port "h9": no such port; ports are h1, h2, h3`},
		{"h2", 4, []string{"weight=2"}, "queue 4 outside [0, 3] (port h2 has 4 queues)"},
		{"h2", 1, []string{"k=60KB"}, "k: not a key of a queue; a queue takes alpha, cap, quantum, reserve, strict, weight"},
		{"h2", 1, []string{"weight=0"}, "ports[1].scheduler.queues.1.weight: 0 outside [1, "},
		{"h2", 1, []string{"alpha=0"}, "ports[1].buffer.queues.1.alpha: 0 outside (0, "},
		{"h2", 1, []string{"quantum=100"}, "ports[1].scheduler.queues.1.quantum: \"100\" outside [1538,"},
		{"h2", NoQueue, []string{"markers.enqueue=[{scheme: tcn, threshold: 50us}]"}, `"tcn" decides on the sojourn time, known only at dequeue; move it to markers.dequeue`},
		{"h2", NoQueue, []string{"markers.enqueue=[{scheme: red, k: 60KB}]", "k=1KB"}, "set with a new chain"},
		{"h2", NoQueue, []string{"k=1KB", "markers.enqueue=[]"}, "replaces a chain whose parameters this set also changes"},
		{"h2", NoQueue, []string{"rate=[unclosed"}, `rate: "[unclosed" is not a YAML value`},
		{"h2", NoQueue, []string{"scheduler.kind=fifo"}, `ports[1].scheduler.kind: "fifo" is not one of sp, wrr, dwrr, wfq`},
	} {
		_, err := set(t, c, tc.port, tc.queue, tc.words...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set port %s queue %d %v: %v\nwant %q", tc.port, tc.queue, tc.words, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "(line ") {
			t.Errorf("set port %s %v: %v names a line", tc.port, tc.words, err)
		}
	}
}

// call is one call a recorder got.
type call struct {
	what  string
	port  int
	queue int
	v     string
}

// recorder is a Target that records its calls, and builds each marker
// chain as the dataplane would.
type recorder struct{ calls []call }

func (r *recorder) SetMarkers(_ context.Context, port int, stage marking.Stage, specs []dataplane.MarkerSpec) error {
	var names []string
	for _, s := range specs {
		if _, err := s.New(4); err != nil {
			return err
		}
		names = append(names, s.Name)
	}
	r.calls = append(r.calls, call{"markers." + stage.String(), port, -1, strings.Join(names, ",")})
	return nil
}

func (r *recorder) SetQueue(_ context.Context, port, queue int, c scheduler.QueueConfig) error {
	r.calls = append(r.calls, call{"queue", port, queue, fmt.Sprint(c.Weight, c.Quantum, c.Strict)})
	return nil
}

func (r *recorder) SetShaper(_ context.Context, port int, rate, bucket int64) error {
	r.calls = append(r.calls, call{"shaper", port, -1, fmt.Sprint(rate, bucket)})
	return nil
}

func (r *recorder) SetAlpha(_ context.Context, port, queue int, alpha float64) error {
	r.calls = append(r.calls, call{"alpha", port, queue, fmt.Sprint(alpha)})
	return nil
}

// Each kind of change reaches the switch as the one call that makes it,
// with the values the config resolved.
func TestChangesApply(t *testing.T) {
	c := mustParse(t, twoPorts)
	for _, tc := range []struct {
		port  string
		queue int
		words []string
		want  []call
	}{
		{"h1", NoQueue, []string{"dctcp.k=20pkt"}, []call{{"markers.enqueue", 0, -1, "dctcp"}}},
		{"h3", NoQueue, []string{"markers.dequeue=[{scheme: codel, target: 1ms, interval: 20ms}]"}, []call{{"markers.dequeue", 2, -1, "codel"}}},
		{"h3", NoQueue, []string{"markers.dequeue=[]"}, []call{{"markers.dequeue", 2, -1, ""}}},
		{"h2", NoQueue, []string{"bucket=3KB"}, []call{{"shaper", 1, -1, "995000000 3000"}}},
		{"h2", 2, []string{"weight=4"}, []call{{"queue", 1, 2, "4 0 false"}}},
		{"h2", 2, []string{"quantum=3000"}, []call{{"queue", 1, 2, "1 3000 false"}}},
		{"h2", 2, []string{"alpha=0.5"}, []call{{"alpha", 1, 2, "0.5"}}},
		{"h2", NoQueue, []string{"buffer.alpha=2"}, []call{{"alpha", 1, 0, "2"}, {"alpha", 1, 1, "2"}, {"alpha", 1, 2, "2"}, {"alpha", 1, 3, "2"}}},
		// A new rate: the shaper, and the markers that know C (RED's
		// packet-time arithmetic); TCN's and CoDel's thresholds are
		// sojourn times, which C does not change.
		{"h3", NoQueue, []string{"rate=500Mbit"}, []call{{"shaper", 2, -1, "500000000 2500"}, {"markers.enqueue", 2, -1, "red,red2"}}},
		// The same values written otherwise: nothing to do.
		{"h2", NoQueue, []string{"k=30000"}, []call{{"markers.enqueue", 1, -1, "dctcp"}}},
		{"h2", NoQueue, []string{"rate=0.995Gbit"}, nil},
	} {
		next, err := set(t, c, tc.port, tc.queue, tc.words...)
		if err != nil {
			t.Errorf("%v: %v", tc.words, err)
			continue
		}
		ch, err := c.Changes(next)
		if err != nil {
			t.Errorf("%v: %v", tc.words, err)
			continue
		}
		var r recorder
		for _, x := range ch {
			if err := x.Apply(context.Background(), &r); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(r.calls, tc.want) {
			t.Errorf("set port %s queue %d %v: %v\nwant %v", tc.port, tc.queue, tc.words, r.calls, tc.want)
		}
	}
}

// What the switch fixes when it starts is refused, naming the key, and
// nothing is to be applied.
func TestChangesRefused(t *testing.T) {
	c := mustParse(t, twoPorts)
	for _, tc := range []struct {
		port  string
		queue int
		words []string
		want  string
	}{
		{"h2", NoQueue, []string{"queues=2"}, "ports[1].queues: 4 → 2: cannot change while the switch runs; restart it to apply"},
		{"h2", NoQueue, []string{"scheduler.kind=wfq"}, "ports[1].scheduler.kind: dwrr → wfq: cannot change"},
		{"h2", NoQueue, []string{"mtu=1600"}, "ports[1].mtu: 1514 → 1600"},
		{"h2", 1, []string{"strict=true"}, "ports[1].scheduler.queues.1.strict: false → true: a running port's queue cannot move between the strict and the weighted level"},
		{"h2", 1, []string{"cap=10KB"}, "ports[1].buffer.queues.1.cap: none → 10KB"},
		{"h2", 1, []string{"reserve=3KB"}, "ports[1].buffer.queues.1.reserve: 0 → 3KB"},
		{"h2", NoQueue, []string{"interface=veth9"}, "ports[1].interface: veth2 → veth9"},
		{"h2", NoQueue, []string{"delay.fixed=10us"}, "ports[1].delay: changed: cannot change"},
		{"h2", NoQueue, []string{"name=h4"}, "ports: h1, h2, h3 → h1, h4, h3: ports cannot be added, removed, renamed or reordered while the switch runs; restart it; added h4; removed h2"},
	} {
		next, err := set(t, c, tc.port, tc.queue, tc.words...)
		if err != nil {
			t.Errorf("%v: %v", tc.words, err)
			continue
		}
		ch, err := c.Changes(next)
		if err == nil || ch != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set port %s queue %d %v: %v, %v\nwant refused: %q", tc.port, tc.queue, tc.words, ch, err, tc.want)
		}
		var es Errors
		if !errors.As(err, &es) || es[0].Key == "" {
			t.Errorf("%v: %v is not Errors with a key", tc.words, err)
		}
	}

	// A reload: the file's other sections, and ports added.
	for _, tc := range []struct{ file, want string }{
		{"workers: 2\n" + twoPorts, "workers: 1 → 2"},
		{"cpus: [1]\n" + twoPorts, "cpus: [] → [1]"},
		{"telemetry: {listen: '127.0.0.1:9999'}\n" + twoPorts, "telemetry: changed"},
		{twoPorts + "  - {name: h4, interface: veth4}\n", "added h4"},
		{strings.Replace(twoPorts, "  - {name: h1, interface: veth1}\n", "", 1), "removed h1"},
	} {
		_, err := c.Changes(mustParse(t, tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reload: %v, want %q", err, tc.want)
		}
	}
	// ... and one that changes what may change.
	ch, err := c.Changes(mustParse(t, strings.Replace(twoPorts, "k: 30KB", "k: 45KB", 1)))
	if err != nil || len(ch) != 2 || ch[0].Key != "ports[0].markers.enqueue" || ch[1].Key != "ports[1].markers.enqueue" {
		t.Errorf("reload with a new K in port_defaults: %v %v", ch, err)
	}
}

// An edit of a port whose settings are aliases of another's changes that
// port alone.
func TestSetAliases(t *testing.T) {
	c := mustParse(t, `ports:
  - &p {name: a, rate: 1Gbit, scheduler: &s {kind: dwrr, queues: {1: {weight: 2}}}, markers: {enqueue: &m [{scheme: dctcp, k: 30KB}]}}
  - {name: b, rate: 1Gbit, scheduler: *s, markers: {enqueue: *m}}
`)
	next, err := set(t, c, "b", 1, "weight=5")
	if err != nil {
		t.Fatal(err)
	}
	if next, err = set(t, next, "b", NoQueue, "k=60KB"); err != nil {
		t.Fatal(err)
	}
	st := next.Settings()
	if st[0].Queues[1].Weight != 2 || st[1].Queues[1].Weight != 5 || st[0].Markers[0].Params["k"] != "30KB" || st[1].Markers[0].Params["k"] != "60KB" {
		t.Errorf("a: %+v %+v\nb: %+v %+v", st[0].Queues[1], st[0].Markers, st[1].Queues[1], st[1].Markers)
	}
}

// FuzzSet checks that Set never panics, that what it accepts is a
// document Parse accepts too, and that Changes neither panics nor both
// refuses and changes.
func FuzzSet(f *testing.F) {
	for _, s := range []string{"k=60KB", "red.kmin=20KB", "rate=1Gbit", "markers.enqueue=[{scheme: red, k: 60KB}]",
		"scheduler.queues.1.weight=3", "cd.target=", "weight=4", "buffer.alpha=0.5", "name=x", "markers=[]", "scheduler=*x"} {
		f.Add("h3", -1, s)
		f.Add("h2", 1, s)
	}
	c, err := Parse([]byte(twoPorts))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, port string, queue int, word string) {
		a, err := ParseAssignment(word)
		if err != nil {
			return
		}
		next, err := c.Set(port, queue, []Assignment{a})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if _, err := Parse(next.YAML()); err != nil {
			t.Fatalf("Set accepted %q but its document does not parse: %v", word, err)
		}
		if ch, err := c.Changes(next); err != nil && ch != nil {
			t.Fatalf("refused and changed: %v %v", ch, err)
		}
	})
}
