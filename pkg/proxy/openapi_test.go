package proxy_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"gopkg.in/yaml.v3"

	"github.com/ompgo/omp/pkg/proxy"
)

// TestOpenAPIMatchesRoutes keeps api/gateway.yaml and the router equal:
// the set of (method, path) pairs must be the same, and every operation
// carries the gateway tag.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s, err := proxy.New(proxy.Options{Source: &memSource{}, NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	err = chi.Walk(s.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../api/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string `yaml:"openapi"`
		Paths   map[string]map[string]struct {
			Tags []string `yaml:"tags"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	var spec []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			spec = append(spec, strings.ToUpper(method)+" "+path)
			if !slices.Equal(op.Tags, []string{"gateway"}) {
				t.Errorf("%s %s: tags %v, want [gateway]", method, path, op.Tags)
			}
		}
	}
	slices.Sort(routes)
	slices.Sort(spec)
	if !slices.Equal(routes, spec) {
		t.Fatalf("router and gateway.yaml differ:\nrouter:  %v\nopenapi: %v", routes, spec)
	}
}
