package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCatalogGenUpToDate fails while pkg/llm/catalog_gen.go differs from
// what go generate ./pkg/llm writes for the current catalog.json.
func TestCatalogGenUpToDate(t *testing.T) {
	want, err := generate("../../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../catalog_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("pkg/llm/catalog_gen.go is stale: run go generate ./pkg/llm")
	}
}
