package telemetry

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
)

// readDoc returns docs/telemetry.md.
func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// descRE reads a metric's name and labels from prometheus.Desc.String.
var descRE = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// docs/telemetry.md has a row for every metric family /metrics serves,
// with its labels: a family added to the collector without its
// documentation fails here, naming it.
func TestDocListsEveryMetric(t *testing.T) {
	doc := readDoc(t)
	rows := map[string]string{} // metric → its labels cell
	for line := range strings.SplitSeq(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`ecnswitch_") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
		}
	}
	descs := newCollector(nil, nil).descs()
	if len(descs) < 40 {
		t.Fatalf("only %d metric families", len(descs))
	}
	for _, d := range descs {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		name, labels := m[1], strings.ReplaceAll(m[2], ",", ", ")
		got, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("%s is not in docs/telemetry.md's tables of metric families", name)
		case got != labels:
			t.Errorf("docs/telemetry.md gives %s the labels %q, /metrics %q", name, got, labels)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/telemetry.md lists %s, which /metrics does not serve", name)
	}
}

// jsonNames returns the JSON field names of t's fields, and of the
// structs they hold, recursively.
func jsonNames(t reflect.Type, into *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name != "" && !slices.Contains(*into, name) {
			*into = append(*into, name)
		}
		jsonNames(f.Type, into)
	}
}

// Every field of /stats' and /queues' JSON, and every drop reason, is in
// docs/telemetry.md.
func TestDocListsEveryField(t *testing.T) {
	doc := readDoc(t)
	var names []string
	jsonNames(reflect.TypeFor[StatsResponse](), &names)
	jsonNames(reflect.TypeFor[Series](), &names)
	if len(names) < 50 {
		t.Fatalf("only %d JSON fields found", len(names))
	}
	for r := range dataplane.NumDropReasons {
		names = append(names, dataplane.DropReason(r).String())
	}
	for r := buffer.Reason(1); r < buffer.NumReasons; r++ {
		names = append(names, r.String())
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("%s is not in docs/telemetry.md", n)
		}
	}
}
