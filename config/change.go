package config

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Target is what a Change applies to: a running switch, whose worker
// applies each change between two passes (*dataplane.Switch).
type Target interface {
	SetMarkers(ctx context.Context, port int, stage marking.Stage, specs []dataplane.MarkerSpec) error
	SetQueue(ctx context.Context, port, queue int, c scheduler.QueueConfig) error
	SetShaper(ctx context.Context, port int, rate, bucket int64) error
	SetAlpha(ctx context.Context, port, queue int, alpha float64) error
}

var _ Target = (*dataplane.Switch)(nil)

// A Change is one setting that differs between a running config and the
// next, and that a running switch can apply: a port's marker chain at one
// stage, a queue's weight and quantum, a port's rate and bucket, a queue's
// Dynamic Threshold α.
type Change struct {
	Key string // the key, as a file writes it: ports[1].markers.enqueue, ports[0].scheduler.queues.2
	Old string // the value before, as a file writes it
	New string // the value after

	apply func(ctx context.Context, t Target) error
}

// Apply applies the change to t.
func (c Change) Apply(ctx context.Context, t Target) error {
	if err := c.apply(ctx, t); err != nil {
		return fmt.Errorf("%s: %w", c.Key, err)
	}
	return nil
}

// String returns "KEY: OLD → NEW".
func (c Change) String() string { return c.Key + ": " + c.Old + " → " + c.New }

// Changes returns what differs between c, the config a switch runs, and
// next, as changes the switch applies while it runs. Anything else that
// differs is refused: ports added, removed or renamed, and every setting
// the switch fixes when it starts (its workers, CPUs and frames, the
// pools, forwarding and classifier, a port's device, queue count,
// scheduler kind, MTU, buffer reserve and cap, delay, and a queue's strict
// flag, its INT). The error then lists each such key, and nothing is to be
// applied.
//
// Setting a port's rate changes its shaper, and the rate its markers see
// (their thresholds given as a time or λ·C·RTT are rebuilt); its WRR and
// DWRR scheduler keeps timing its rounds by the rate it started with.
func (c *Config) Changes(next *Config) ([]Change, error) {
	var refused Errors
	refuse := func(key, why string, old, new any) {
		refused = append(refused, &Error{Key: key, Msg: fmt.Sprintf("%v → %v: %s", old, new, why)})
	}
	const restart = "cannot change while the switch runs; restart it to apply"
	same := func(key string, old, new any) {
		switch {
		case reflect.DeepEqual(old, new):
		case isSection(old):
			refused = append(refused, &Error{Key: key, Msg: "changed: " + restart})
		default:
			refuse(key, restart, show(old), show(new))
		}
	}

	if a, b := c.PortNames(), next.PortNames(); !slices.Equal(a, b) {
		var added, removed []string
		for _, n := range b {
			if !slices.Contains(a, n) {
				added = append(added, n)
			}
		}
		for _, n := range a {
			if !slices.Contains(b, n) {
				removed = append(removed, n)
			}
		}
		why := "ports cannot be added, removed, renamed or reordered while the switch runs; restart it"
		if len(added) > 0 {
			why += "; added " + strings.Join(added, ", ")
		}
		if len(removed) > 0 {
			why += "; removed " + strings.Join(removed, ", ")
		}
		refuse("ports", why, strings.Join(a, ", "), strings.Join(b, ", "))
		return nil, refused
	}

	a, b := &c.Switch, &next.Switch
	same("log_level", c.LogLevel, next.LogLevel)
	same("workers", a.Workers, b.Workers)
	same("frames", a.Frames, b.Frames)
	same("frame_size", a.FrameSize, b.FrameSize)
	same("batch", a.Batch, b.Batch)
	same("spin", a.Spin, b.Spin)
	same("cpus", a.CPUs, b.CPUs)
	same("pools", poolsText(c), poolsText(next))
	same("forwarding", a.Forwarding, b.Forwarding)
	same("classifier", a.Classifier, b.Classifier)
	same("telemetry", c.Telemetry, next.Telemetry)
	same("capture", c.Capture, next.Capture)
	same("control", c.Control, next.Control)

	var changes []Change
	for i := range a.Ports {
		changes = append(changes, portChanges(c, next, i, same, refuse)...)
	}
	if len(refused) > 0 {
		return nil, refused
	}
	return changes, nil
}

