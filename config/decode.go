package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one configuration error. Key is the path of the offending key in
// the file (ports[1].rate, ports[0].markers.enqueue[2].kmin, classifier.dscp.46),
// Msg names the value and what is allowed.
type Error struct {
	Key  string // empty when the file is not valid YAML
	Line int    // 1-based line in the file; 0 if unknown
	Msg  string
}

// Error formats e as `key: message (line n)`.
func (e *Error) Error() string {
	s := e.Msg
	if e.Key != "" {
		s = e.Key + ": " + s
	}
	if e.Line > 0 {
		s += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return s
}

// Errors are every error found in one file, in file order. Parse returns
// them as one error; errors.As finds each *Error.
type Errors []*Error

// Error joins the errors, one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// entry is one key or list element of the document and where it is.
type entry struct {
	path  string
	key   *yaml.Node // nil for list elements
	value *yaml.Node
}

// index maps the document's nodes to their key paths and lines, so that
// an error about a node can name its key.
type index struct {
	entries []entry
	byPath  map[string]*entry
	byNode  map[*yaml.Node]*entry // key and value nodes alike
}

func newIndex(doc *yaml.Node) *index {
	ix := &index{byPath: map[string]*entry{}, byNode: map[*yaml.Node]*entry{}}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := joinKey(path, k.Value)
				ix.entries = append(ix.entries, entry{path: p, key: k, value: v})
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := path + "[" + strconv.Itoa(i) + "]"
				ix.entries = append(ix.entries, entry{path: p, value: c})
				walk(c, p)
			}
		}
	}
	walk(doc, "")
	for i := range ix.entries {
		e := &ix.entries[i]
		if _, dup := ix.byPath[e.path]; !dup {
			ix.byPath[e.path] = e
		}
		for _, n := range []*yaml.Node{e.key, e.value} {
			if _, dup := ix.byNode[n]; n != nil && !dup {
				ix.byNode[n] = e
			}
		}
	}
	return ix
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// line returns the line of path's key (or list element), 0 if the path is
// not in the file (a default).
func (ix *index) line(path string) int {
	if e, ok := ix.byPath[path]; ok {
		if e.key != nil {
			return e.key.Line
		}
		return e.value.Line
	}
	return 0
}

// has reports whether path was written in the file.
func (ix *index) has(path string) bool { _, ok := ix.byPath[path]; return ok }

// at returns an error about node n, found at key path path.
func at(n *yaml.Node, path, msg string) *Error { return &Error{Key: path, Line: n.Line, Msg: msg} }

// nodeErr is how the unit types and the decoder report a bad value: the
// node it is about and what is wrong with it.
type nodeErr struct {
	node *yaml.Node
	msg  string
}

func (e *nodeErr) Error() string { return fmt.Sprintf("line %d: %s", e.node.Line, e.msg) }

func nodeError(n *yaml.Node, format string, args ...any) error {
	return &nodeErr{node: n, msg: fmt.Sprintf(format, args...)}
}

// decoder walks a node tree against the schema's Go types — the structs
// of schema.go, their slices, maps and pointers, and the unit types —
// strictly: every key must be a field, every value must fit. It reports
// each problem at the node it is about, with the key path it walked, so
// that nothing is read back out of yaml.v3's error text.
type decoder struct {
	ix   *index
	errs Errors
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// decode decodes n into v (settable), at key path path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshaler) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, err, v.Type())
		}
		return
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch v.Kind() {
	case reflect.Pointer:
		if null {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		if null {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.errs = append(d.errs, at(n, path, describeNode(n)+" is not "+describeType(v.Type())))
			return
		}
		d.fields(n, v, path, nil)
	case reflect.Slice:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errs = append(d.errs, at(n, path, describeNode(n)+" is not "+describeType(v.Type())))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
		v.Set(s)
	case reflect.Map:
		if null {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.errs = append(d.errs, at(n, path, describeNode(n)+" is not "+describeType(v.Type())))
			return
		}
		m := reflect.MakeMap(v.Type())
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			key := joinKey(path, k.Value)
			if d.duplicate(seen, k, key) {
				continue
			}
			kv := reflect.New(v.Type().Key()).Elem()
			d.decode(k, kv, key)
			ev := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, ev, key)
			m.SetMapIndex(kv, ev)
		}
		v.Set(m)
	default: // a scalar: bool, integers, floats, string
		if n.Kind != yaml.ScalarNode {
			d.errs = append(d.errs, at(n, path, describeNode(n)+" is not "+describeType(v.Type())))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, err, v.Type())
		}
	}
}

