package tools_test

import (
	"testing"

	"github.com/ompgo/omp/internal/deptest"
)

// TestProductDoesNotLinkTools: the product binaries and the packages they
// are built from never import a harness program or helper under tools/
// (test files may: the benchmarks report cpu-ns/op through tools/benchcpu).
func TestProductDoesNotLinkTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	for _, p := range []string{"./../cmd/...", "./../internal/...", "./../pkg/..."} {
		deptest.Rule{Package: p, Bad: []string{deptest.Module + "/tools"}}.Check(t)
	}
}