// portChanges compares port i of c and next: what may change becomes a
// Change, what may not is passed to same or refuse.
func portChanges(c, next *Config, i int, same func(string, any, any), refuse func(key, why string, old, new any)) []Change {
	key := func(sub string) string { return "ports[" + strconv.Itoa(i) + "]." + sub }
	pa, pb := &c.Switch.Ports[i], &next.Switch.Ports[i]
	same(key("interface"), c.Ports[i].Interface, next.Ports[i].Interface)
	same(key("afxdp"), c.Ports[i].AFXDP, next.Ports[i].AFXDP)
	sa, sb := pa.Scheduler, pb.Scheduler
	same(key("queues"), sa.NumQueues, sb.NumQueues)
	same(key("scheduler.kind"), sa.Kind.String(), sb.Kind.String())
	same(key("mtu"), sa.MTU, sb.MTU)
	same(key("overhead"), pa.Shaper.Overhead, pb.Shaper.Overhead)
	same(key("scheduler.beta"), sa.Beta, sb.Beta)
	same(key("scheduler.t_idle"), sa.TIdle, sb.TIdle)
	same(key("pool"), c.Pools[pa.Pool], next.Pools[pb.Pool])
	same(key("non_ect"), pa.NonECT, pb.NonECT)
	same(key("delay"), pa.Delay, pb.Delay)
	same(key("coalesce"), pa.Coalesce, pb.Coalesce)
	same(key("worker"), pa.Worker, pb.Worker)
	same(key("int"), intText(pa.INT), intText(pb.INT))
	if sa.NumQueues != sb.NumQueues {
		return nil // the queues' settings cannot be compared one by one
	}

	var out []Change
	if ra, rb := pa.Shaper, pb.Shaper; ra.Rate != rb.Rate || ra.Bucket != rb.Bucket {
		k := key("rate")
		if ra.Rate == rb.Rate {
			k = key("bucket")
		}
		out = append(out, Change{Key: k, Old: shaperText(ra), New: shaperText(rb),
			apply: func(ctx context.Context, t Target) error { return t.SetShaper(ctx, i, rb.Rate, rb.Bucket) }})
	}
	qa, qb := queueConfigs(sa), queueConfigs(sb)
	for q := range qa {
		qk := key("scheduler.queues." + strconv.Itoa(q))
		if qa[q].Strict != qb[q].Strict {
			refuse(qk+".strict", "a running port's queue cannot move between the strict and the weighted level (the dataplane refuses); restart the switch to apply",
				qa[q].Strict, qb[q].Strict)
			continue
		}
		if qa[q] != qb[q] {
			qc := qb[q]
			out = append(out, Change{Key: qk, Old: queueText(qa[q]), New: queueText(qb[q]),
				apply: func(ctx context.Context, t Target) error { return t.SetQueue(ctx, i, q, qc) }})
		}
	}
	for q := range pa.Queues {
		ba, bb := pa.Queues[q], pb.Queues[q]
		bk := key("buffer.queues." + strconv.Itoa(q))
		same(bk+".reserve", FormatSize(ba.Reserve), FormatSize(bb.Reserve))
		if (ba.Cap > 0) != (bb.Cap > 0) || ba.Cap != bb.Cap {
			refuse(bk+".cap", "a queue's static cap (or its change to and from a Dynamic Threshold α) "+"cannot change while the switch runs; restart it to apply",
				capText(ba.Cap), capText(bb.Cap))
			continue
		}
		if ba.Alpha != bb.Alpha {
			alpha := bb.Alpha
			out = append(out, Change{Key: bk + ".alpha", Old: show(ba.Alpha), New: show(bb.Alpha),
				apply: func(ctx context.Context, t Target) error { return t.SetAlpha(ctx, i, q, alpha) }})
		}
	}
	for _, st := range []struct {
		name  string
		stage marking.Stage
		specs []dataplane.MarkerSpec
	}{{"enqueue", marking.Enqueue, pb.Enqueue}, {"dequeue", marking.Dequeue, pb.Dequeue}} {
		ma, mb := c.Ports[i].chain(st.stage), next.Ports[i].chain(st.stage)
		if slices.EqualFunc(ma, mb, Marker.same) {
			continue
		}
		stage, specs := st.stage, st.specs
		old, new := chainText(ma), chainText(mb)
		if old == new {
			new += " (built anew for the port's new rate, queues or pool)"
		}
		out = append(out, Change{Key: key("markers." + st.name), Old: old, New: new,
			apply: func(ctx context.Context, t Target) error { return t.SetMarkers(ctx, i, stage, specs) }})
	}
	return out
}

