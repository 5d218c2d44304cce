package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/marking"
)

// The generated parts of the docs are what the registry says now: any
// difference means a scheme changed and go generate ./config was not run.
func TestDocsAreCurrent(t *testing.T) {
	for _, d := range documents() {
		path := filepath.Join("..", "..", "..", d.path)
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := d.rewrite(old)
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		if string(doc) != string(old) {
			t.Errorf("%s is stale; regenerate it with %s", d.path, Command)
		}
	}
}

// Every scheme and each of its keys has a row in docs/marking.md, and
// every key is in the example config's list.
func TestDocsListEveryKey(t *testing.T) {
	doc, err := markingDoc([]byte(skeleton()))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exampleConfig([]byte(exampleBegin + "\n" + exampleEnd + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range marking.Schemes() {
		if !strings.Contains(string(doc), "| `"+s.Name+"` |") {
			t.Errorf("the table of schemes lacks %s", s.Name)
		}
		for _, p := range s.Params {
			if !strings.Contains(string(doc), "| `"+p.Key+"` | "+p.Unit.String()) && p.Unit != marking.UnitChoice {
				t.Errorf("%s's table lacks %s", s.Name, p.Key)
			}
			if !strings.Contains(string(ex), " "+p.Key) {
				t.Errorf("the example's list lacks %s.%s", s.Name, p.Key)
			}
		}
	}
	for _, p := range marking.DualPI2Params() {
		if !strings.Contains(string(doc), "| `"+p.Key+"` | "+p.Unit.String()) {
			t.Errorf("the DualQ table lacks %s", p.Key)
		}
	}
	for _, line := range strings.Split(string(ex), "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("example line of %d columns: %s", n, line)
		}
	}
	if !strings.Contains(string(doc), "| `tcn` | `threshold` |") && !strings.Contains(string(doc), "| `threshold` | duration | `256µs` | (0, 10s] |") {
		t.Errorf("TCN's threshold row is not `256µs` in (0, 10s]:\n%s", doc)
	}
}

// skeleton is a document with every marker line of docs/marking.md.
func skeleton() string {
	var b strings.Builder
	b.WriteString("<!-- schemes:begin -->\nold\n<!-- schemes:end -->\n")
	for _, s := range marking.Schemes() {
		b.WriteString("<!-- keys:" + s.Name + ":begin -->\n<!-- keys:" + s.Name + ":end -->\n")
	}
	b.WriteString("<!-- keys:dualq:begin -->\n<!-- keys:dualq:end -->\n")
	return b.String()
}

func TestReplace(t *testing.T) {
	doc := "a\n<!-- b -->\nold\n<!-- e -->\nc\n"
	got, err := replace([]byte(doc), "<!-- b -->", "<!-- e -->", "new\n")
	if want := "a\n<!-- b -->\nnew\n<!-- e -->\nc\n"; err != nil || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"no markers", "<!-- e -->\n<!-- b -->\n", "<!-- b -->\n"} {
		if _, err := replace([]byte(bad), "<!-- b -->", "<!-- e -->", "x"); !errors.Is(err, errNoMarkers) {
			t.Errorf("%q: %v, want errNoMarkers", bad, err)
		}
	}
}

// Every key of config.Reference has a row in docs/configuration.md, under
// its section's heading.
func TestConfigurationListsEveryKey(t *testing.T) {
	doc, err := configurationDoc([]byte("<!-- keys:begin -->\nSTALE TEXT\n<!-- keys:end -->\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), "STALE TEXT") {
		t.Errorf("the generated part kept the old text:\n%s", doc)
	}
	for _, s := range config.Reference() {
		head := strings.Index(string(doc), "\n### "+s.Name+"\n")
		if head < 0 {
			t.Errorf("no heading for section %s", s.Name)
			continue
		}
		for _, k := range s.Keys {
			if i := strings.Index(string(doc), "\n| `"+k.Path+"` | "); i < head {
				t.Errorf("%s has no row under %s", k.Path, s.Name)
			}
		}
	}
	if !strings.Contains(string(doc), "| `afxdp.frame_size` | integer, bytes | `2048` | 2048 or 4096 | The UMEM frame. A frame carries frame_size − 256 bytes of headroom, so 2048 allows an interface MTU of at most 1774") {
		t.Errorf("afxdp.frame_size's row does not give the 1774-byte MTU:\n%s", doc)
	}
}
