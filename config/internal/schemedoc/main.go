// Command schemedoc writes what the docs say about the marking schemes and
// the configuration's keys from the code, so that they cannot drift from
// it: from marking's registry, the table of schemes and each scheme's
// table of keys in docs/marking.md and the list of schemes and keys in
// examples/ecnswitch.yaml; from config.Reference, every key of the file
// with its type, default and range in docs/configuration.md. Each
// generated part sits between two marker lines, which stay; the text
// around them is left alone.
//
//	go generate ./config
//
// runs it from config. Its test fails when the committed files are stale.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/marking"
)

// Command is the command the generated parts name.
const Command = "go generate ./config"

// document is a file with generated parts: its path from the
// repository's root and what rewrites it.
type document struct {
	path    string
	rewrite func(doc []byte) ([]byte, error)
}

func documents() []document {
	return []document{
		{"docs/marking.md", markingDoc},
		{"examples/ecnswitch.yaml", exampleConfig},
		{"docs/configuration.md", configurationDoc},
	}
}

func main() {
	root := flag.String("root", "..", "the repository's root")
	flag.Parse()
	for _, d := range documents() {
		path := filepath.Join(*root, d.path)
		old, err := os.ReadFile(path)
		if err == nil {
			var doc []byte
			if doc, err = d.rewrite(old); err == nil && !bytes.Equal(doc, old) {
				err = os.WriteFile(path, doc, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "schemedoc: %s: %v\n", d.path, err)
			os.Exit(1)
		}
	}
}

// errNoMarkers is returned when a document lacks a part's marker lines.
var errNoMarkers = errors.New("marker lines not found")

// replace returns doc with the lines between the line begin and the line
// end replaced by content; the marker lines stay.
func replace(doc []byte, begin, end, content string) ([]byte, error) {
	i := bytes.Index(doc, []byte(begin+"\n"))
	if i < 0 {
		return nil, fmt.Errorf("%q: %w", begin, errNoMarkers)
	}
	start := i + len(begin) + 1
	j := bytes.Index(doc[start:], []byte(end+"\n"))
	if j < 0 {
		return nil, fmt.Errorf("%q after %q: %w", end, begin, errNoMarkers)
	}
	var out bytes.Buffer
	out.Write(doc[:start])
	out.WriteString(content)
	out.Write(doc[start+j:])
	return out.Bytes(), nil
}

// markingDoc regenerates docs/marking.md's table of schemes, each
// scheme's table of keys and the table of a DualQ port's AQM keys.
func markingDoc(doc []byte) ([]byte, error) {
	doc, err := replace(doc, "<!-- schemes:begin -->", "<!-- schemes:end -->", schemeTable())
	if err != nil {
		return nil, err
	}
	for _, s := range marking.Schemes() {
		doc, err = replace(doc, "<!-- keys:"+s.Name+":begin -->", "<!-- keys:"+s.Name+":end -->", keyTable(s))
		if err != nil {
			return nil, err
		}
	}
	// A DualQ port's coupled AQM: its keys sit in the port's scheduler
	// section, not in a marker.
	return replace(doc, "<!-- keys:dualq:begin -->", "<!-- keys:dualq:end -->", keyTable(marking.Scheme{Params: marking.DualPI2Params()}))
}

// cell escapes s for a Markdown table.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// code quotes each of names as code.
func code(names ...string) string {
	for i, n := range names {
		names[i] = "`" + n + "`"
	}
	return strings.Join(names, ", ")
}

// schemeTable is the table of every scheme.
func schemeTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated from marking's registry by %s; do not edit -->\n", Command)
	b.WriteString("| scheme | also | stage | state | what it marks | paper |\n|---|---|---|---|---|---|\n")
	for _, s := range marking.Schemes() {
		fmt.Fprintf(&b, "| %s | %s | %v | %s | %s | %s |\n",
			code(s.Name), code(s.Aliases...), s.Stages, cell(s.State), cell(s.Doc), cell(s.Paper))
	}
	return b.String()
}

// keyTable is the table of scheme s's keys.
func keyTable(s marking.Scheme) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated from marking's registry by %s; do not edit -->\n", Command)
	b.WriteString("| key | unit | default | range | meaning | paper |\n|---|---|---|---|---|---|\n")
	for _, p := range s.Params {
		unit := p.Unit.String()
		if p.Unit == marking.UnitChoice {
			unit = code(slices.Clone(p.Choices)...)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n",
			p.Key, unit, cell(defaultText(p)), config.FormatRange(p), cell(p.Doc), cell(p.Paper))
	}
	if len(s.Examples) > 0 {
		fmt.Fprintf(&b, "\nFor example `%s`.\n", example(s, s.Examples[0]))
	}
	return b.String()
}

// example writes parameter set p of scheme s as a marker of a config,
// in YAML's flow style.
func example(s marking.Scheme, p marking.Params) string {
	keys := []string{"scheme: " + s.Name}
	for _, prm := range s.Params {
		if v, ok := p[prm.Key]; ok {
			keys = append(keys, prm.Key+": "+config.FormatParam(prm, v))
		}
	}
	return "{" + strings.Join(keys, ", ") + "}"
}

