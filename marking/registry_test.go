package marking

import (
	"errors"
	"maps"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// testPlacement is a 10 Gbit/s port of 8 queues on BCC's evaluation pool
// (002 §V-A: B = 3 MB, S_min = 128 KB, α = 4, N = 8).
func testPlacement(stage Stage) Placement {
	return Placement{Stage: stage, Queues: 8, LineRate: 10e9, Seed: 7,
		Pool: Pool{Name: "shared", Size: 3_000_000, Reserve: 128_000, Alpha: 4, Ports: 8}}
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkScheme checks that s is complete: named, documented, every
// parameter with a unit, a doc line, and a default of its unit in its
// range (or a text for one that is derived), and that its stages are the
// ones its constructor accepts.
func checkScheme(t *testing.T, s Scheme) {
	t.Helper()
	if !nameRE.MatchString(s.Name) {
		t.Errorf("name %q: want lower case letters, digits and -", s.Name)
	}
	for _, a := range s.Aliases {
		if !nameRE.MatchString(a) || a == s.Name {
			t.Errorf("alias %q of %s", a, s.Name)
		}
	}
	if s.Title == "" || s.Paper == "" || s.Doc == "" || s.State == "" {
		t.Errorf("%s: title %q, paper %q, doc %q, state %q: want all four", s.Name, s.Title, s.Paper, s.Doc, s.State)
	}
	if s.Stages != AtEnqueue && s.Stages != AtDequeue && s.Stages != AtEither {
		t.Errorf("%s: stages %v", s.Name, s.Stages)
	}
	if s.build == nil {
		t.Fatalf("%s has no constructor", s.Name)
	}
	seen := map[string]bool{}
	for _, p := range s.Params {
		switch {
		case p.Key == "" || seen[p.Key]:
			t.Errorf("%s: key %q empty or repeated", s.Name, p.Key)
		case strings.HasPrefix(p.Unit.String(), "unit("):
			t.Errorf("%s.%s: unit %v", s.Name, p.Key, p.Unit)
		case p.Doc == "":
			t.Errorf("%s.%s: no doc line", s.Name, p.Key)
		case p.Default == nil && p.DefaultText == "":
			t.Errorf("%s.%s: neither a default nor a text saying why there is none", s.Name, p.Key)
		case p.Default != nil && p.Check(p.Default) != nil:
			t.Errorf("%s.%s: default %v: %v", s.Name, p.Key, p.Default, p.Check(p.Default))
		case p.Unit.Numeric() && p.Range.Empty():
			t.Errorf("%s.%s: empty range %v", s.Name, p.Key, p.Range)
		case p.Unit == UnitChoice && len(p.Choices) == 0:
			t.Errorf("%s.%s: a choice of nothing", s.Name, p.Key)
		}
		seen[p.Key] = true
	}
	if len(s.Examples) == 0 {
		t.Errorf("%s: no example", s.Name)
	}
	for _, stage := range []Stage{Enqueue, Dequeue} {
		built := 0
		for i, ex := range s.Examples {
			ms, err := s.New("", ex, testPlacement(stage))
			switch {
			case err == nil && !s.Stages.Has(stage):
				t.Errorf("%s example %d builds at %v, outside its stages %v", s.Name, i, stage, s.Stages)
			case err == nil:
				built++
				if len(ms) == 0 || ms[0].Marker == nil {
					t.Errorf("%s example %d built %v", s.Name, i, ms)
				}
			case s.Stages.Has(stage):
				if !errors.Is(err, ErrDequeueOnly) && !errors.Is(err, ErrEnqueueOnly) {
					t.Errorf("%s example %d at %v: %v", s.Name, i, stage, err)
				}
			case !errors.Is(err, ErrDequeueOnly) && !errors.Is(err, ErrEnqueueOnly):
				t.Errorf("%s example %d at %v, outside its stages: %v, want ErrDequeueOnly or ErrEnqueueOnly", s.Name, i, stage, err)
			}
		}
		if s.Stages.Has(stage) && built == 0 {
			t.Errorf("%s: no example builds at %v, one of its stages", s.Name, stage)
		}
	}
}

func TestSchemesComplete(t *testing.T) {
	names := map[string]string{}
	for _, s := range Schemes() {
		t.Run(s.Name, func(t *testing.T) { checkScheme(t, s) })
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if other, dup := names[n]; dup {
				t.Errorf("%q names both %s and %s", n, other, s.Name)
			}
			names[n] = s.Name
			if got, ok := Lookup(n); !ok || got.Name != s.Name {
				t.Errorf("Lookup(%q) = %q, %v; want %s", n, got.Name, ok, s.Name)
			}
		}
	}
	if _, ok := Lookup("RED"); ok {
		t.Error("Lookup is case-insensitive; names are exact")
	}
	if got := Names(); len(got) != 10 || got[0] != SchemeRED || got[7] != SchemeECNSharp || got[8] != SchemePIE || got[9] != SchemePI2 {
		t.Errorf("Names() = %v: want the 10 schemes, RED first, ECN♯, PIE and PI2 last", got)
	}
}

// Every default the registry states is the one the constructor applies:
// adding a parameter at its default to an example builds the same
// markers, and every stated default is tried on at least one example.
func TestDefaultsAreTheConstructors(t *testing.T) {
	for _, s := range Schemes() {
		for _, p := range s.Params {
			if p.Default == nil {
				continue
			}
			tried := 0
			for i, ex := range s.Examples {
				for _, stage := range []Stage{Enqueue, Dequeue} {
					if ex.has(p.Key) {
						continue
					}
					base, err := s.New("", ex, testPlacement(stage))
					if err != nil {
						continue // the example needs the other stage
					}
					with := maps.Clone(ex)
					with[p.Key] = p.Default
					got, err := s.New("", with, testPlacement(stage))
					if err != nil {
						continue // the key conflicts with the example's (rtt and k)
					}
					tried++
					if !reflect.DeepEqual(got, base) {
						t.Errorf("%s example %d at %v with %s = %v builds %+v, without it %+v", s.Name, i, stage, p.Key, p.Default, got[0].Marker, base[0].Marker)
					}
				}
			}
			if tried == 0 {
				t.Errorf("%s.%s: default %v tried on no example", s.Name, p.Key, p.Default)
			}
		}
	}
}

// New checks the keys, types and ranges of the parameters before the
// constructor sees them, naming the key.
func TestNewChecksParams(t *testing.T) {
	mq, _ := Lookup(SchemeMQECN)
	at := testPlacement(Enqueue)
	for _, c := range []struct {
		name string
		p    Params
		at   Placement
		key  string
		want string
		err  error
	}{
		{"unknown key", Params{"rtt": int64(1e5), "k": Bytes(1)}, at, "k", "k is not a parameter of mqecn; want one of rtt, lambda", nil},
		{"wrong type", Params{"rtt": int64(1e5), "lambda": 1}, at, "lambda", "lambda: int 1 is not a number (float64)", nil},
		{"duration as a float", Params{"rtt": 1e5}, at, "rtt", "is not a duration (int64)", nil},
		{"out of range", Params{"rtt": int64(1e5), "lambda": 17.0}, at, "lambda", "lambda 17 out of range (0, 16]", nil},
		{"NaN", Params{"rtt": int64(1e5), "pmax": math.NaN()}, at, "pmax", "pmax NaN out of range (0, 1]", nil},
		{"time out of range", Params{"rtt": int64(11e9)}, at, "rtt", "rtt 11000000000 out of range (0, 10000000000] ns", nil},
		{"threshold without C", Params{"kmin": Delay(1000)}, Placement{Queues: 1}, "kmin", "needs the port's rate C to resolve kmin 1000ns", ErrNoRate},
		{"scheme without C", Params{"kmin": Bytes(1000)}, Placement{Queues: 1}, "", "mqecn needs the port's rate C to scale its threshold", ErrNoRate},
		{"constructor", Params{"rtt": int64(1e5), "kmin": Bytes(1)}, at, "kmin", "given together with rtt", nil},
		{"stage", Params{"rtt": int64(1e5)}, testPlacement(Dequeue), "", "enqueue", ErrEnqueueOnly},
		{"queues", Params{"rtt": int64(1e5)}, Placement{LineRate: 1e9}, "", "queues 0 out of range", nil},
	} {
		_, err := mq.New("", c.p, c.at)
		var pe *ParamError
		switch {
		case !errors.As(err, &pe):
			t.Errorf("%s: %v, want a *ParamError", c.name, err)
		case pe.Scheme != SchemeMQECN || pe.Key != c.key || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v (scheme %q, key %q), want key %q and %q", c.name, err, pe.Scheme, pe.Key, c.key, c.want)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.err)
		}
	}
	bcc, _ := Lookup(SchemeBCC)
	ms, err := bcc.New("b", bcc.Examples[0], at)
	if err != nil || len(ms) != 2 || ms[0].Name != "b-port" || ms[1].Name != "b-pool" {
		t.Errorf("bcc named b: %v, %v; want members b-port and b-pool", ms, err)
	}
	ms, err = bcc.New("", bcc.Examples[0], at)
	if err != nil || ms[0].Name != BCCPortMember || ms[1].Name != BCCPoolMember {
		t.Errorf("bcc: %v, %v; want members %s and %s", ms, err, BCCPortMember, BCCPoolMember)
	}
	at.Pool.Alpha = 0
	if _, err := bcc.New("", bcc.Examples[0], at); err == nil || !strings.Contains(err.Error(), `every queue of pool "shared" has a static cap`) {
		t.Errorf("bcc deriving from a pool without α: %v", err)
	}
}

func TestRange(t *testing.T) {
	for _, c := range []struct {
		r            Range
		s            string
		in, out      []float64
		empty        bool
		formatInBits string
	}{
		{leftOpen(0, 1), "(0, 1]", []float64{1, 0.5, 1e-300}, []float64{0, -1, 1.0000001, math.NaN()}, false, ""},
		{closed(1, 1<<20), "[1, 1048576]", []float64{1, 1 << 20}, []float64{0, 1<<20 + 1}, false, ""},
		{atLeast(0), "[0, ∞)", []float64{0, math.MaxInt64}, []float64{-1, math.Inf(1)}, false, ""},
		{above(0), "(0, ∞)", []float64{1}, []float64{0}, false, ""},
		{Range{Min: 1, Max: 1, MinOpen: true}, "(1, 1]", nil, []float64{1}, true, ""},
	} {
		if got := c.r.String(); got != c.s {
			t.Errorf("%+v.String() = %q, want %q", c.r, got, c.s)
		}
		for _, x := range c.in {
			if !c.r.Contains(x) {
				t.Errorf("%v does not contain %v", c.r, x)
			}
		}
		for _, x := range c.out {
			if c.r.Contains(x) {
				t.Errorf("%v contains %v", c.r, x)
			}
		}
		if c.r.Empty() != c.empty {
			t.Errorf("%v.Empty() = %v", c.r, c.r.Empty())
		}
	}
}
