package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
)

// TestNoRegexpCompiledAtInit keeps package-level regexp.MustCompile out of
// the module's non-test code: one binary carries every command, so a
// pattern compiled in a package initialiser is paid by every `omp`
// invocation (start-up targets: issues 10 and 11). Compile on first use
// instead: var re = sync.OnceValue(func() *regexp.Regexp { … }).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	// The module's packages linked into a shipped binary.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}} {{.Dir}}{{end}}",
		"../../cmd/omp", "../../cmd/broker", "../../cmd/gateway").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, dir, _ := strings.Cut(line, " ")
		if mod != Module {
			continue
		}
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") },
			parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for _, f := range p.Files {
				checked++
				for _, decl := range f.Decls {
					gd, ok := decl.(*ast.GenDecl)
					if !ok || gd.Tok != token.VAR {
						continue
					}
					ast.Inspect(gd, func(n ast.Node) bool {
						if _, lit := n.(*ast.FuncLit); lit {
							return false // runs when called, not at init
						}
						if sel, ok := n.(*ast.SelectorExpr); ok {
							if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" && strings.HasPrefix(sel.Sel.Name, "MustCompile") {
								t.Errorf("%s: regexp compiled at package init; compile it on first use (sync.OnceValue)", fset.Position(sel.Pos()))
							}
						}
						return true
					})
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the package list is wrong", checked)
	}
}
