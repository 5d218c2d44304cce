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

// index maps positions in the document to key paths, so that yaml.v3's
// "line N: ..." errors can name the key.
type index struct {
	entries []entry
	byPath  map[string]*entry
}

func newIndex(doc *yaml.Node) *index {
	ix := &index{byPath: map[string]*entry{}}
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
		if _, dup := ix.byPath[ix.entries[i].path]; !dup {
			ix.byPath[ix.entries[i].path] = &ix.entries[i]
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

var (
	reUnknown   = regexp.MustCompile("^line (\\d+): field (.+) not found in type (\\S+)$")
	reScalar    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
	reNonScalar = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) into (\\S+)$")
	reColumn    = regexp.MustCompile("^line (\\d+): column (\\d+): (.*)$")
	reDuplicate = regexp.MustCompile("^line (\\d+): mapping key \"(.*)\" already defined at line (\\d+)$")
	reLine      = regexp.MustCompile("^(?:yaml: )?line (\\d+): (.*)$")
)

// translate turns one yaml.v3 error string into an *Error naming the key.
func (ix *index) translate(s string) *Error {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := reUnknown.FindStringSubmatch(s); m != nil {
		line := atoi(m[1])
		for _, e := range ix.entries {
			if e.key != nil && e.key.Line == line && e.key.Value == m[2] {
				return &Error{Key: e.path, Line: line, Msg: "unknown key; allowed here: " + strings.Join(allowedKeys(m[3]), ", ")}
			}
		}
		return &Error{Key: m[2], Line: line, Msg: "unknown key"}
	}
	if m := reColumn.FindStringSubmatch(s); m != nil {
		line, col := atoi(m[1]), atoi(m[2])
		for _, e := range ix.entries {
			if e.value.Line == line && e.value.Column == col || e.key != nil && e.key.Line == line && e.key.Column == col {
				return &Error{Key: e.path, Line: line, Msg: m[3]}
			}
		}
		return &Error{Line: line, Msg: m[3]}
	}
	if m := reScalar.FindStringSubmatch(s); m != nil {
		line := atoi(m[1])
		msg := fmt.Sprintf("%q is not %s", m[3], describeType(m[4]))
		for _, e := range ix.entries {
			if e.value.Line == line && e.value.Kind == yaml.ScalarNode && e.value.Value == m[3] {
				return &Error{Key: e.path, Line: line, Msg: msg}
			}
		}
		return &Error{Line: line, Msg: msg}
	}
	if m := reNonScalar.FindStringSubmatch(s); m != nil {
		line := atoi(m[1])
		msg := fmt.Sprintf("%s is not %s", kindName(m[2]), describeType(m[3]))
		for _, e := range ix.entries {
			if e.value.Line == line && e.value.Kind != yaml.ScalarNode {
				return &Error{Key: e.path, Line: line, Msg: msg}
			}
		}
		return &Error{Line: line, Msg: msg}
	}
	if m := reDuplicate.FindStringSubmatch(s); m != nil {
		line := atoi(m[1])
		for _, e := range ix.entries {
			if e.key != nil && e.key.Line == line && e.key.Value == m[2] {
				return &Error{Key: e.path, Line: line, Msg: "key given twice (first at line " + m[3] + ")"}
			}
		}
		return &Error{Key: m[2], Line: line, Msg: "key given twice"}
	}
	if m := reLine.FindStringSubmatch(s); m != nil {
		return &Error{Line: atoi(m[1]), Msg: m[2]}
	}
	return &Error{Msg: strings.TrimPrefix(s, "yaml: ")}
}

func kindName(tag string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	}
	return "a " + tag
}

// describeType names a Go type of a yaml.v3 error in the file's terms.
func describeType(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "*"):
		return describeType(t[1:])
	}
	return "a mapping" // one of our structs
}

// schemaTypes are the structs the file decodes into, by the name yaml.v3
// uses in its errors.
var schemaTypes = []any{
	fileYAML{}, afxdpYAML{}, telemetryYAML{}, poolYAML{}, forwardingYAML{}, patchYAML{}, macYAML{},
	prefixYAML{}, classifierYAML{}, portYAML{}, schedulerYAML{}, schedulerQueueYAML{}, bufferYAML{},
	bufferQueueYAML{}, markersYAML{}, delayYAML{}, delayParamsYAML{}, captureYAML{}, captureSpecYAML{},
}

// allowedKeys returns the keys of the schema struct yaml.v3 calls typeName.
func allowedKeys(typeName string) []string {
	for _, v := range schemaTypes {
		t := reflect.TypeOf(v)
		if t.String() == typeName {
			return yamlKeys(t)
		}
	}
	return nil
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

// decodeFile parses data: a strict pass over the file as written, which
// catches unknown keys and wrong types, then port_defaults and the afxdp
// section merged into each port, decoded from the merged node tree.
func decodeFile(data []byte) (*fileYAML, *index, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, Errors{(&index{}).translate(err.Error())}
	}
	if len(doc.Content) == 0 {
		return nil, nil, Errors{{Msg: "the file is empty; want a mapping with at least a ports key"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, Errors{{Line: root.Line, Msg: describeNode(root) + " at the top level; want a mapping of keys such as ports"}}
	}
	ix := newIndex(&doc)

	var strict fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&strict); err != nil {
		return nil, ix, ix.errors(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, ix, Errors{{Line: extra.Line, Msg: "a second YAML document; want one"}}
	}

	var errs Errors
	if pd := mapValue(root, "port_defaults"); pd != nil {
		for _, k := range []string{"name", "interface"} {
			if kn := mapKey(pd, k); kn != nil {
				errs = append(errs, &Error{Key: "port_defaults." + k, Line: kn.Line, Msg: "not allowed in port_defaults; every port sets its own"})
			}
		}
	}
	if len(errs) > 0 {
		return nil, ix, errs
	}
	merged := mergePorts(root)
	var f fileYAML
	if err := merged.Decode(&f); err != nil {
		return nil, ix, ix.errors(err)
	}
	return &f, ix, nil
}

// errors converts a yaml.v3 error into Errors, deduplicated and in file order.
func (ix *index) errors(err error) Errors {
	var te *yaml.TypeError
	var msgs []string
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out Errors
	seen := map[string]bool{}
	for _, m := range msgs {
		e := ix.translate(m)
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
