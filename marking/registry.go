package marking

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Scheme is one marking scheme as configs, presets, the closed-loop model
// and the docs know it: its name, its parameters with their units,
// defaults and ranges, the stages it may sit at, and how to build its
// markers from a parameter set. Each scheme declares itself once, in its
// own file (red.go, mqecn.go, …); Schemes lists them all.
//
// New runs when a port is configured; the per-packet path sees only the
// markers it returns.
type Scheme struct {
	Name    string   // canonical name, a config's scheme key: "mqecn"
	Aliases []string // other spellings Lookup accepts: "mq-ecn"
	Title   string   // the name tables print: "MQ-ECN"
	Paper   string   // where the scheme is defined: "001 §3"
	Doc     string   // one line: what it marks on
	Stages  Stages   // where it may sit; a parameter may narrow it (ECN♯'s queue_length)
	State   string   // what its markers keep between packets, for the docs: "none", "per queue"
	Params  []Param  // in the order the docs list them
	// Examples are small valid parameter sets, one per way of giving the
	// scheme's thresholds, for the docs and the tests; the first is the
	// one the docs show.
	Examples []Params

	build func(name string, p Params, at Placement) ([]Member, error)
}

// Stages is a set of stages.
type Stages uint8

// Sets of stages.
const (
	AtEnqueue Stages = 1 << Enqueue
	AtDequeue Stages = 1 << Dequeue
	AtEither         = AtEnqueue | AtDequeue
)

// Has reports whether st is in s.
func (s Stages) Has(st Stage) bool { return st <= Dequeue && s&(1<<st) != 0 }

// String returns "enqueue", "dequeue", "either" or "none".
func (s Stages) String() string {
	switch s {
	case AtEnqueue:
		return "enqueue"
	case AtDequeue:
		return "dequeue"
	case AtEither:
		return "either"
	}
	return "none"
}

// Param is one parameter of a scheme.
type Param struct {
	Key  string // as a config writes it: "kmin"
	Unit Unit
	// Default is the value an absent key stands for, of the Go type of
	// Unit; nil when the default depends on other parameters or on the
	// port, or there is none, which DefaultText then says.
	Default any
	// DefaultText says the default in words where Default cannot: "kmin",
	// "C·RTT·λ", "the pool's size", "required without kmin".
	DefaultText string
	Range       Range    // the values allowed, for numeric units
	Choices     []string // the values allowed, for UnitChoice
	Doc         string   // one line: what it sets
	Paper       string   // the section that defines it: "001 §3.4"; empty for the implementation's own knobs
}

// Unit is the kind of value a parameter takes, and so the Go type of its
// value in Params.
type Unit uint8

// Units. Durations are ns, as everywhere in marking.
const (
	UnitThreshold   Unit = iota + 1 // a Threshold: bytes, packets, a time at C or λ·C·RTT
	UnitBytes                       // int64 bytes
	UnitPackets                     // int64 packets
	UnitDuration                    // int64 ns
	UnitRate                        // int64 bit/s
	UnitCount                       // int64, a number of things (ports)
	UnitProbability                 // float64 in [0, 1]
	UnitNumber                      // float64 without a unit (λ, α, w_q)
	UnitHertz                       // float64 per second (PIE's gains α and β, RFC 8033 §4.2)
	UnitBool                        // bool
	UnitChoice                      // string, one of Param.Choices
	UnitSeed                        // uint64, a random generator's seed
)

var unitNames = [...]string{
	UnitThreshold: "threshold", UnitBytes: "bytes", UnitPackets: "packets", UnitDuration: "duration",
	UnitRate: "rate", UnitCount: "count", UnitProbability: "probability", UnitNumber: "number",
	UnitHertz: "Hz", UnitBool: "bool", UnitChoice: "choice", UnitSeed: "seed",
}

// String returns the unit's name as the docs print it: "duration", "Hz", ….
func (u Unit) String() string {
	if int(u) < len(unitNames) && unitNames[u] != "" {
		return unitNames[u]
	}
	return "unit(" + strconv.Itoa(int(u)) + ")"
}

// Numeric reports whether values of u are numbers with a Range.
func (u Unit) Numeric() bool {
	switch u {
	case UnitBytes, UnitPackets, UnitDuration, UnitRate, UnitCount, UnitProbability, UnitNumber, UnitHertz:
		return true
	}
	return false
}

// Number returns v, a value of unit u, as a float64 for comparing with a
// Range, and whether v has u's Go type.
func (u Unit) Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		switch u {
		case UnitBytes, UnitPackets, UnitDuration, UnitRate, UnitCount:
			return float64(x), true
		}
	case float64:
		switch u {
		case UnitProbability, UnitNumber, UnitHertz:
			return x, true
		}
	}
	return 0, false
}

