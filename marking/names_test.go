package marking

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A scheme's name (and alias) is written as a string literal in one
// non-test file of the module: its own, marking/NAME.go. Everything else
// — config, the demo's presets, the closed-loop model, the benchmarks —
// takes it from the registry (issue 27). Files of packages that do not
// import marking are not read: there "dctcp" is a congestion control.
func TestSchemeNamesAreWrittenOnce(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	const importPath = `"github.com/ecnswitch/ecnswitch/marking"`
	fset := token.NewFileSet()
	byDir := map[string][]*ast.File{}
	names := map[*ast.File]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], f)
		names[f] = filepath.ToSlash(rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byDir["marking"]) == 0 {
		t.Fatal("no files under marking: the walk is not looking at the module")
	}
	found := map[string][]string{} // a registered name or alias → the files that write it
	for dir, files := range byDir {
		imports := dir == "marking"
		for _, f := range files {
			for _, im := range f.Imports {
				imports = imports || im.Path.Value == importPath
			}
		}
		if !imports {
			continue
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil {
					if _, ok := Lookup(s); ok && !slices.Contains(found[s], names[f]) {
						found[s] = append(found[s], names[f])
					}
				}
				return true
			})
		}
	}
	for _, s := range Schemes() {
		own := "marking/" + s.Name + ".go"
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if files := found[n]; !slices.Equal(files, []string{own}) {
				slices.Sort(files)
				t.Errorf("%q is written as a literal in %v; want it in %s alone (elsewhere use marking.Lookup or the Scheme constants)", n, files, own)
			}
		}
	}
}

// Schemes lists every scheme the package declares: each func xScheme()
// Scheme of a non-test file is called in Schemes, so that a scheme's file
// cannot be added and forgotten.
func TestSchemesListsEveryDeclaration(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared, listed []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fn.Recv == nil && fn.Type.Params.NumFields() == 0 && fn.Type.Results.NumFields() == 1 {
				if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == "Scheme" {
					declared = append(declared, fn.Name.Name)
				}
			}
			if fn.Name.Name == "Schemes" && fn.Recv == nil {
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok {
						if id, ok := c.Fun.(*ast.Ident); ok {
							listed = append(listed, id.Name)
						}
					}
					return true
				})
			}
		}
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) < 8 || !slices.Equal(declared, listed) {
		t.Errorf("declared schemes %v, Schemes lists %v", declared, listed)
	}
}
