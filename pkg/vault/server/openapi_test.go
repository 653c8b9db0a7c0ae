package server_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"gopkg.in/yaml.v3"
)

// TestOpenAPIMatchesRoutes keeps api/openapi.yaml and the router equal: the
// set of (method, path) pairs must be the same.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	var routes []string
	param := regexp.MustCompile(`\{(\w+):[^}]*\}`)
	err := chi.Walk(e.srv.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+param.ReplaceAllString(route, "{$1}"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	var spec []string
	for path, ops := range doc.Paths {
		for method := range ops {
			spec = append(spec, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(routes)
	slices.Sort(spec)
	if !slices.Equal(routes, spec) {
		t.Fatalf("router and openapi.yaml differ:\nrouter:  %v\nopenapi: %v", routes, spec)
	}
}
