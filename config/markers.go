package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
)

// Schemes lists the marker schemes a config may name, in the order the
// docs present them.
func Schemes() []string {
	return []string{"red", "dctcp", "mqecn", "pmsb", "bcc", "tcn", "codel", "ecnsharp"}
}

// The parameter structs of each scheme: the keys a marker may have besides
// scheme and name, named as in the papers and in the marking package.

type redParams struct {
	Measure string    `yaml:"measure"`
	K       Threshold `yaml:"k"`
	KMin    Threshold `yaml:"kmin"`
	KMax    Threshold `yaml:"kmax"`
	PMax    *float64  `yaml:"pmax"`
	Weight  float64   `yaml:"weight"`
	Split   bool      `yaml:"split"`
	Count   *bool     `yaml:"count"`
	MTU     *Size     `yaml:"mtu"`
	Seed    *uint64   `yaml:"seed"`
}

type dctcpParams struct {
	Measure string    `yaml:"measure"`
	K       Threshold `yaml:"k"`
	RTT     *Duration `yaml:"rtt"`
	Lambda  *float64  `yaml:"lambda"`
	Split   bool      `yaml:"split"`
	MTU     *Size     `yaml:"mtu"`
}

type mqecnParams struct {
	RTT    *Duration `yaml:"rtt"`
	Lambda *float64  `yaml:"lambda"`
	KMin   Threshold `yaml:"kmin"`
	KMax   Threshold `yaml:"kmax"`
	PMax   *float64  `yaml:"pmax"`
	MTU    *Size     `yaml:"mtu"`
	Seed   *uint64   `yaml:"seed"`
}

type pmsbParams struct {
	PortThreshold Threshold `yaml:"port_threshold"`
	RTT           *Duration `yaml:"rtt"`
	Lambda        *float64  `yaml:"lambda"`
	MTU           *Size     `yaml:"mtu"`
}

type bccParams struct {
	PortThreshold Threshold `yaml:"port_threshold"`
	PerQueue      bool      `yaml:"per_queue"`
	KMin          Threshold `yaml:"kmin"`
	KMax          Threshold `yaml:"kmax"`
	PMax          *float64  `yaml:"pmax"`
	Count         *bool     `yaml:"count"`
	PoolSize      *Size     `yaml:"pool_size"`
	Alpha         *float64  `yaml:"alpha"`
	RTT           *Duration `yaml:"rtt"`
	Lambda        *float64  `yaml:"lambda"`
	Reserve       *Size     `yaml:"reserve"`
	Ports         *int      `yaml:"ports"`
	H             *Duration `yaml:"h"`
	MTU           *Size     `yaml:"mtu"`
	Seed          *uint64   `yaml:"seed"`
}

type tcnParams struct {
	Threshold *Duration `yaml:"threshold"`
	Lambda    *float64  `yaml:"lambda"`
	RTT       *Duration `yaml:"rtt"`
}

type codelParams struct {
	Target    *Duration `yaml:"target"`
	Interval  *Duration `yaml:"interval"`
	MaxPacket *Size     `yaml:"max_packet"`
}

type ecnsharpParams struct {
	InsTarget      *Duration `yaml:"ins_target"`
	PstTarget      *Duration `yaml:"pst_target"`
	PstInterval    *Duration `yaml:"pst_interval"`
	QueueLength    bool      `yaml:"queue_length"`
	InsTargetBytes *Size     `yaml:"ins_target_bytes"`
	PstTargetBytes *Size     `yaml:"pst_target_bytes"`
}

// newParams returns a pointer to a fresh parameter struct for scheme, or
// nil for an unknown scheme.
func newParams(scheme string) any {
	switch scheme {
	case "red":
		return &redParams{}
	case "dctcp":
		return &dctcpParams{}
	case "mqecn":
		return &mqecnParams{}
	case "pmsb":
		return &pmsbParams{}
	case "bcc":
		return &bccParams{}
	case "tcn":
		return &tcnParams{}
	case "codel":
		return &codelParams{}
	case "ecnsharp":
		return &ecnsharpParams{}
	}
	return nil
}

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

// markerCtx is what building one marker needs to know.
type markerCtx struct {
	c      *checker
	cfg    *Config
	port   int    // index in cfg.Switch.Ports
	key    string // the marker's path
	scheme string
	stage  marking.Stage
	rate   int64
	seed   uint64
	failed bool
}

func (m *markerCtx) errf(sub, format string, args ...any) {
	key := m.key
	if sub != "" {
		key += "." + sub
	}
	m.c.errf(key, format, args...)
	m.failed = true
}