// fields decodes mapping n into struct v, field by yaml key, skipping the
// keys in skip (handled by the caller).
func (d *decoder) fields(n *yaml.Node, v reflect.Value, path string, skip []string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := joinKey(path, k.Value)
		if d.duplicate(seen, k, key) || slices.Contains(skip, k.Value) {
			continue
		}
		f, ok := field(v, k.Value)
		if !ok {
			d.errs = append(d.errs, at(k, key, "unknown key; allowed here: "+strings.Join(yamlKeys(v.Type()), ", ")))
			continue
		}
		d.decode(val, f, key)
	}
}

// duplicate reports (once) a key written twice in one mapping.
func (d *decoder) duplicate(seen map[string]int, k *yaml.Node, key string) bool {
	if first, dup := seen[k.Value]; dup {
		d.errs = append(d.errs, at(k, key, "key given twice (first at line "+strconv.Itoa(first)+")"))
		return true
	}
	seen[k.Value] = k.Line
	return false
}

// field returns the field of struct v with yaml key key, looking into
// inline fields.
func field(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if opts == "inline" {
			if f, ok := field(v.Field(i), key); ok {
				return f, true
			}
			continue
		}
		if name == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// fail records err, from decoding n into a value of type t.
func (d *decoder) fail(n *yaml.Node, path string, err error, t reflect.Type) {
	var ne *nodeErr
	if errors.As(err, &ne) {
		// The unit types may name a node inside n (a threshold's rtt).
		if e, ok := d.ix.byNode[ne.node]; ok && ne.node != n {
			path = e.path
		}
		d.errs = append(d.errs, at(ne.node, path, ne.msg))
		return
	}
	// yaml.v3 could not convert the scalar: say so in the file's terms.
	d.errs = append(d.errs, at(n, path, describeNode(n)+" is not "+describeType(t)))
}

// describeType names a schema type in the file's terms.
func describeType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Size]():
		return "a size"
	case reflect.TypeFor[Rate]():
		return "a rate"
	case reflect.TypeFor[Duration]():
		return "a duration"
	case reflect.TypeFor[Threshold]():
		return "a threshold"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "a mapping" // one of the schema's structs, or a map
}

// yamlKeys lists the yaml keys of struct type t, inline fields included.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			keys = append(keys, yamlKeys(f.Type)...)
			continue
		}
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// reSyntax reads the line out of a yaml.v3 syntax error, the one error
// that comes without a node: the file did not parse into one.
var reSyntax = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(err error) *Error {
	if m := reSyntax.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Msg: m[2]}
	}
	return &Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}

