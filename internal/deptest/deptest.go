// Package deptest checks import rules (docs/architecture.md, "Import rules") by
// asking the go tool for a package's transitive dependencies.
package deptest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Module is this repository's module path.
const Module = "github.com/ompgo/omp"

// Deps returns the transitive imports (standard library and modules) of the
// package pattern, excluding test files. The build runs with the host's
// GOOS/GOARCH; packages are given as import paths or ./relative patterns.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// Rule forbids imports of a package: every dependency matching any Bad
// prefix fails the test, unless it matches an Allow prefix.
type Rule struct {
	Package string   // import path or pattern to check
	Bad     []string // forbidden import-path prefixes ("net/http", "database/sql", "modernc.org/")
	Allow   []string // exceptions to Bad
	// ThirdParty, when true, forbids every import outside the standard
	// library and this module.
	ThirdParty bool
}

// Check applies the rule and reports each violation as a test error.
func (r Rule) Check(t testing.TB) {
	t.Helper()
	for _, dep := range Deps(t, r.Package) {
		if r.allowed(dep) {
			continue
		}
		if r.ThirdParty && !isStd(dep) && !strings.HasPrefix(dep, Module) {
			t.Errorf("%s imports third-party %s", r.Package, dep)
			continue
		}
		for _, bad := range r.Bad {
			if dep == bad || strings.HasPrefix(dep, bad+"/") || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) {
				t.Errorf("%s must not import %s", r.Package, dep)
			}
		}
	}
}

func (r Rule) allowed(dep string) bool {
	for _, a := range r.Allow {
		if dep == a || strings.HasPrefix(dep, a+"/") {
			return true
		}
	}
	return false
}

// isStd reports whether an import path belongs to the standard library:
// its first element has no dot (vendor/ paths of std count as std too).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// Exists reports whether the go tool can list pkg (used to skip rules for
// packages that do not exist yet).
func Exists(pkg string) bool {
	return exec.Command("go", "list", pkg).Run() == nil
}

// PackageInfo is the subset of `go list -json` used by the tests.
type PackageInfo struct {
	ImportPath string
	Imports    []string
}

// List returns the packages matching pattern with their direct imports.
func List(t testing.TB, pattern string) []PackageInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", pattern).Output()
	if err != nil {
		t.Fatalf("go list -json %s: %v", pattern, err)
	}
	var pkgs []PackageInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p PackageInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
