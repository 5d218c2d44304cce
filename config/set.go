package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/marking"
)

// Changing a running switch's config.
//
// `ecnswitch set port P [queue Q] KEY=VALUE…` and a reload of the file
// both end in a new Config made by Parse, the one path every config takes:
// Set writes the assignments into the YAML document the running config
// was parsed from and parses the result, so that a value set at run time
// is validated exactly as the file's is, with the same errors naming the
// key and its range. Changes then says what differs from the running
// config, and refuses what the switch cannot change while it runs.

// An Assignment is one KEY=VALUE of `ecnswitch set`. The key is one of:
//
//   - a key of the port, as the file writes it under ports[i]: rate,
//     bucket, buffer.alpha, scheduler.queues.1.weight, markers.enqueue;
//   - a marker's parameter, PARAM (k, kmin, target, …) when exactly one of
//     the port's markers has it, or NAME.PARAM for the marker called NAME
//     (its name: key, else its scheme's name);
//   - with a queue (queue Q), one of the queue's keys: weight, quantum and
//     strict (its scheduler's), alpha, reserve and cap (its buffer's).
//
// A key of the port wins over a marker's parameter of the same name (mtu
// is the port's; a marker's is NAME.mtu). The value is YAML, as the file
// would have it: 60KB, 995Mbit, 0.5, [{scheme: red, k: 60KB}]. An empty
// value removes the key, so that its default (or port_defaults') applies.
type Assignment struct {
	Key   string
	Value string
}

// String returns the assignment as typed: KEY=VALUE.
func (a Assignment) String() string { return a.Key + "=" + a.Value }

// queueKeys are the keys `set … queue Q` takes, and where each is in the
// port: the queue's scheduler or buffer key.
var queueKeys = map[string]string{
	"weight": "scheduler", "quantum": "scheduler", "strict": "scheduler",
	"alpha": "buffer", "reserve": "buffer", "cap": "buffer",
}