// decodeFile parses data: a strict pass over the file as written, which
// catches unknown keys, keys given twice and values of the wrong type,
// then port_defaults and the afxdp section merged into each port, decoded
// from the merged node tree.
func decodeFile(data []byte) (*fileYAML, *index, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, nil, Errors{syntaxError(err)}
	}
	if len(doc.Content) == 0 {
		return nil, nil, Errors{{Msg: "the file is empty; want a mapping with at least a ports key"}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, nil, Errors{syntaxError(err)}
		}
		return nil, nil, Errors{{Line: extra.Line, Msg: "a second YAML document; want one"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, Errors{{Line: root.Line, Msg: describeNode(root) + " at the top level; want a mapping of keys such as ports"}}
	}
	ix := newIndex(&doc)

	d := &decoder{ix: ix}
	var strict fileYAML
	d.decode(root, reflect.ValueOf(&strict).Elem(), "")
	if pd := mapValue(root, "port_defaults"); pd != nil {
		for _, k := range []string{"name", "interface"} {
			if kn := mapKey(pd, k); kn != nil {
				d.errs = append(d.errs, &Error{Key: "port_defaults." + k, Line: kn.Line, Msg: "not allowed in port_defaults; every port sets its own"})
			}
		}
	}
	if len(d.errs) > 0 {
		return nil, ix, d.sorted()
	}
	var f fileYAML
	d.decode(mergePorts(root), reflect.ValueOf(&f).Elem(), "")
	if len(d.errs) > 0 {
		return nil, ix, d.sorted()
	}
	return &f, ix, nil
}

// sorted returns the errors deduplicated, in file order.
func (d *decoder) sorted() Errors {
	var out Errors
	seen := map[string]bool{}
	for _, e := range d.errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// mapKey returns the key node of key in mapping n, or nil.
func mapKey(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// mapValue returns the value node of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// mergePorts returns a copy of root whose ports are each the merge of the
// top-level afxdp section, port_defaults and the port itself, later ones
// winning. Merged trees share the original nodes, so positions still point
// into the file.
func mergePorts(root *yaml.Node) *yaml.Node {
	ports := mapValue(root, "ports")
	if ports == nil || ports.Kind != yaml.SequenceNode {
		return root
	}
	base := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if ax := mapValue(root, "afxdp"); ax != nil && ax.Kind == yaml.MappingNode {
		base.Content = append(base.Content, mapKey(root, "afxdp"), ax)
	}
	if pd := mapValue(root, "port_defaults"); pd != nil && pd.Kind == yaml.MappingNode {
		base = mergeNodes(base, pd)
	}
	newPorts := *ports
	newPorts.Content = nil
	for _, p := range ports.Content {
		if p.Kind != yaml.MappingNode {
			newPorts.Content = append(newPorts.Content, p)
			continue
		}
		newPorts.Content = append(newPorts.Content, mergeNodes(base, p))
	}
	out := *root
	out.Content = slices.Clone(root.Content)
	for i := 0; i+1 < len(out.Content); i += 2 {
		if out.Content[i].Value == "ports" {
			out.Content[i+1] = &newPorts
		}
	}
	return &out
}

// exclusiveKeys are pairs of keys a mapping may not have both of (a
// buffer queue's Dynamic Threshold alpha or its static cap): a port that
// sets one drops the other inherited from port_defaults.
var exclusiveKeys = map[string]string{"alpha": "cap", "cap": "alpha"}

// deleteKey returns mapping content without key.
func deleteKey(content []*yaml.Node, key string) []*yaml.Node {
	for j := 0; j+1 < len(content); j += 2 {
		if content[j].Value == key {
			return append(content[:j:j], content[j+2:]...)
		}
	}
	return content
}

// mergeNodes merges mapping over onto mapping base: keys of over replace
// those of base, except that two mappings merge recursively. Lists and
// scalars are replaced whole.
func mergeNodes(base, over *yaml.Node) *yaml.Node {
	if base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := *over
	out.Content = slices.Clone(base.Content)
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		if other, ok := exclusiveKeys[k.Value]; ok && mapKey(over, other) == nil {
			out.Content = deleteKey(out.Content, other)
		}
		replaced := false
		for j := 0; j+1 < len(out.Content); j += 2 {
			if out.Content[j].Value == k.Value {
				out.Content[j], out.Content[j+1] = k, mergeNodes(out.Content[j+1], v)
				replaced = true
				break
			}
		}
		if !replaced {
			out.Content = append(out.Content, k, v)
		}
	}
	return &out
}