// goType names the Go type of u's values, for errors.
func (u Unit) goType() string {
	switch u {
	case UnitThreshold:
		return "marking.Threshold"
	case UnitBytes, UnitPackets, UnitDuration, UnitRate, UnitCount:
		return "int64"
	case UnitProbability, UnitNumber, UnitHertz:
		return "float64"
	case UnitBool:
		return "bool"
	case UnitChoice:
		return "string"
	case UnitSeed:
		return "uint64"
	}
	return "nothing"
}

// fits reports whether v has u's Go type.
func (u Unit) fits(v any) bool {
	if u.Numeric() {
		_, ok := u.Number(v)
		return ok
	}
	switch v.(type) {
	case Threshold:
		return u == UnitThreshold
	case bool:
		return u == UnitBool
	case string:
		return u == UnitChoice
	case uint64:
		return u == UnitSeed
	}
	return false
}

// Range is the interval a numeric parameter's values lie in. An open end
// excludes its bound; an infinite bound is no bound.
type Range struct {
	Min, Max         float64
	MinOpen, MaxOpen bool
}

func closed(lo, hi float64) Range   { return Range{Min: lo, Max: hi} }                                        // [lo, hi]
func leftOpen(lo, hi float64) Range { return Range{Min: lo, Max: hi, MinOpen: true} }                         // (lo, hi]
func atLeast(lo float64) Range      { return Range{Min: lo, Max: math.Inf(1), MaxOpen: true} }                // [lo, ∞)
func above(lo float64) Range        { return Range{Min: lo, Max: math.Inf(1), MinOpen: true, MaxOpen: true} } // (lo, ∞)

// Contains reports whether x lies in r; NaN lies in no range.
func (r Range) Contains(x float64) bool {
	lo := x > r.Min || (!r.MinOpen && x == r.Min)
	hi := x < r.Max || (!r.MaxOpen && x == r.Max)
	return lo && hi
}

// Empty reports whether no number lies in r.
func (r Range) Empty() bool {
	return !(r.Min < r.Max || (r.Min == r.Max && !r.MinOpen && !r.MaxOpen))
}

// Format returns r in interval notation, "(0, 16]", with each finite bound
// written by bound and an infinite one as ∞.
func (r Range) Format(bound func(float64) string) string {
	var b strings.Builder
	b.WriteByte("[("[btoi(r.MinOpen)])
	b.WriteString(formatBound(r.Min, bound))
	b.WriteString(", ")
	b.WriteString(formatBound(r.Max, bound))
	b.WriteByte("])"[btoi(r.MaxOpen)])
	return b.String()
}

// String returns r with its bounds written as plain numbers, whole ones
// without an exponent: "(0, 10000000000]".
func (r Range) String() string { return r.Format(formatNumber) }