// rateFor checks that a threshold which resolves with the port's rate has one.
func (m *markerCtx) rateFor(sub string, t Threshold) {
	if t.Set() && t.T.RateDependent() && m.rate == 0 {
		m.errf(sub, "%q resolves with the port's rate C, but the port is unshaped; set %s", t, m.c.portKey(m.port, "rate"))
	}
}

// needRate reports an error if the port has no rate.
func (m *markerCtx) needRate(why string) {
	if m.rate == 0 {
		m.errf("", "%s needs the port's rate C to %s, but the port is unshaped; set %s", m.scheme, why, m.c.portKey(m.port, "rate"))
	}
}

func (m *markerCtx) lambda(p *float64) float64 {
	if p == nil {
		return 0
	}
	if !(*p > 0 && *p <= marking.MaxLambda) {
		m.errf("lambda", "%g outside (0, %g]", *p, marking.MaxLambda)
		return 0
	}
	return *p
}

func (m *markerCtx) pmax(p *float64) float64 {
	if p == nil {
		return 0
	}
	if !(*p > 0 && *p <= 1) {
		m.errf("pmax", "%g outside (0, 1]", *p)
		return 0
	}
	return *p
}

func (m *markerCtx) mtu(p *Size) int64 {
	if p == nil {
		return 0
	}
	if p.N < 1 || p.N > marking.MaxMTU {
		m.errf("mtu", "%q outside [1, %s]", p, FormatSize(marking.MaxMTU))
		return 0
	}
	return p.N
}

func (m *markerCtx) seedOr(p *uint64) uint64 {
	if p != nil {
		return *p
	}
	return m.seed
}

// count maps an optional count: key to RED's count correction.
func count(p *bool) marking.Count {
	switch {
	case p == nil:
		return marking.CountDefault
	case *p:
		return marking.CountOn
	}
	return marking.CountOff
}

func ns(d *Duration) int64 {
	if d == nil {
		return 0
	}
	return int64(d.D)
}

func (m *markerCtx) measure(s string) marking.Measure {
	switch m.c.oneOf(m.key+".measure", s, "queue", "queue", "port", "pool") {
	case "port":
		return marking.MeasurePort
	case "pool":
		return marking.MeasurePool
	}
	return marking.MeasureQueue
}

// one wraps a single-marker constructor.
func one[C any](name string, cfg C, ctor func(C, marking.Stage, int) (marking.Marker, error)) ([]string, builder) {
	return []string{name}, func(stage marking.Stage, q int) ([]marking.Member, error) {
		mk, err := ctor(cfg, stage, q)
		if err != nil {
			return nil, err
		}
		return []marking.Member{{Name: name, Marker: mk}}, nil
	}
}

