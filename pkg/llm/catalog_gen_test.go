package llm

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestBuiltinCatalogGoMatchesJSON keeps catalog_gen.go (the bundled models
// as Go, so no command decodes 180 KB of JSON at start-up) equal to
// catalog.json, model by model, as llm.Model decodes it. go generate
// ./pkg/llm rewrites catalog_gen.go; internal/gencatalog's test checks it
// byte for byte.
func TestBuiltinCatalogGoMatchesJSON(t *testing.T) {
	data, err := os.ReadFile("catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []Model
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	got := builtinModels()
	if len(got) != len(want) {
		t.Fatalf("catalog_gen.go has %d models, catalog.json %d: run go generate ./pkg/llm", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("model %d differs (run go generate ./pkg/llm):\n go   %+v\n json %+v", i, got[i], want[i])
		}
	}
}