// keyRE is what a key may look like: dotted words of letters, digits, '_',
// '-' and ':' (marker names may also hold those).
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_:-]+(\.[A-Za-z0-9_:-]+)*$`)

// ParseAssignment parses one KEY=VALUE word.
func ParseAssignment(word string) (Assignment, error) {
	k, v, ok := strings.Cut(word, "=")
	switch {
	case !ok:
		return Assignment{}, fmt.Errorf("%q: want KEY=VALUE, e.g. k=60KB or rate=995Mbit", word)
	case !keyRE.MatchString(k):
		return Assignment{}, fmt.Errorf("%q: %q is not a key; want a config key such as k, red.kmin, rate or scheduler.queues.1.weight", word, k)
	}
	return Assignment{Key: k, Value: v}, nil
}

// ParseAssignments parses KEY=VALUE words, and refuses a key given twice.
func ParseAssignments(words []string) ([]Assignment, error) {
	if len(words) == 0 {
		return nil, errors.New("nothing to set; give KEY=VALUE, e.g. k=60KB")
	}
	out := make([]Assignment, 0, len(words))
	for _, w := range words {
		a, err := ParseAssignment(w)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(b Assignment) bool { return b.Key == a.Key }) {
			return nil, fmt.Errorf("%s given twice", a.Key)
		}
		out = append(out, a)
	}
	return out, nil
}

// NoQueue is Set's queue when the assignments are the port's.
const NoQueue = -1

// Set returns the config c would be with the assignments made on port (a
// name, or an index), on its queue queue unless that is NoQueue, parsed
// and validated as a file is: the error names the key, the value and the
// allowed range, as Parse's do (without line numbers, which would point
// into a document no one wrote). c itself does not change. What the
// running switch can apply of the result is Changes' to say.
func (c *Config) Set(port string, queue int, as []Assignment) (*Config, error) {
	if len(c.src) == 0 {
		return nil, errors.New("config: no document to change; make the Config with Parse or Load")
	}
	i, err := c.portIndex(port)
	if err != nil {
		return nil, err
	}
	if nq := c.Switch.Ports[i].Scheduler.NumQueues; queue != NoQueue && (queue < 0 || queue >= nq) {
		return nil, fmt.Errorf("queue %d outside [0, %d] (port %s has %d queues)", queue, nq-1, c.Ports[i].Name, nq)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(c.src, &doc); err != nil {
		return nil, fmt.Errorf("config: the running document: %w", err)
	}
	root := doc.Content[0]
	e := &editor{merged: resolve(mapValue(mergePorts(root), "ports").Content[i]), own: ownPort(root, i), name: c.Ports[i].Name}
	for _, a := range as {
		if err := e.assign(a, queue); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	next, err := Parse(b.Bytes())
	if err != nil {
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.Line = 0
			}
		}
		return nil, err
	}
	next.path = c.path
	return next, nil
}

// portIndex returns the index of the port called name, or numbered so.
func (c *Config) portIndex(name string) (int, error) {
	for i, p := range c.Ports {
		if p.Name == name {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(c.Ports) {
		return i, nil
	}
	return 0, fmt.Errorf("port %q: no such port; ports are %s", name, strings.Join(c.PortNames(), ", "))
}

// ownPort returns the mapping of port i in the document, made its own if
// it was an alias of another node, so that editing it edits nothing else.
func ownPort(root *yaml.Node, i int) *yaml.Node {
	ports := mapValue(root, "ports")
	p := ports.Content[i]
	if p.Kind == yaml.AliasNode {
		p = deepCopy(p)
		ports.Content[i] = p
	}
	return p
}

// editor writes assignments into one port of a document.
type editor struct {
	merged *yaml.Node // the port merged with port_defaults and afxdp: what it is in effect
	own    *yaml.Node // the port's own mapping, which the edits go into
	name   string
	chains map[string]*yaml.Node // the marker lists copied into own, by stage
	// replaced says a chain was replaced whole (markers.enqueue=…), after
	// which a marker's parameter would be looked for in the old one.
	replaced bool
}

// assign writes a into the port, or says why it cannot.
func (e *editor) assign(a Assignment, queue int) error {
	var v *yaml.Node // nil: remove the key
	if a.Value != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(a.Value), &doc); err != nil || len(doc.Content) == 0 {
			return fmt.Errorf("%s: %q is not a YAML value", a.Key, a.Value)
		}
		v = doc.Content[0]
	}
	if queue != NoQueue {
		sect, ok := queueKeys[a.Key]
		if !ok {
			return fmt.Errorf("%s: not a key of a queue; a queue takes %s (a port's keys and its markers' parameters are set without queue Q)",
				a.Key, strings.Join(sortedKeys(queueKeys), ", "))
		}
		setPath(e.own, []string{sect, "queues", strconv.Itoa(queue), a.Key}, v)
		return nil
	}
	path := strings.Split(a.Key, ".")
	if slices.Contains(yamlKeys(reflect.TypeFor[portYAML]()), path[0]) {
		if path[0] == "markers" {
			if len(e.chains) > 0 {
				return fmt.Errorf("%s: replaces a chain whose parameters this set also changes; give the new chain with its parameters", a.Key)
			}
			e.replaced = true
		}
		setPath(e.own, path, v)
		return nil
	}
	return e.markerParam(a, v)
}

// markerParam writes a marker's parameter: PARAM, or NAME.PARAM.
func (e *editor) markerParam(a Assignment, v *yaml.Node) error {
	if e.replaced {
		return fmt.Errorf("%s: set with a new chain (markers.…); give the new chain with its parameters", a.Key)
	}
	name, param := "", a.Key
	if j := strings.LastIndexByte(a.Key, '.'); j >= 0 {
		name, param = a.Key[:j], a.Key[j+1:]
	}
	type found struct {
		stage string
		index int
		name  string
	}
	var all, hits []found
	for _, stage := range []string{"enqueue", "dequeue"} {
		list := e.effective(stage)
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		for j, m := range list.Content {
			mn, ok := markerName(m)
			if !ok {
				continue
			}
			f := found{stage, j, mn}
			all = append(all, f)
			s, _ := marking.Lookup(scalarValue(mapValue(m, "scheme")))
			if name == mn || name == "" && slices.Contains(s.Keys(), param) {
				hits = append(hits, f)
			}
		}
	}
	names := make([]string, len(all))
	for j, f := range all {
		names[j] = f.name
	}
	switch {
	case len(all) == 0:
		return fmt.Errorf("%s: port %s has no markers, and %s is not one of its keys", a.Key, e.name, strings.Split(a.Key, ".")[0])
	case len(hits) == 0 && name != "":
		return fmt.Errorf("%s: port %s has no marker called %s; its markers are %s", a.Key, e.name, name, strings.Join(names, ", "))
	case len(hits) == 0:
		hint := ""
		switch queueKeys[param] {
		case "scheduler":
			hint = fmt.Sprintf("; a queue's %s is set with queue Q %s=…", param, param)
		case "buffer":
			hint = fmt.Sprintf("; a queue's %s is set with queue Q %s=…, every queue's with buffer.%s=…", param, param, param)
		}
		return fmt.Errorf("%s: neither a key of port %s nor a parameter of its markers (%s)%s", a.Key, e.name, strings.Join(names, ", "), hint)
	case len(hits) > 1:
		have, qualified := make([]string, len(hits)), make([]string, len(hits))
		for j, h := range hits {
			have[j], qualified[j] = h.name, h.name+"."+param
		}
		return fmt.Errorf("%s: markers %s have %s; say which: %s=…", a.Key, strings.Join(have, ", "), param, strings.Join(qualified, "=…, "))
	}
	h := hits[0]
	l := e.chain(h.stage) // a copy: its members are no aliases
	setPath(l.Content[h.index], []string{param}, v)
	return nil
}

// chain returns the port's own marker list of stage, copied from what is
// in effect (port_defaults', perhaps) the first time, so that an edit
// changes this port's markers alone.
func (e *editor) chain(stage string) *yaml.Node {
	if l, ok := e.chains[stage]; ok {
		return l
	}
	l := deepCopy(e.effective(stage))
	setPath(e.own, []string{"markers", stage}, l)
	if e.chains == nil {
		e.chains = map[string]*yaml.Node{}
	}
	e.chains[stage] = l
	return l
}

// effective returns the port's marker list at stage as it is in effect,
// aliases resolved, or nil.
func (e *editor) effective(stage string) *yaml.Node {
	return resolve(mapValue(resolve(mapValue(e.merged, "markers")), stage))
}

// resolve follows n if it is an alias.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// markerName returns the name of the marker mapping m: its name key, else
// its scheme's canonical name.
func markerName(m *yaml.Node) (string, bool) {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return "", false
	}
	if n := scalarValue(mapValue(m, "name")); n != "" {
		return n, true
	}
	sc := scalarValue(mapValue(m, "scheme"))
	if s, ok := marking.Lookup(sc); ok {
		return s.Name, true
	}
	return sc, sc != ""
}

// scalarValue returns n's value if it is a scalar, else "".
func scalarValue(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// setPath sets the key path under mapping m to v, making the mappings on
// the way (and copying those that were aliases), or removes it when v is
// nil.
func setPath(m *yaml.Node, path []string, v *yaml.Node) {
	for _, k := range path[:len(path)-1] {
		next := mapValue(m, k)
		switch {
		case next == nil && v == nil:
			return // nothing to remove
		case next == nil:
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, next)
		case next.Kind == yaml.AliasNode || next.Kind != yaml.MappingNode:
			old := next
			if next.Kind == yaml.AliasNode && next.Alias.Kind == yaml.MappingNode {
				next = deepCopy(next)
			} else {
				next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			for j := 1; j < len(m.Content); j += 2 {
				if m.Content[j] == old {
					m.Content[j] = next
				}
			}
		}
		m = next
	}
	k := path[len(path)-1]
	if v == nil {
		m.Content = deleteKey(m.Content, k)
		return
	}
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == k {
			m.Content[j+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
}

// deepCopy copies n and everything below it, resolving aliases and
// dropping anchors, so that the copy shares nothing with the document.
func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return deepCopy(n.Alias)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = deepCopy(k)
	}
	return &c
}
