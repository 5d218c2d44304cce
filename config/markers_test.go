package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/marking"
)

// A configured marker is built once by Parse and those members go to the
// first switch; a second switch gets one new build for all its members,
// never a member the first one holds.
func TestMarkerGroupBuildsOnce(t *testing.T) {
	builds := 0
	build := func(stage marking.Stage, q int) ([]marking.Member, error) {
		builds++
		a, _ := marking.NewRED(marking.CutOff(marking.MeasurePort, marking.Bytes(1000)), stage, q)
		b, _ := marking.NewRED(marking.CutOff(marking.MeasurePool, marking.Bytes(2000)), stage, q)
		return []marking.Member{{Name: "a", Marker: a}, {Name: "b", Marker: b}}, nil
	}
	ms, _ := build(marking.Enqueue, 8) // what Parse does
	g := &group{build: build, stage: marking.Enqueue, queues: 8, built: []marking.Marker{ms[0].Marker, ms[1].Marker}}
	specs := g.specs([]string{"a", "b"})

	first := make([]marking.Marker, 2)
	for i, s := range specs {
		m, err := s.New(8)
		if err != nil {
			t.Fatal(err)
		}
		if m != ms[i].Marker {
			t.Fatalf("member %d of the first switch is not the one Parse built", i)
		}
		first[i] = m
	}
	for i, s := range specs {
		m, err := s.New(8)
		if err != nil {
			t.Fatal(err)
		}
		if m == first[i] {
			t.Fatalf("member %d is shared by two switches", i)
		}
	}
	if builds != 2 {
		t.Fatalf("%d builds for Parse and two switches of a two-member marker, want 2", builds)
	}
}

// Parse's markers are the ones the switch gets: the example's first marker
// of p1 comes out of its spec without another build.
func TestParseHandsItsMarkersToTheSwitch(t *testing.T) {
	c, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	spec := c.Ports[0].Markers[0].Specs[0]
	g := c.Switch.Ports[0].Enqueue[0]
	if spec.Name != g.Name {
		t.Fatalf("Ports[0].Markers[0] is %q, Switch.Ports[0].Enqueue[0] is %q", spec.Name, g.Name)
	}
	a, _ := spec.New(c.Switch.Ports[0].Scheduler.NumQueues)
	b, _ := g.New(c.Switch.Ports[0].Scheduler.NumQueues)
	if a == nil || b == nil || a == b {
		t.Fatalf("the spec gave %p then %p: want Parse's marker, then a new one", a, b)
	}
}

// Every example of every registered scheme, written as YAML, parses to
// the markers the scheme builds from the example directly: config
// decodes each unit to the value marking's registry takes, and places
// the marker at the port's rate, queues, seed and pool.
func TestMarkersRoundTrip(t *testing.T) {
	const (
		rate  = 10_000_000_000
		queue = 16_000 // reserve per queue: S_min = 8 × 16 KB
	)
	pool := marking.Pool{Name: "shared", Size: 3_000_000, Reserve: 8 * queue, Alpha: 4, Ports: 1}
	n := 0
	for _, s := range marking.Schemes() {
		for i, ex := range s.Examples {
			var keys []string
			for _, p := range s.Params {
				if v, ok := ex[p.Key]; ok {
					keys = append(keys, p.Key+": "+FormatParam(p, v))
				}
			}
			for _, stage := range []marking.Stage{marking.Enqueue, marking.Dequeue} {
				at := marking.Placement{Stage: stage, Queues: 8, LineRate: rate, Seed: 1<<32 | uint64(stage+1)<<16 | 1, Pool: pool}
				want, err := s.New("", ex, at)
				if err != nil {
					continue // a stage the example cannot sit at
				}
				y := fmt.Sprintf("pools: [{name: shared, size: 3MB}]\nports: [{name: p, rate: 10Gbit, pool: shared, buffer: {alpha: 4, reserve: 16KB},\n  markers: {%v: [{scheme: %s, %s}]}}]\n",
					stage, s.Name, strings.Join(keys, ", "))
				c, err := Parse([]byte(y))
				if err != nil {
					t.Errorf("%s example %d:\n%s%v", s.Name, i, y, err)
					continue
				}
				n++
				specs := c.Ports[0].Markers[0].Specs
				if len(specs) != len(want) {
					t.Fatalf("%s example %d: %d members, want %d", s.Name, i, len(specs), len(want))
				}
				for j, spec := range specs {
					got, err := spec.New(8)
					if err != nil {
						t.Fatal(err)
					}
					if spec.Name != want[j].Name || !reflect.DeepEqual(got, want[j].Marker) {
						t.Errorf("%s example %d at %v:\n%s member %s = %+v\nwant %s = %+v", s.Name, i, stage, y, spec.Name, got, want[j].Name, want[j].Marker)
					}
				}
			}
		}
	}
	if n < len(marking.Schemes()) {
		t.Fatalf("%d round trips", n)
	}
}