// build returns the member names and the builder of a decoded marker.
func (m *markerCtx) build(params any, name string) ([]string, builder) {
	switch p := params.(type) {
	case *redParams:
		if p.K.Set() && (p.KMin.Set() || p.KMax.Set()) {
			m.errf("k", "set with kmin/kmax; k sets both (a cut-off), so give k or kmin and kmax")
		}
		cfg := marking.REDConfig{
			Measure: m.measure(p.Measure), KMin: p.KMin.T, KMax: p.KMax.T, PMax: m.pmax(p.PMax),
			Weight: p.Weight, Split: p.Split, Count: count(p.Count), LineRate: m.rate, MTU: m.mtu(p.MTU), Seed: m.seedOr(p.Seed),
		}
		if p.K.Set() {
			cfg.KMin, cfg.KMax = p.K.T, p.K.T
		}
		if cfg.KMin.IsZero() {
			m.errf("", "red needs kmin (and kmax, pmax) or k")
		}
		m.rateFor("k", p.K)
		m.rateFor("kmin", p.KMin)
		m.rateFor("kmax", p.KMax)
		return one(name, cfg, marking.NewRED)

	case *dctcpParams:
		k := p.K.T
		switch {
		case p.K.Set() && (p.RTT != nil || p.Lambda != nil):
			m.errf("k", "set with rtt/lambda; give k, or rtt and lambda for the standard threshold λ·C·RTT")
		case !p.K.Set() && p.RTT == nil:
			m.errf("", "dctcp needs k (a threshold), or rtt (and lambda, default 1) for the standard threshold K = λ·C·RTT (001 §2.2 Eq. 1)")
		case !p.K.Set():
			lambda := m.lambda(p.Lambda)
			if lambda == 0 {
				lambda = marking.DefaultLambda
			}
			k = marking.Standard(ns(p.RTT), lambda)
			m.needRate("resolve the standard threshold λ·C·RTT")
		}
		m.rateFor("k", p.K)
		cfg := marking.CutOff(m.measure(p.Measure), k)
		cfg.Split, cfg.LineRate, cfg.MTU = p.Split, m.rate, m.mtu(p.MTU)
		return one(name, cfg, marking.NewRED)

	case *mqecnParams:
		m.needRate("scale its threshold by the round time (001 §3.2.2 Eq. 5)")
		cfg := marking.MQECNConfig{
			RTT: ns(p.RTT), Lambda: m.lambda(p.Lambda), KMin: p.KMin.T, KMax: p.KMax.T,
			PMax: m.pmax(p.PMax), LineRate: m.rate, MTU: m.mtu(p.MTU), Seed: m.seedOr(p.Seed),
		}
		return one(name, cfg, marking.NewMQECN)

	case *pmsbParams:
		if !p.PortThreshold.Set() && p.RTT != nil {
			m.needRate("resolve the default port_threshold λ·C·RTT (003 Eq. 5)")
		}
		m.rateFor("port_threshold", p.PortThreshold)
		cfg := marking.PMSBConfig{
			PortThreshold: p.PortThreshold.T, RTT: ns(p.RTT), Lambda: m.lambda(p.Lambda),
			LineRate: m.rate, MTU: m.mtu(p.MTU),
		}
		return one(name, cfg, marking.NewPMSB)

	case *bccParams:
		return m.bcc(p, name)

	case *tcnParams:
		cfg := marking.TCNConfig{Threshold: ns(p.Threshold), Lambda: m.lambda(p.Lambda), RTT: ns(p.RTT)}
		return one(name, cfg, marking.NewTCN)

	case *codelParams:
		cfg := marking.CoDelConfig{Target: ns(p.Target), Interval: ns(p.Interval)}
		if p.MaxPacket != nil {
			if p.MaxPacket.N < 1 {
				m.errf("max_packet", "%q: want at least 1 byte (0 is not a size here)", p.MaxPacket)
			}
			cfg.MaxPacket = p.MaxPacket.N
		}
		return one(name, cfg, marking.NewCoDel)

	case *ecnsharpParams:
		cfg := marking.ECNSharpConfig{
			InsTarget: ns(p.InsTarget), PstTarget: ns(p.PstTarget), PstInterval: ns(p.PstInterval),
			QueueLength: p.QueueLength,
		}
		for _, b := range []struct {
			key string
			v   *Size
			dst *int64
		}{{"ins_target_bytes", p.InsTargetBytes, &cfg.InsTargetBytes}, {"pst_target_bytes", p.PstTargetBytes, &cfg.PstTargetBytes}} {
			if b.v == nil {
				continue
			}
			if b.v.N < 1 {
				m.errf(b.key, "%q: want at least 1 byte (0 is not a size here)", b.v)
			}
			*b.dst = b.v.N
		}
		if p.QueueLength && (p.InsTargetBytes == nil || p.PstTargetBytes == nil) {
			m.needRate("convert its time targets to bytes (000 §3.2 Eq. 2) for queue_length")
		}
		return one(name, cfg, marking.NewECNSharp)
	}
	return nil, nil
}