// formatNumber writes x as a whole number if it is one below 2^53, else
// in the shortest form.
func formatNumber(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func formatBound(x float64, bound func(float64) string) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	return bound(x)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Params are a marker's parameter values by key. A key that is absent
// takes its default; the value of a key present has the Go type of its
// parameter's Unit (Unit.Number, Param.Check).
type Params map[string]any

// The accessors below read a value that Scheme.New has checked, or the
// zero value when the key is absent.

func (p Params) threshold(key string) Threshold { t, _ := p[key].(Threshold); return t }
func (p Params) i64(key string) int64           { n, _ := p[key].(int64); return n }
func (p Params) f64(key string) float64         { x, _ := p[key].(float64); return x }
func (p Params) flag(key string) bool           { b, _ := p[key].(bool); return b }
func (p Params) str(key string) string          { s, _ := p[key].(string); return s }

// seed returns the seed key's value, or def if it is absent.
func (p Params) seed(def uint64) uint64 {
	if s, ok := p["seed"].(uint64); ok {
		return s
	}
	return def
}

// count returns a boolean count key as RED's Count: CountDefault if absent.
func (p Params) count() Count {
	b, ok := p["count"].(bool)
	switch {
	case !ok:
		return CountDefault
	case b:
		return CountOn
	}
	return CountOff
}

// has reports whether key is present.
func (p Params) has(key string) bool { _, ok := p[key]; return ok }

// Placement is where the markers of a registered scheme sit: their stage
// and what they may know of the port they serve beyond their parameters.
type Placement struct {
	Stage  Stage
	Queues int // the port's queues, 1 to 1024
	// LineRate is the port's rate C in bit/s, which resolves thresholds
	// given as a time or as λ·C·RTT; 0 when the port has none, which a
	// scheme whose parameters need C refuses with ErrNoRate.
	LineRate int64
	// Seed seeds a scheme's random draws when its parameters give no
	// seed, so that markers of different ports draw independently.
	Seed uint64
	// Pool is the shared buffer the port draws from, for schemes derived
	// from the buffer model (BCC, 002 §IV-C).
	Pool Pool
}

// Pool describes the shared buffer pool a port draws from.
type Pool struct {
	Name    string  // for errors
	Size    int64   // B, bytes
	Reserve int64   // S_min: the bytes reserved for the port's own queues
	Alpha   float64 // the smallest Dynamic Threshold α of the pool's queues; 0 if every queue has a static cap
	Ports   int     // N: the ports drawing from the pool
}

// ErrNoRate is wrapped by the errors of Scheme.New for parameters that
// need the port's line rate C when Placement.LineRate is 0.
var ErrNoRate = errors.New("marking: parameters need the port's line rate")

// noRate reports that scheme needs C: "SCHEME needs the port's rate C to
// WHY", keyed by key ("" when no one parameter is to blame).
func noRate(scheme, key, why string) error {
	return &ParamError{Scheme: scheme, Key: key, Msg: scheme + " needs the port's rate C to " + why, Err: ErrNoRate}
}

// Schemes returns every scheme, in the order the docs present them. Each
// call builds them anew, so callers may keep or change what they get.
func Schemes() []Scheme {
	return []Scheme{
		redScheme(), dctcpScheme(), mqecnScheme(), pmsbScheme(), bccScheme(),
		tcnScheme(), codelScheme(), ecnsharpScheme(), pieScheme(), pi2Scheme(),
	}
}

// Lookup returns the scheme named name, its canonical name or one of its
// aliases.
func Lookup(name string) (Scheme, bool) {
	for _, s := range Schemes() {
		if s.Name == name || slices.Contains(s.Aliases, name) {
			return s, true
		}
	}
	return Scheme{}, false
}

// Names returns the canonical names of every scheme, in Schemes' order.
func Names() []string {
	var names []string
	for _, s := range Schemes() {
		names = append(names, s.Name)
	}
	return names
}

// one returns a single marker as the chain member name.
func one(name string, m Marker, err error) ([]Member, error) {
	if err != nil {
		return nil, err
	}
	return []Member{{Name: name, Marker: m}}, nil
}

// Param returns the parameter with key key.
func (s Scheme) Param(key string) (Param, bool) {
	for _, p := range s.Params {
		if p.Key == key {
			return p, true
		}
	}
	return Param{}, false
}

// Keys returns the keys of the scheme's parameters, in order.
func (s Scheme) Keys() []string {
	keys := make([]string, len(s.Params))
	for i, p := range s.Params {
		keys[i] = p.Key
	}
	return keys
}

// New builds the chain members of one marker of the scheme, named name
// (the scheme's name if empty): one member called name, or for BCC two,
// name-port and name-pool. It checks that every key of p is a parameter
// of the scheme with a value of its unit in its range, and that
// thresholds which resolve with C have one, then builds the markers with
// the scheme's constructor, which checks the rest (combinations, the
// stage). Errors are *ParamError naming the key where one is to blame.
func (s Scheme) New(name string, p Params, at Placement) ([]Member, error) {
	if name == "" {
		name = s.Name
	}
	if err := checkStage(s.Name, at.Stage); err != nil {
		return nil, err
	}
	if err := checkQueues(s.Name, at.Queues); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if _, ok := s.Param(k); !ok {
			return nil, paramError(s.Name, k, "%s is not a parameter of %s; want one of %s", k, s.Name, strings.Join(s.Keys(), ", "))
		}
	}
	for _, prm := range s.Params {
		v, ok := p[prm.Key]
		if !ok {
			continue
		}
		if err := prm.Check(v); err != nil {
			return nil, &ParamError{Scheme: s.Name, Key: prm.Key, Msg: err.Error()}
		}
		if t, ok := v.(Threshold); ok && t.RateDependent() && at.LineRate == 0 {
			return nil, noRate(s.Name, prm.Key, "resolve "+prm.Key+" "+t.String())
		}
	}
	return s.build(name, p, at)
}

// Check reports whether v is a value of the parameter: of its unit's Go
// type, in its Range or among its Choices. The error names the key, the
// value and what is allowed.
func (p Param) Check(v any) error {
	if !p.Unit.fits(v) {
		return fmt.Errorf("%s: %T %v is not a %s (%s)", p.Key, v, v, p.Unit, p.Unit.goType())
	}
	if x, ok := p.Unit.Number(v); ok && !p.Range.Contains(x) {
		return fmt.Errorf("%s %v out of range %s", p.Key, v, p.formatRange())
	}
	if s, ok := v.(string); ok && !slices.Contains(p.Choices, s) {
		return fmt.Errorf("%s %q is not one of %s", p.Key, s, strings.Join(p.Choices, ", "))
	}
	return nil
}

// formatRange returns the parameter's range with bounds in its unit:
// "(0, 10000000000] ns".
func (p Param) formatRange() string {
	r := p.Range.String()
	switch p.Unit {
	case UnitBytes:
		r += " bytes"
	case UnitPackets:
		r += " packets"
	case UnitDuration:
		r += " ns"
	case UnitRate:
		r += " bit/s"
	}
	return r
}