// The keys of the next wave's schemes decode by their units: PIE's and
// PI2's durations (target, tupdate), gains in Hz (α, β), booleans (ecn,
// bytemode), a packet limit, and a rate, a count, a probability, a choice
// and a seed; a value outside its range or of the wrong form is an error
// at its key and line.
func TestDecodeParamsByUnit(t *testing.T) {
	ps := []marking.Param{
		{Key: "target", Unit: marking.UnitDuration, Range: marking.Range{Min: 0, Max: 1e9, MinOpen: true}},
		{Key: "tupdate", Unit: marking.UnitDuration, Range: marking.Range{Min: 0, Max: 1e9, MinOpen: true}},
		{Key: "alpha", Unit: marking.UnitHertz, Range: marking.Range{Min: 0, Max: 100, MinOpen: true}},
		{Key: "beta", Unit: marking.UnitHertz, Range: marking.Range{Min: 0, Max: 100, MinOpen: true}},
		{Key: "ecn", Unit: marking.UnitBool},
		{Key: "bytemode", Unit: marking.UnitBool},
		{Key: "limit", Unit: marking.UnitPackets, Range: marking.Range{Min: 1, Max: 1 << 20}},
		{Key: "rate", Unit: marking.UnitRate, Range: marking.Range{Min: 1e6, Max: 1e12}},
		{Key: "ports", Unit: marking.UnitCount, Range: marking.Range{Min: 1, Max: 64}},
		{Key: "p", Unit: marking.UnitProbability, Range: marking.Range{Min: 0, Max: 1}},
		{Key: "per", Unit: marking.UnitChoice, Choices: []string{"queue", "port"}},
		{Key: "seed", Unit: marking.UnitSeed},
		{Key: "k", Unit: marking.UnitThreshold},
		{Key: "mtu", Unit: marking.UnitBytes, Range: marking.Range{Min: 1, Max: 1 << 20}},
	}
	decode := func(y string, rate int64) (marking.Params, Errors) {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(y), &doc); err != nil {
			t.Fatal(err)
		}
		return decodeParams(newIndex(&doc), doc.Content[0], "m", ps, rate, "ports[0].rate")
	}
	got, errs := decode(`{target: 15ms, tupdate: 16ms, alpha: 0.125, beta: 1.25, ecn: true, bytemode: false, limit: 1000,
rate: 10Gbit, ports: 8, p: 0.5, per: port, seed: 18446744073709551615, k: 0.5*C*RTT(100us), mtu: 9KB}`, 1e9)
	want := marking.Params{
		"target": int64(15e6), "tupdate": int64(16e6), "alpha": 0.125, "beta": 1.25, "ecn": true, "bytemode": false,
		"limit": int64(1000), "rate": int64(10e9), "ports": int64(8), "p": 0.5, "per": "port", "seed": uint64(math.MaxUint64),
		"k": marking.Standard(100_000, 0.5), "mtu": int64(9000),
	}
	if len(errs) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %v, %v\nwant %v", got, errs, want)
	}
	if got, errs := decode("{target: ~, per: '', alpha: 1}", 0); len(errs) > 0 || !reflect.DeepEqual(got, marking.Params{"alpha": 1.0}) {
		t.Errorf("null and empty values: %v, %v; want them absent", got, errs)
	}
	for _, c := range []struct{ y, key, msg string }{
		{"{alpha: 200}", "m.alpha", "200 outside (0, 100]"},
		{"{target: 15}", "m.target", `"15" has no unit`},
		{"{target: 2s}", "m.target", `"2s" outside (0, 1s]`},
		{"{per: pool}", "m.per", `"pool" is not one of queue, port`},
		{"{rate: 5GB}", "m.rate", `unknown unit "GB"`},
		{"{rate: 2Tbit}", "m.rate", `"2Tbit" outside [1Mbit, 1Tbit]`},
		{"{limit: 0}", "m.limit", "0 outside [1, 1048576]"},
		{"{limit: many}", "m.limit", `"many" is not an integer`},
		{"{ecn: yes please}", "m.ecn", "is not true or false"},
		{"{p: 2}", "m.p", "2 outside [0, 1]"},
		{"{seed: -1}", "m.seed", "is not an integer"},
		{"{mtu: 2MB}", "m.mtu", `"2MB" outside [1B, 1MiB]`},
		{"{k: 100us}", "m.k", `"100us" resolves with the port's rate C, but the port is unshaped; set ports[0].rate`},
		{"{alpha: 1,\n alpha: 2}", "m.alpha", "key given twice (first at line 1)"},
	} {
		_, errs := decode(c.y, 0)
		if len(errs) != 1 || errs[0].Key != c.key || !strings.Contains(errs[0].Msg, c.msg) || errs[0].Line < 1 {
			t.Errorf("%s: %v; want one error at %s containing %q", c.y, errs, c.key, c.msg)
		}
	}
}
