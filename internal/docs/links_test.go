package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxReadme is the most lines the README may have: a front page, not a
// manual (issue 23).
const maxReadme = 200

// pending are files that links may name before they exist, because
// another branch makes them; each says which. A pending file that exists
// fails the test, so that the exemption goes once it has served.
var pending = map[string]string{}

// root returns the repository's root, two directories up.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", r, err)
	}
	return r
}

// documents returns README.md and every Markdown file under docs/, as
// paths from the root.
func documents(t *testing.T, r string) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(r, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(r, p)
			docs = append(docs, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// A link is [text](target) or ![alt](target), the target up to the first
// space or closing parenthesis (a title may follow).
var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]*)[^)]*\)`)

// codeSpanRE matches inline code, whose brackets are not links.
var codeSpanRE = regexp.MustCompile("`[^`]*`")

// link is one link of a document.
type link struct {
	line   int
	target string
}

// links returns the links of the Markdown text, outside fenced code.
func links(text string) []link {
	var out []link
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{n, m[1]})
		}
	}
	return out
}

// anchors returns the fragments the headings of a Markdown text get, as
// GitHub makes them: lower case, punctuation dropped, spaces as hyphens,
// a repeated one numbered.
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// Every link in the README and under docs/ names a file of the
// repository — none points outside it — and a #fragment names a heading
// of the Markdown file it points into.
func TestLinksResolve(t *testing.T) {
	r := root(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(r, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	checked := 0
	for _, doc := range documents(t, r) {
		for _, l := range links(read(doc)) {
			checked++
			where := fmt.Sprintf("%s:%d: %s", doc, l.line, l.target)
			u, err := url.Parse(l.target)
			switch {
			case err != nil:
				t.Errorf("%s: %v", where, err)
				continue
			case u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/"):
				t.Errorf("%s points outside the repository; cite it as plain text, or link a file of the repository", where)
				continue
			}
			target := doc // a bare #fragment is in the same file
			if u.Path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), u.Path)))
			}
			if target == ".." || strings.HasPrefix(target, "../") {
				t.Errorf("%s leaves the repository", where)
				continue
			}
			if _, err := os.Stat(filepath.Join(r, target)); err != nil {
				if why, ok := pending[target]; ok {
					t.Logf("%s: %s does not exist yet: %s", where, target, why)
					continue
				}
				t.Errorf("%s: %s does not exist", where, target)
				continue
			}
			if u.Fragment != "" && strings.HasSuffix(target, ".md") && !slices.Contains(anchors(read(target)), u.Fragment) {
				t.Errorf("%s: %s has no heading #%s", where, target, u.Fragment)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links checked; is the link pattern broken?", checked)
	}
	for p, why := range pending {
		if _, err := os.Stat(filepath.Join(r, p)); err == nil {
			t.Errorf("%s exists now (%s): take it out of pending", p, why)
		}
	}
}

// The README is a front page of at most maxReadme lines; the rest lives
// under docs/.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadme {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", n, maxReadme)
	}
}

// The link and heading parsers find what GitHub renders, and only that.
func TestParsers(t *testing.T) {
	text := "# Hello, World\n\nSee [a](a.md#x) and ![img](p.png \"title\"), not `[b](b.md)`.\n```\n[c](c.md)\n# not a heading\n```\n## `bench tcp`: real TCP\n## Hello, World\n"
	var got []string
	for _, l := range links(text) {
		got = append(got, l.target)
	}
	if want := []string{"a.md#x", "p.png"}; !slices.Equal(got, want) {
		t.Errorf("links %q, want %q", got, want)
	}
	if got, want := anchors(text), []string{"hello-world", "bench-tcp-real-tcp", "hello-world-1"}; !slices.Equal(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
}
