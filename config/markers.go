package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
)

// builder makes the chain members of one configured marker for a port of
// the given number of queues: one member, or BCC's two, from one
// constructor call.
type builder func(stage marking.Stage, queues int) ([]marking.Member, error)

// group is one configured marker's members: built once by Parse, to check
// the scheme's parameters, and handed to the first switch that takes them.
// A later switch from the same Config gets a new build with the same
// parameters (markers are deterministic in their seed), so that no two
// switches share a marker's state.
type group struct {
	build  builder
	stage  marking.Stage
	mu     sync.Mutex
	queues int
	built  []marking.Marker // not yet taken; a taken member is nil
}

// take returns member i for a port of queues queues.
func (g *group) take(i, queues int) (marking.Marker, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.built[i] == nil || g.queues != queues {
		ms, err := g.build(g.stage, queues)
		if err != nil {
			return nil, err
		}
		for j, m := range ms {
			g.built[j] = m.Marker
		}
		g.queues = queues
	}
	m := g.built[i]
	g.built[i] = nil
	return m, nil
}

// specs returns the dataplane's view of g: one MarkerSpec per member.
func (g *group) specs(names []string) []dataplane.MarkerSpec {
	out := make([]dataplane.MarkerSpec, len(names))
	for i, name := range names {
		out[i] = dataplane.MarkerSpec{Name: name, New: func(queues int) (marking.Marker, error) { return g.take(i, queues) }}
	}
	return out
}

// markers checks port i's marker chains and builds each marker once.
func (c *checker) markers(cfg *Config, f *fileYAML, i int) {
	y := &f.Ports[i].Markers
	pc := &cfg.Switch.Ports[i]
	for _, st := range []struct {
		name  string
		stage marking.Stage
		list  []markerNode
		chain *[]dataplane.MarkerSpec
	}{{"enqueue", marking.Enqueue, y.Enqueue, &pc.Enqueue}, {"dequeue", marking.Dequeue, y.Dequeue, &pc.Dequeue}} {
		names := map[string]string{}
		for j, mn := range st.list {
			key := c.portKey(i, fmt.Sprintf("markers.%s[%d]", st.name, j))
			seed := uint64(i+1)<<32 | uint64(st.stage+1)<<16 | uint64(j+1)
			mk, ok := c.marker(cfg, i, key, st.stage, mn.node, seed)
			if !ok {
				continue
			}
			for _, s := range mk.Specs {
				if other, dup := names[s.Name]; dup {
					sub := ".name"
					if !c.ix.has(key + ".name") {
						sub = ".scheme"
					}
					c.errf(key+sub, "marker name %q is already used by %s; set name: to tell them apart (names label the counters)", s.Name, other)
					ok = false
				}
				names[s.Name] = key
			}
			if ok {
				cfg.Ports[i].Markers = append(cfg.Ports[i].Markers, mk)
				*st.chain = append(*st.chain, mk.Specs...)
			}
		}
	}
}

