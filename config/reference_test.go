package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// schemaPaths walks the file's shape (fileYAML) and returns every key's
// path as Key.Path writes it: "[]" for a list element, "N" for a mapping
// by number. A port's afxdp keys are the top-level section's, and
// port_defaults stands for the ports[] keys it repeats.
func schemaPaths(t *testing.T) []string {
	t.Helper()
	unmarshaler := reflect.TypeFor[yaml.Unmarshaler]()
	var paths []string
	add := func(p string) {
		switch {
		case strings.HasPrefix(p, "port_defaults."):
			return
		case strings.HasPrefix(p, "ports[].afxdp."):
			p = strings.TrimPrefix(p, "ports[].")
		}
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	var walk func(tp reflect.Type, path string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer {
			tp = tp.Elem()
		}
		if reflect.PointerTo(tp).Implements(unmarshaler) {
			add(path)
			return
		}
		switch tp.Kind() {
		case reflect.Struct:
			if path == "port_defaults" {
				add(path)
			}
			for i := range tp.NumField() {
				f := tp.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				switch {
				case name == "-" || (name == "" && opts != "inline"):
					t.Fatalf("%s.%s has no yaml name", path, f.Name)
				case opts == "inline":
					walk(f.Type, path)
				case path == "":
					walk(f.Type, name)
				default:
					walk(f.Type, path+"."+name)
				}
			}
		case reflect.Slice:
			add(path)
			if e := tp.Elem(); e.Kind() == reflect.Struct && !reflect.PointerTo(e).Implements(unmarshaler) {
				walk(e, path+"[]")
			}
		case reflect.Map:
			add(path)
			if tp.Elem().Kind() == reflect.Struct {
				walk(tp.Elem(), path+".N")
			}
		default:
			add(path)
		}
	}
	walk(reflect.TypeFor[fileYAML](), "")
	return paths
}

func referenceKeys() []Key {
	var keys []Key
	for _, s := range Reference() {
		keys = append(keys, s.Keys...)
	}
	return keys
}

// Every key the decoder takes is in the reference, and every key of the
// reference is one the decoder takes: a key added to the file without its
// documentation fails here, naming it.
func TestReferenceCoversSchema(t *testing.T) {
	schema := schemaPaths(t)
	var ref []string
	for _, k := range referenceKeys() {
		if slices.Contains(ref, k.Path) {
			t.Errorf("%s is listed twice", k.Path)
		}
		ref = append(ref, k.Path)
	}
	for _, p := range schema {
		if !slices.Contains(ref, p) {
			t.Errorf("key %s is not in Reference: document it in config/reference.go and run go generate ./config", p)
		}
	}
	for _, p := range ref {
		if !slices.Contains(schema, p) {
			t.Errorf("Reference lists %s, which the file does not have", p)
		}
	}
}

// Every key says what it is, and its Default is of its type.
func TestReferenceKeysAreComplete(t *testing.T) {
	for _, k := range referenceKeys() {
		if k.Type == 0 || k.Doc == "" {
			t.Errorf("%s: no type or doc", k.Path)
		}
		if k.Default == nil && k.DefaultText == "" {
			t.Errorf("%s: no default", k.Path)
		}
		if (k.Type == TypeChoice) != (len(k.Choices) > 0) {
			t.Errorf("%s: %v with choices %v", k.Path, k.Type, k.Choices)
		}
		if k.Type == TypeChoice && k.Default != nil && !slices.Contains(k.Choices, k.Default.(string)) {
			t.Errorf("%s: default %v is not one of %v", k.Path, k.Default, k.Choices)
		}
		want := map[Type]reflect.Type{
			TypeInteger: reflect.TypeFor[int64](), TypeSize: reflect.TypeFor[int64](), TypeRate: reflect.TypeFor[int64](),
			TypeDuration: reflect.TypeFor[time.Duration](), TypeNumber: reflect.TypeFor[float64](),
			TypeBool: reflect.TypeFor[bool](), TypeString: reflect.TypeFor[string](), TypeChoice: reflect.TypeFor[string](),
		}[k.Type]
		if k.Default != nil && reflect.TypeOf(k.Default) != want {
			t.Errorf("%s: default %v is a %T, want %v for a %v", k.Path, k.Default, k.Default, want, k.Type)
		}
		if k.Range != nil && k.Range.Empty() {
			t.Errorf("%s: empty range %v", k.Path, k.Range)
		}
	}
}

// elements are the smallest valid element of each list, which a test
// setting a key inside one starts from.
var elements = map[string]map[string]any{
	"ports[]":               {"name": "p0"},
	"pools[]":               {"name": "pool0", "size": "1MB"},
	"forwarding.patches[]":  {"from": "p0", "to": "p1"},
	"forwarding.macs[]":     {"mac": "02:00:00:00:00:01", "port": "p0"},
	"forwarding.prefixes[]": {"prefix": "198.18.0.0/24", "port": "p0"},
	"capture.captures[]":    {"port": "p0"},
}

// document is a config of two ports with key path set to value, or with
// only the lists and mappings that lead to it when value is nil, and the
// keys of extra set too.
func document(t *testing.T, path string, value any, extra map[string]any) []byte {
	t.Helper()
	doc := map[string]any{"ports": []any{map[string]any{"name": "p0"}, map[string]any{"name": "p1"}}}
	set := func(path string, value any) {
		segs := strings.Split(path, ".")
		cur := doc
		for i, seg := range segs {
			last := i == len(segs)-1
			switch {
			case seg == "N":
				continue // the mapping by number was made by the segment before
			case strings.HasSuffix(seg, "[]"):
				name := strings.TrimSuffix(seg, "[]")
				list, _ := cur[name].([]any)
				if len(list) == 0 {
					elem := map[string]any{}
					for k, v := range elements[strings.Join(segs[:i+1], ".")] {
						elem[k] = v
					}
					list = []any{elem}
					cur[name] = list
				}
				cur = list[0].(map[string]any)
			case last:
				if value != nil {
					cur[seg] = value
				}
			case i+1 < len(segs) && segs[i+1] == "N":
				m, _ := cur[seg].(map[int]any)
				if m == nil {
					m = map[int]any{0: map[string]any{}}
					cur[seg] = m
				}
				cur = m[0].(map[string]any)
			default:
				next, _ := cur[seg].(map[string]any)
				if next == nil {
					next = map[string]any{}
					cur[seg] = next
				}
				cur = next
			}
		}
	}
	set(path, value)
	for k, v := range extra {
		set(k, v)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// literal is s as the file writes it: a plain scalar, which the decoder
// reads as any type, or "" for the empty string.
func literal(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	if s == `""` {
		n.Value, n.Style = "", yaml.DoubleQuotedStyle
	}
	return n
}

// errorKey is the key the decoder names for path: ports[0].mtu, pools[0].size.
func errorKey(path string) string {
	return strings.ReplaceAll(strings.ReplaceAll(path, "[]", "[0]"), ".N.", ".0.")
}

// parsed is what a Config says about the switch and the daemon, without
// what Parse keeps of the file itself.
func parsed(c *Config) any {
	return struct {
		Switch    any
		Ports     []Port
		Pools     []string
		LogLevel  string
		Telemetry Telemetry
		Capture   Capture
		Control   Control
	}{c.Switch, c.Ports, c.Pools, c.LogLevel, c.Telemetry, c.Capture, c.Control}
}

// filledLater are keys whose default a later stage fills in: the file
// leaves the field zero when the key is absent, and the default reaches
// the switch only when the dataplane or the scheduler is built.
var filledLater = map[string]string{
	"ports[].scheduler.beta":            "the scheduler fills DefaultBeta",
	"ports[].scheduler.queues.N.weight": "the scheduler weighs a queue 1 unless told",
	// A dualq port's coupled AQM: marking.NewDualPI2 fills tc-dualpi2's
	// defaults, which marking's registry tests hold to what it declares.
	"ports[].scheduler.target":          "marking.NewDualPI2 fills PI2's target",
	"ports[].scheduler.tupdate":         "marking.NewDualPI2 fills PI2's Tupdate",
	"ports[].scheduler.alpha":           "marking.NewDualPI2 fills PI2's α",
	"ports[].scheduler.coupling_factor": "marking.NewDualPI2 fills k",
	"ports[].scheduler.step_thresh":     "marking.NewDualPI2 fills the L4S step",
}

// differs names the fields of two parsed configs that differ, with both
// values.
func differs(a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if x, y := va.Field(i).Interface(), vb.Field(i).Interface(); !reflect.DeepEqual(x, y) {
			out = append(out, fmt.Sprintf("%s: %+v, not %+v", va.Type().Field(i).Name, y, x))
		}
	}
	return out
}

// A key's documented Default is what its absence stands for: a file that
// writes the default parses to the same switch as one that leaves it out.
func TestReferenceDefaults(t *testing.T) {
	for _, k := range referenceKeys() {
		if k.Default == nil {
			continue
		}
		t.Run(k.Path, func(t *testing.T) {
			absent, err := Parse(document(t, k.Path, nil, atBounds[k.Path]))
			if err != nil {
				t.Fatalf("without the key: %v", err)
			}
			src := document(t, k.Path, literal(k.FormatValue(k.Default)), atBounds[k.Path])
			written, err := Parse(src)
			if err != nil {
				t.Fatalf("with %s: %s: %v\n%s", k.Path, k.FormatValue(k.Default), err, src)
			}
			diff := differs(parsed(absent), parsed(written))
			_, later := filledLater[k.Path]
			switch {
			case len(diff) > 0 && !later:
				t.Errorf("%s: %s is not what its absence gives: %s", k.Path, k.FormatValue(k.Default), strings.Join(diff, "; "))
			case len(diff) == 0 && later:
				t.Errorf("%s: its absence now parses to its default; take it out of filledLater", k.Path)
			}
		})
	}
	for p := range filledLater {
		if !slices.ContainsFunc(referenceKeys(), func(k Key) bool { return k.Path == p }) {
			t.Errorf("filledLater names %s, which Reference lacks", p)
		}
	}
}

// atBounds are other keys a key needs set for its bounds to be valid on
// their own: the rings must fit the UMEM, the MTU the frame.
var atBounds = map[string]map[string]any{
	"afxdp.frames":            {"afxdp.fill_ring": 64, "afxdp.tx_ring": 64, "afxdp.completion_ring": 64},
	"afxdp.fill_ring":         {"afxdp.frames": 1 << 18},
	"afxdp.completion_ring":   {"afxdp.tx_ring": 64},
	"afxdp.tx_ring":           {"afxdp.completion_ring": 1 << 16, "afxdp.frames": 1 << 18},
	"ports[].mtu":             {"frame_size": 1 << 16},
	"telemetry.queue_samples": {"telemetry.enabled": false},
	// A trim section needs its queue and DSCP; its bytes, a large MTU.
	"ports[].trim.bytes":  {"ports[].trim.queue": 1, "ports[].trim.dscp": 5, "frame_size": 1 << 16, "ports[].mtu": 1 << 16},
	"ports[].trim.dscp":   {"ports[].trim.queue": 1},
	"ports[].trim.queues": {"ports[].trim.queue": 1, "ports[].trim.dscp": 5},
	// An int section needs a port to match and a shaped port.
	"ports[].int.node_id": {"ports[].int.port": 4790, "ports[].rate": "1Gbit"},
	"ports[].int.port":    {"ports[].rate": "1Gbit"},
	"ports[].int.dscp":    {"ports[].rate": "1Gbit"},
}

func init() {
	// The keys of kind dualq are a dualq port's.
	for _, k := range dualqSection().Keys {
		atBounds[k.Path] = map[string]any{"ports[].scheduler.kind": "dualq"}
	}
}

// yamlValue writes x, a bound of k's range, as a value of k's type.
func yamlValue(k Key, x float64) any {
	switch k.Type {
	case TypeDuration:
		return time.Duration(x).String()
	case TypeNumber:
		return x
	}
	return int64(x)
}

// A key's documented Range is what the checks take: its bounds (with the
// keys they depend on set) are accepted at the key, and the values just
// outside are refused there.
func TestReferenceRanges(t *testing.T) {
	for _, k := range referenceKeys() {
		r := k.Range
		if r == nil {
			continue
		}
		t.Run(k.Path, func(t *testing.T) {
			key := errorKey(k.Path)
			errsAt := func(v any, extra map[string]any) []string {
				_, err := Parse(document(t, k.Path, v, extra))
				var at []string
				if es, ok := err.(Errors); ok {
					for _, e := range es {
						if e.Key == key {
							at = append(at, e.Error())
						}
					}
				} else if err != nil {
					t.Fatalf("%v: %v", v, err)
				}
				return at
			}
			step := func(x, dir float64) float64 {
				if k.Type == TypeNumber {
					return math.Nextafter(x, dir*math.Inf(1))
				}
				return x + dir
			}
			lo, hi := r.Min, r.Max
			if r.MinOpen {
				lo = step(lo, 1)
			}
			if r.MaxOpen {
				hi = step(hi, -1)
			}
			outside := []float64{step(lo, -1)}
			inside := []float64{lo}
			if !math.IsInf(r.Max, 1) {
				outside = append(outside, step(hi, 1))
				inside = append(inside, hi)
			}
			for _, x := range inside {
				if errs := errsAt(yamlValue(k, x), atBounds[k.Path]); len(errs) > 0 {
					t.Errorf("%v, inside %s, is refused: %v", yamlValue(k, x), k.FormatRange(), errs)
				}
			}
			for _, x := range outside {
				if errs := errsAt(yamlValue(k, x), atBounds[k.Path]); len(errs) == 0 {
					t.Errorf("%v, outside %s, is taken", yamlValue(k, x), k.FormatRange())
				}
			}
		})
	}
}
