package config

import (
	"testing"

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