// marker decodes and checks one marker and builds it, so that the
// scheme's own validation runs now, with the key in every error; the
// members built are the ones the switch gets (group). The marker's keys
// are the parameters of its scheme in marking's registry, decoded by
// their units.
func (c *checker) marker(cfg *Config, i int, key string, stage marking.Stage, n *yaml.Node, seed uint64) (Marker, bool) {
	var scheme, name string
	var keys []*yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		switch k.Value {
		case "scheme", "name":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				c.errf(key+"."+k.Value, "%s is not a string", describeNode(v))
				return Marker{}, false
			}
			if k.Value == "scheme" {
				scheme = v.Value
			} else {
				name = v.Value
			}
		default:
			keys = append(keys, k)
		}
	}
	if scheme == "" {
		c.errf(key+".scheme", "missing; want one of %s", strings.Join(marking.Names(), ", "))
		return Marker{}, false
	}
	s, ok := marking.Lookup(scheme)
	if !ok {
		c.errf(key+".scheme", "%q is not a scheme; want one of %s", scheme, strings.Join(marking.Names(), ", "))
		return Marker{}, false
	}
	if name == "" {
		name = s.Name
	} else if !validName(name) {
		c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-'", name, maxNameLen)
		return Marker{}, false
	}
	allowed := s.Keys()
	bad := false
	var written []string
	var values [][2]string
	for _, k := range keys {
		if !slices.Contains(allowed, k.Value) {
			c.errf(key+"."+k.Value, "not a key of scheme %s; allowed: scheme, name, %s", s.Name, strings.Join(allowed, ", "))
			bad = true
			continue
		}
		v := mapValue(n, k.Value)
		written = append(written, k.Value+"="+nodeText(v))
		values = append(values, [2]string{k.Value, nodeText(v)})
	}
	if bad {
		return Marker{}, false
	}
	port := &cfg.Switch.Ports[i]
	params, errs := decodeParams(c.ix, n, key, s.Params, port.Shaper.Rate, c.portKey(i, "rate"))
	if len(errs) > 0 {
		c.add(errs)
		return Marker{}, false
	}
	at := marking.Placement{Stage: stage, Queues: port.Scheduler.NumQueues, LineRate: port.Shaper.Rate, Seed: seed, Pool: markerPool(cfg, i)}
	build := func(stage marking.Stage, queues int) ([]marking.Member, error) {
		at := at
		at.Stage, at.Queues = stage, queues
		return s.New(name, params, at)
	}
	members, err := build(stage, at.Queues)
	if err != nil {
		c.markerErr(key, s.Name, i, err)
		return Marker{}, false
	}
	g := &group{build: build, stage: stage, queues: at.Queues, built: make([]marking.Marker, len(members))}
	names := make([]string, len(members))
	for j, mb := range members {
		g.built[j], names[j] = mb.Marker, mb.Name
	}
	return Marker{Key: key, Name: name, Scheme: s.Name, Stage: stage, Params: strings.Join(written, " "), Specs: g.specs(names),
		values: values, at: at, group: g}, true
}

// decodeParams decodes the keys of marker mapping n, at key path key,
// by the units of the scheme's parameters ps: thresholds, sizes,
// durations and rates in their YAML forms, numbers, booleans, choices.
// It checks each value against its parameter's range or choices, and
// that a threshold which resolves with the port's rate C has one (rate,
// set at rateKey). An empty or null value is an absent key. Every
// problem is an error at its key.
func decodeParams(ix *index, n *yaml.Node, key string, ps []marking.Param, rate int64, rateKey string) (marking.Params, Errors) {
	d := &decoder{ix: ix}
	params := marking.Params{}
	seen := map[string]int{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		path := joinKey(key, k.Value)
		if d.duplicate(seen, k, path) {
			continue
		}
		i := slices.IndexFunc(ps, func(p marking.Param) bool { return p.Key == k.Value })
		if i < 0 {
			continue // scheme and name, or a key the caller reported
		}
		p := ps[i]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		val, text, ok := d.param(v, p, path)
		if !ok {
			continue
		}
		if s, isChoice := val.(string); isChoice && s == "" {
			continue
		}
		x, numeric := p.Unit.Number(val)
		t, threshold := val.(marking.Threshold)
		switch {
		case numeric && !p.Range.Contains(x):
			d.errs = append(d.errs, at(v, path, text+" outside "+FormatRange(p)))
		case p.Unit == marking.UnitChoice && !slices.Contains(p.Choices, text):
			d.errs = append(d.errs, at(v, path, fmt.Sprintf("%q is not one of %s", text, strings.Join(p.Choices, ", "))))
		case threshold && t.RateDependent() && rate == 0:
			d.errs = append(d.errs, at(v, path, text+" resolves with the port's rate C, but the port is unshaped; set "+rateKey))
		default:
			params[p.Key] = val
		}
	}
	return params, d.errs
}