// defaultText is p's default as the docs write it: the value as code, or
// the registry's words.
func defaultText(p marking.Param) string {
	if p.Default == nil {
		return p.DefaultText
	}
	return "`" + config.FormatParam(p, p.Default) + "`"
}

// The marker lines of the example config's list of schemes.
const (
	exampleBegin = "  #   --- generated from marking's registry by " + Command + " ---"
	exampleEnd   = "  #   --- end of the generated list ---"
)

// exampleConfig regenerates the list of schemes and keys in
// examples/ecnswitch.yaml: per scheme what it marks, its paper, stages
// and aliases, then its keys with their defaults in parentheses, wrapped
// to 80 columns.
func exampleConfig(doc []byte) ([]byte, error) {
	var b strings.Builder
	for _, s := range marking.Schemes() {
		head := fmt.Sprintf("%s (%s), %s", s.Doc, s.Paper, stageWords(s.Stages))
		if len(s.Aliases) > 0 {
			head += "; also " + strings.Join(s.Aliases, ", ")
		}
		words := strings.Fields(head + ". Keys:")
		for i, p := range s.Params {
			k := p.Key
			switch {
			case p.Default != nil:
				k += " (" + config.FormatParam(p, p.Default) + ")"
			case p.DefaultText != "—":
				k += " (" + p.DefaultText + ")"
			}
			if i < len(s.Params)-1 {
				k += ","
			}
			words = append(words, k)
		}
		wrap(&b, fmt.Sprintf("%-9s ", s.Name), words)
	}
	return replace(doc, exampleBegin, exampleEnd, b.String())
}

// stageWords says where a scheme may sit.
func stageWords(s marking.Stages) string {
	if s == marking.AtEither {
		return "either stage"
	}
	return s.String() + " only"
}

// wrap writes words as YAML comment lines of at most 80 columns, the
// first starting with lead, the others indented as far; a word is never
// broken.
func wrap(b *strings.Builder, lead string, words []string) {
	const prefix = "  #   "
	line := prefix + lead
	fresh := true
	for _, w := range words {
		if !fresh && len([]rune(line))+1+len([]rune(w)) > 80 {
			b.WriteString(line + "\n")
			line, fresh = prefix+strings.Repeat(" ", len(lead)), true
		}
		if !fresh {
			line += " "
		}
		line += w
		fresh = false
	}
	b.WriteString(line + "\n")
}

// configurationDoc regenerates docs/configuration.md's tables of keys, one
// per section of config.Reference.
func configurationDoc(doc []byte) ([]byte, error) {
	return replace(doc, "<!-- keys:begin -->", "<!-- keys:end -->", keyReference(config.Reference()))
}

// keyReference writes every section's heading, description and table of
// keys.
func keyReference(sections []config.Section) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated from config.Reference by %s; do not edit -->\n", Command)
	for _, s := range sections {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", s.Name, linkDocs(s.Doc))
		b.WriteString("| key | type | default | allowed | what it sets |\n|---|---|---|---|---|\n")
		for _, k := range s.Keys {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n",
				k.Path, cell(keyType(k)), cell(keyDefault(k)), cell(keyAllowed(k)), cell(linkDocs(k.Doc)))
		}
	}
	return b.String()
}

// keyType is k's type as the table gives it, with what it counts.
func keyType(k config.Key) string {
	switch {
	case k.Type == config.TypeMarkers:
		return "list of markers ([marking.md](marking.md))"
	case k.Unit == "":
		return k.Type.String()
	case k.Type == config.TypeList:
		return "list of " + k.Unit
	}
	return k.Type.String() + ", " + k.Unit
}

// keyDefault is k's default: the value as code, then any words.
func keyDefault(k config.Key) string {
	var parts []string
	if k.Default != nil {
		parts = append(parts, "`"+k.FormatValue(k.Default)+"`")
	}
	if k.DefaultText != "" {
		parts = append(parts, k.DefaultText)
	}
	return strings.Join(parts, "; ")
}

// keyAllowed is what k allows: its range, its choices as code, and any
// words.
func keyAllowed(k config.Key) string {
	var parts []string
	if r := k.FormatRange(); r != "" {
		parts = append(parts, r)
	}
	if len(k.Choices) > 0 {
		parts = append(parts, code(slices.Clone(k.Choices)...))
	}
	if k.RangeText != "" {
		parts = append(parts, k.RangeText)
	}
	return strings.Join(parts, "; ")
}

// docRef finds the docs' pages named in a text ("docs/marking.md").
var docRef = regexp.MustCompile(`docs/([a-z-]+\.md)`)

// linkDocs makes the pages a text names links, relative to docs/.
func linkDocs(s string) string { return docRef.ReplaceAllString(s, "[$1]($1)") }