// chain returns the port's markers at stage, in order.
func (p Port) chain(stage marking.Stage) []Marker {
	var out []Marker
	for _, m := range p.Markers {
		if m.Stage == stage {
			out = append(out, m)
		}
	}
	return out
}

// same reports whether m and o build the same markers: the same scheme
// and parameters, and, where the port's rate, queues or pool changed,
// members that come out the same from a fresh build (a threshold in bytes
// does not depend on the rate; one given as a time does).
func (m Marker) same(o Marker) bool {
	if m.Name != o.Name || m.Scheme != o.Scheme || m.Params != o.Params {
		return false
	}
	if m.at == o.at {
		return true
	}
	a, err := m.group.build(m.Stage, m.at.Queues)
	if err != nil {
		return false
	}
	b, err := o.group.build(o.Stage, o.at.Queues)
	return err == nil && reflect.DeepEqual(a, b)
}

// queueConfigs returns a scheduler's queues, one per queue, defaults
// written out.
func queueConfigs(sc scheduler.Config) []scheduler.QueueConfig {
	qs := make([]scheduler.QueueConfig, sc.NumQueues)
	copy(qs, sc.Queues)
	for q := range qs {
		if sc.Kind == scheduler.SP {
			qs[q].Strict = true
		}
		if qs[q].Weight == 0 {
			qs[q].Weight = 1
		}
	}
	return qs
}

// isSection reports whether v is a whole section (a struct or a map),
// whose values a refusal does not print.
func isSection(v any) bool {
	k := reflect.ValueOf(v).Kind()
	return k == reflect.Struct || k == reflect.Map
}

// show formats a value of a refused or changed key.
func show(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []int:
		if len(x) == 0 {
			return "[]"
		}
	}
	return fmt.Sprint(v)
}

func poolsText(c *Config) string {
	parts := make([]string, len(c.Pools))
	for i, n := range c.Pools {
		parts[i] = n + " " + FormatSize(c.Switch.Pools[i].Size)
	}
	return strings.Join(parts, ", ")
}

func shaperText(s scheduler.ShaperConfig) string {
	if s.Rate == 0 {
		return "unshaped"
	}
	return FormatRate(s.Rate) + " bucket " + FormatSize(s.Bucket)
}

func queueText(q scheduler.QueueConfig) string {
	s := "weight " + strconv.FormatInt(q.Weight, 10)
	if q.Quantum > 0 {
		s += " quantum " + FormatSize(q.Quantum)
	}
	return s
}

func capText(n int64) string {
	if n == 0 {
		return "none"
	}
	return FormatSize(n)
}

// chainText writes a marker chain as a summary: "red (k=30KB), tcn (threshold=…)".
func chainText(ms []Marker) string {
	if len(ms) == 0 {
		return "none"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		s := m.Name
		if m.Name != m.Scheme {
			s += " (" + m.Scheme + ")"
		}
		parts[i] = s + " " + m.Params
	}
	return strings.Join(parts, ", ")
}
