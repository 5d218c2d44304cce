package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md and docs/ecnswitch.1 from the command tree (go generate)")

// generated are the files made from the command tree, relative to this
// package, with the functions that make them.
var generated = []struct {
	path  string
	write func(w *bytes.Buffer)
}{
	{"../../docs/cli.md", func(w *bytes.Buffer) { writeMarkdown(w, commands()) }},
	{"../../docs/ecnswitch.1", func(w *bytes.Buffer) { writeMan(w, commands()) }},
}

// TestGeneratedDocs fails when docs/cli.md or the man page is not what
// the command tree makes: a flag was added, renamed or reworded without
// `go generate ./cmd/ecnswitch`, which runs this test with -update.
func TestGeneratedDocs(t *testing.T) {
	for _, g := range generated {
		var b bytes.Buffer
		g.write(&b)
		if *update {
			if err := os.WriteFile(g.path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(g.path)
		if err != nil {
			t.Fatalf("%v (go generate ./cmd/ecnswitch writes it)", err)
		}
		if !bytes.Equal(have, b.Bytes()) {
			t.Errorf("%s is stale: run go generate ./cmd/ecnswitch and commit the result", filepath.Clean(g.path))
		}
	}
}

// docs/cli.md names every command and every flag, and the exit codes.
func TestCLIDocCoversEverything(t *testing.T) {
	var b bytes.Buffer
	writeMarkdown(&b, commands())
	md := b.String()
	for _, l := range docTree(commands()) {
		if !strings.Contains(md, "\n## "+l.path+"\n") {
			t.Errorf("docs/cli.md has no section for %s", l.path)
		}
		for _, f := range l.flags {
			if !strings.Contains(md, "| `"+f.names()+"` |") {
				t.Errorf("docs/cli.md: %s lacks %s", l.path, f.names())
			}
		}
	}
	for _, want := range []string{"| 0 | success", "| 1 | the command ran and failed", "| 2 | a usage error", "`995Mbit`", "`96KB`", "`250us`", "has no unit"} {
		if !strings.Contains(md, want) {
			t.Errorf("docs/cli.md lacks %q", want)
		}
	}
}

// The man page is roff that groff reads without a warning.
func TestManPage(t *testing.T) {
	groff := testenv.MustHaveCommand(t, "groff", "groff-base")
	var b bytes.Buffer
	writeMan(&b, commands())
	page := b.Bytes()
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("groff: %v\n%s", err, out)
	}
	cmd = exec.Command(groff, "-man", "-Tutf8", "-P", "-cbou")
	cmd.Stdin = bytes.NewReader(page)
	text, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ecnswitch bench gen", "--rate RATE", "-c, --config FILE", "EXIT STATUS"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("rendered man page lacks %q", want)
		}
	}
}

// The bash completion completes commands, subcommands and a command's
// flags, and leaves a flag's value to file completion.
func TestBashCompletion(t *testing.T) {
	bash := testenv.MustHaveCommand(t, "bash", "bash")
	code, script, errs := cli(t, "completion", "bash")
	if code != exitOK {
		t.Fatalf("completion bash: exit %d: %s", code, errs)
	}
	path := writeFile(t, "ecnswitch.bash", script)
	for _, c := range []struct {
		words string // the command line, the word being completed last
		want  []string
		not   []string
	}{
		{"ecnswitch ", []string{"run", "validate", "bench", "completion", "version", "--version"}, []string{"gen"}},
		{"ecnswitch be", []string{"bench"}, []string{"run"}},
		{"ecnswitch bench ", []string{"gen", "sink", "switch", "tcp", "cacheline"}, []string{"run"}},
		{"ecnswitch bench gen --r", []string{"--rate", "--redirect", "--run"}, []string{"--iface"}},
		{"ecnswitch --help bench gen --", []string{"--iface", "--help"}, []string{"--hosts"}},
		{"ecnswitch testbed up -", []string{"-n", "--hosts", "--no-place", "--no-ecn"}, []string{"--place"}},
		{"ecnswitch run -c ", nil, []string{"--config"}}, // a value: left to file completion
	} {
		words := strings.Split(c.words, " ")
		src := "source " + path + "\nCOMP_WORDS=(" + quoteWords(words) + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_ecnswitch\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "-c", src).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.words, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q completes to %v, lacking %s", c.words, got, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("%q completes to %v, with %s", c.words, got, w)
			}
		}
	}
	if code, zsh, _ := cli(t, "completion", "zsh"); code != exitOK || !strings.HasPrefix(zsh, "#compdef ecnswitch\n") || !strings.Contains(zsh, "bashcompinit") {
		t.Errorf("completion zsh: exit %d\n%.200s", code, zsh)
	}
}

func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}