// bcc fills BCC's buffer-model parameters from the config where the marker
// leaves them out: B is the port's pool size, α the smallest Dynamic
// Threshold α of the pool's queues, S_min the port's reserved buffer, and
// N the number of ports drawing from the pool (002 §IV-C, §V-A).
func (m *markerCtx) bcc(p *bccParams, name string) ([]string, builder) {
	port := &m.cfg.Switch.Ports[m.port]
	cfg := marking.BCCConfig{
		PortThreshold: p.PortThreshold.T, PerQueue: p.PerQueue, KMin: p.KMin.T, KMax: p.KMax.T,
		PMax: m.pmax(p.PMax), Count: count(p.Count), RTT: ns(p.RTT), Lambda: m.lambda(p.Lambda), H: ns(p.H),
		LineRate: m.rate, MTU: m.mtu(p.MTU), Seed: m.seedOr(p.Seed),
	}
	cfg.PoolSize = m.cfg.Switch.Pools[port.Pool].Size
	if p.PoolSize != nil {
		cfg.PoolSize = p.PoolSize.N
	}
	for _, q := range port.Queues {
		cfg.Reserve += q.Reserve
	}
	if p.Reserve != nil {
		cfg.Reserve = p.Reserve.N
	}
	for _, o := range m.cfg.Switch.Ports {
		if o.Pool != port.Pool {
			continue
		}
		cfg.Ports++
		for _, q := range o.Queues {
			if q.Alpha > 0 && (cfg.Alpha == 0 || q.Alpha < cfg.Alpha) {
				cfg.Alpha = q.Alpha
			}
		}
	}
	if p.Ports != nil {
		cfg.Ports = *p.Ports
	}
	if p.Alpha != nil {
		cfg.Alpha = *p.Alpha
	}
	deriving := !p.KMin.Set() && !p.KMax.Set()
	if deriving && cfg.Alpha == 0 {
		m.errf("", "bcc derives its pool thresholds from the Dynamic Threshold α, but every queue of pool %q has a static cap; set alpha, or kmin and kmax", m.cfg.Pools[port.Pool])
	}
	if deriving || (!p.PortThreshold.Set() && p.RTT != nil) {
		m.needRate("derive its thresholds from C·RTT (002 §IV-C)")
	}
	m.rateFor("port_threshold", p.PortThreshold)
	m.rateFor("kmin", p.KMin)
	m.rateFor("kmax", p.KMax)
	portName, poolName := marking.BCCPortMember, marking.BCCPoolMember
	if name != "bcc" {
		portName, poolName = name+"-port", name+"-pool"
	}
	return []string{portName, poolName}, func(stage marking.Stage, q int) ([]marking.Member, error) {
		return marking.NewBCC(cfg, stage, q)
	}
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
// members built are the ones the switch gets (group).
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
		c.errf(key+".scheme", "missing; want one of %s", strings.Join(Schemes(), ", "))
		return Marker{}, false
	}
	params := newParams(scheme)
	if params == nil {
		c.errf(key+".scheme", "%q is not a scheme; want one of %s", scheme, strings.Join(Schemes(), ", "))
		return Marker{}, false
	}
	if name == "" {
		name = scheme
	} else if !validName(name) {
		c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-'", name, maxNameLen)
		return Marker{}, false
	}
	allowed := yamlKeys(reflect.TypeOf(params).Elem())
	bad := false
	var written []string
	for _, k := range keys {
		if !slices.Contains(allowed, k.Value) {
			c.errf(key+"."+k.Value, "not a key of scheme %s; allowed: scheme, name, %s", scheme, strings.Join(allowed, ", "))
			bad = true
			continue
		}
		v := mapValue(n, k.Value)
		written = append(written, k.Value+"="+nodeText(v))
	}
	if bad {
		return Marker{}, false
	}
	d := &decoder{ix: c.ix}
	d.fields(n, reflect.ValueOf(params).Elem(), key, []string{"scheme", "name"})
	if len(d.errs) > 0 {
		c.add(d.sorted())
		return Marker{}, false
	}
	port := &cfg.Switch.Ports[i]
	m := &markerCtx{c: c, cfg: cfg, port: i, key: key, scheme: scheme, stage: stage, rate: port.Shaper.Rate, seed: seed}
	names, build := m.build(params, name)
	if m.failed {
		return Marker{}, false
	}
	nq := port.Scheduler.NumQueues
	members, err := build(stage, nq)
	if err != nil {
		c.markerErr(key, scheme, allowed, err)
		return Marker{}, false
	}
	g := &group{build: build, stage: stage, queues: nq, built: make([]marking.Marker, len(members))}
	for j, mb := range members {
		g.built[j] = mb.Marker
	}
	return Marker{Key: key, Scheme: scheme, Stage: stage, Params: strings.Join(written, " "), Specs: g.specs(names)}, true
}

// markerErr reports a marking constructor's error at the key it names.
func (c *checker) markerErr(key, scheme string, allowed []string, err error) {
	var pe *marking.ParamError
	switch {
	case errors.Is(err, marking.ErrDequeueOnly):
		c.errf(key+".scheme", "%q decides on the sojourn time, known only at dequeue; move it to markers.dequeue", scheme)
	case errors.Is(err, marking.ErrEnqueueOnly):
		c.errf(key+".scheme", "%q is enqueue marking (001 §2.3); move it to markers.enqueue", scheme)
	case !errors.As(err, &pe):
		c.errf(key, "%v", err)
	case pe.Key != "" && slices.Contains(allowed, pe.Key) && c.ix.has(key+"."+pe.Key):
		c.errf(key+"."+pe.Key, "%s", pe.Msg)
	default:
		c.errf(key, "%s", pe.Msg)
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
