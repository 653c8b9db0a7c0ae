package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
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
	// The module's packages linked into a shipped binary, with the files
	// the default build compiles.
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{.Module.Path}} {{.Dir}} {{join .GoFiles " "}}{{end}}`,
		"../../cmd/omp", "../../cmd/broker", "../../cmd/gateway").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != Module {
			continue
		}
		for _, name := range fields[2:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
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
	if checked < 50 {
		t.Fatalf("checked only %d files: the package list is wrong", checked)
	}
}