// param decodes n as a value of p, returning it as marking.Params holds
// it and as the file wrote it, quoted if it has a unit.
func (d *decoder) param(n *yaml.Node, p marking.Param, path string) (val any, text string, ok bool) {
	before := len(d.errs)
	switch p.Unit {
	case marking.UnitThreshold:
		var t Threshold
		d.decode(n, reflect.ValueOf(&t).Elem(), path)
		val, text = t.T, strconv.Quote(t.String())
	case marking.UnitBytes:
		var s Size
		d.decode(n, reflect.ValueOf(&s).Elem(), path)
		val, text = s.N, strconv.Quote(s.String())
	case marking.UnitDuration:
		var t Duration
		d.decode(n, reflect.ValueOf(&t).Elem(), path)
		val, text = int64(t.D), strconv.Quote(t.String())
	case marking.UnitRate:
		var r Rate
		d.decode(n, reflect.ValueOf(&r).Elem(), path)
		val, text = r.BPS, strconv.Quote(r.String())
	case marking.UnitPackets, marking.UnitCount:
		var x int64
		d.decode(n, reflect.ValueOf(&x).Elem(), path)
		val, text = x, strconv.FormatInt(x, 10)
	case marking.UnitProbability, marking.UnitNumber, marking.UnitHertz:
		var x float64
		d.decode(n, reflect.ValueOf(&x).Elem(), path)
		val, text = x, strconv.FormatFloat(x, 'g', -1, 64)
	case marking.UnitBool:
		var b bool
		d.decode(n, reflect.ValueOf(&b).Elem(), path)
		val, text = b, strconv.FormatBool(b)
	case marking.UnitChoice:
		var s string
		d.decode(n, reflect.ValueOf(&s).Elem(), path)
		val, text = s, s
	case marking.UnitSeed:
		var x uint64
		d.decode(n, reflect.ValueOf(&x).Elem(), path)
		val, text = x, strconv.FormatUint(x, 10)
	default:
		d.errs = append(d.errs, at(n, path, fmt.Sprintf("parameter of unknown unit %v", p.Unit)))
	}
	return val, text, len(d.errs) == before
}

// FormatParam writes v, a value of marker parameter p, as a config file
// would: a threshold in marking's notation, a size, duration or rate with
// its unit, anything else as Go prints it.
func FormatParam(p marking.Param, v any) string {
	switch x := v.(type) {
	case marking.Threshold:
		return x.String()
	case int64:
		switch p.Unit {
		case marking.UnitBytes:
			return FormatSize(x)
		case marking.UnitDuration:
			return time.Duration(x).String()
		case marking.UnitRate:
			return FormatRate(x)
		}
	}
	return fmt.Sprint(v)
}

// FormatRange writes the range of marker parameter p as errors and the
// docs quote it, bounds in the file's units: "(0, 10s]", "[1B, 1MiB]",
// "(0, 16]"; "" if p has none.
func FormatRange(p marking.Param) string {
	if !p.Unit.Numeric() {
		return ""
	}
	return p.Range.Format(func(x float64) string {
		switch {
		case x == 0:
			return "0"
		case p.Unit == marking.UnitBytes, p.Unit == marking.UnitDuration, p.Unit == marking.UnitRate:
			return FormatParam(p, int64(x))
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	})
}

// markerPool describes port i's shared pool to the schemes derived from
// the buffer model: B is the pool's size, S_min the port's reserved
// buffer, α the smallest Dynamic Threshold α of the pool's queues, and N
// the number of ports drawing from the pool (002 §IV-C, §V-A).
func markerPool(cfg *Config, i int) marking.Pool {
	port := &cfg.Switch.Ports[i]
	pool := marking.Pool{Name: cfg.Pools[port.Pool], Size: cfg.Switch.Pools[port.Pool].Size}
	for _, q := range port.Queues {
		pool.Reserve += q.Reserve
	}
	for _, o := range cfg.Switch.Ports {
		if o.Pool != port.Pool {
			continue
		}
		pool.Ports++
		for _, q := range o.Queues {
			if q.Alpha > 0 && (pool.Alpha == 0 || q.Alpha < pool.Alpha) {
				pool.Alpha = q.Alpha
			}
		}
	}
	return pool
}

// markerErr reports a scheme's error at the key it names: port i's marker
// at key.
func (c *checker) markerErr(key, scheme string, i int, err error) {
	var pe *marking.ParamError
	isPE := errors.As(err, &pe)
	at := key
	if isPE && pe.Key != "" && c.ix.has(key+"."+pe.Key) {
		at = key + "." + pe.Key
	}
	switch {
	case errors.Is(err, marking.ErrDequeueOnly):
		c.errf(key+".scheme", "%q decides on the sojourn time, known only at dequeue; move it to markers.dequeue", scheme)
	case errors.Is(err, marking.ErrEnqueueOnly):
		c.errf(key+".scheme", "%q is enqueue marking (001 §2.3); move it to markers.enqueue", scheme)
	case !isPE:
		c.errf(key, "%v", err)
	case errors.Is(err, marking.ErrNoRate):
		c.errf(at, "%s, but the port is unshaped; set %s", pe.Msg, c.portKey(i, "rate"))
	default:
		c.errf(at, "%s", pe.Msg)
	}
}

// nodeText renders a parameter's value as written, for summaries.
func nodeText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for j := 0; j+1 < len(n.Content); j += 2 {
		parts = append(parts, n.Content[j].Value+": "+nodeText(n.Content[j+1]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
