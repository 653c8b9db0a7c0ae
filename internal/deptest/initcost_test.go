package deptest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoRegexpCompiledAtInit keeps package-level regexp.MustCompile out of
// the module's non-test code: one binary carries every command, so a
// pattern compiled in a package initialiser is paid by every `omp`
// invocation. Compile on first use
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

// Bounds on the package initialisation of the omp binary, which every
// command pays before it runs: all packages together, and the module's own.
// Measured at about 490 KB in 3,300 allocations, of which the module's own
// packages make 27 KB in 220; the rest is third-party packages' init
// (Prometheus's default registry, procfs, bubbletea's key tables) that the
// binary cannot defer. Allocations, unlike time, do not depend on the
// machine's load.
const (
	maxInitBytes        = 640 << 10
	maxInitAllocs       = 4500
	maxModuleInitBytes  = 64 << 10
	maxModuleInitAllocs = 500
)

// TestOmpInitCost builds omp and reads its GODEBUG=inittrace=1 report:
// package initialisation stays within the bounds above. A registry, table
// or pattern built on first use instead of at init keeps it there.
func TestOmpInitCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binary")
	}
	bin := filepath.Join(t.TempDir(), "omp")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/omp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("omp --version: %v\n%s", err, stderr.String())
	}
	all, module, err := sumInitTrace(stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	if all.packages < 100 || module.packages < 10 {
		t.Fatalf("inittrace reported %d packages, %d of the module: the report was not read", all.packages, module.packages)
	}
	t.Logf("init: %d packages, %d bytes in %d allocs; the module's %d packages: %d bytes in %d allocs",
		all.packages, all.bytes, all.allocs, module.packages, module.bytes, module.allocs)
	if all.bytes > maxInitBytes || all.allocs > maxInitAllocs {
		t.Errorf("omp's package init allocates %d bytes in %d allocs, over %d bytes or %d allocs; the largest:\n%s",
			all.bytes, all.allocs, maxInitBytes, maxInitAllocs, all.largest())
	}
	if module.bytes > maxModuleInitBytes || module.allocs > maxModuleInitAllocs {
		t.Errorf("the module's package init allocates %d bytes in %d allocs, over %d bytes or %d allocs; build it on first use instead. The largest:\n%s",
			module.bytes, module.allocs, maxModuleInitBytes, maxModuleInitAllocs, module.largest())
	}
}

// initCost sums inittrace lines.
type initCost struct {
	packages, bytes, allocs int
	lines                   []initLine
}

type initLine struct {
	pkg           string
	bytes, allocs int
}

func (c *initCost) add(l initLine) {
	c.packages++
	c.bytes += l.bytes
	c.allocs += l.allocs
	c.lines = append(c.lines, l)
}

// largest lists the five packages whose init allocates the most bytes.
func (c *initCost) largest() string {
	lines := slices.Clone(c.lines)
	slices.SortFunc(lines, func(a, b initLine) int { return b.bytes - a.bytes })
	var b strings.Builder
	for _, l := range lines[:min(5, len(lines))] {
		fmt.Fprintf(&b, "  %s: %d bytes, %d allocs\n", l.pkg, l.bytes, l.allocs)
	}
	return b.String()
}

// sumInitTrace adds up the runtime's inittrace lines, of the form
// "init <package> @<t> ms, <d> ms clock, <bytes> bytes, <allocs> allocs":
// all packages, and those of this module.
func sumInitTrace(trace string) (all, module initCost, err error) {
	for _, line := range strings.Split(trace, "\n") {
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 11 || f[8] != "bytes," || f[10] != "allocs" {
			return all, module, fmt.Errorf("unexpected inittrace line %q", line)
		}
		l := initLine{pkg: f[1]}
		if l.bytes, err = strconv.Atoi(f[7]); err != nil {
			return all, module, fmt.Errorf("inittrace line %q: %v", line, err)
		}
		if l.allocs, err = strconv.Atoi(f[9]); err != nil {
			return all, module, fmt.Errorf("inittrace line %q: %v", line, err)
		}
		all.add(l)
		if l.pkg == Module || strings.HasPrefix(l.pkg, Module+"/") {
			module.add(l)
		}
	}
	return all, module, nil
}
