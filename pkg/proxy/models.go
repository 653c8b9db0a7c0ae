package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

// modelTable maps the ids a client may send to models:
// "<provider>/<id>" for every model of a provider that has credentials,
// and the bare "<id>" of the first such model in catalog order (first write
// wins). Lookup is exact; nothing is fuzzy.
// A table is never modified once built: byKey points into models.
type modelTable struct {
	byKey  map[string]*llm.Model
	models []llm.Model // distinct, catalog order (the /v1/models rows)
}

func buildTable(c *llm.Catalog, providers map[string]bool) *modelTable {
	t := &modelTable{byKey: map[string]*llm.Model{}}
	for _, m := range c.Models() {
		if providers[m.Provider] {
			t.models = append(t.models, m)
		}
	}
	for i := range t.models {
		m := &t.models[i]
		t.byKey[m.Provider+"/"+m.ID] = m
		if _, taken := t.byKey[m.ID]; !taken {
			t.byKey[m.ID] = m
		}
	}
	return t
}

// models keeps the model table of the current credential provider set.
// The reference builds it once at boot; the Go gateway rebuilds it when
// the set of providers with credentials changes, so a provider added at
// the broker becomes routable
// without a restart.
type models struct {
	catalog *llm.Catalog

	mu    sync.Mutex
	key   string      // guarded by mu: the sorted provider set of table
	table *modelTable // guarded by mu
}

// current returns the table for the providers that have credentials now.
func (m *models) current(ctx context.Context, s *Server) (*modelTable, error) {
	entries, err := s.source.List(ctx, "")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	var names []string
	for _, e := range entries {
		if !set[e.Provider] {
			set[e.Provider] = true
			names = append(names, e.Provider)
		}
	}
	slices.Sort(names)
	key := strings.Join(names, "\x00")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.table == nil || m.key != key {
		m.table, m.key = buildTable(m.catalog, set), key
	}
	return m.table, nil
}

// resolve finds the model of id: 400 when missing, 404 `Unknown model: <id>`
// when no provider with a credential serves it. When the catalogue knows
// the model, the 404's text goes on to name the provider whose credential
// is missing and the command that adds one. The model is the table's:
// read-only.
func (m *models) resolve(ctx context.Context, s *Server, id string) (*llm.Model, error) {
	if id == "" {
		return nil, errorf(http.StatusBadRequest, "Missing top-level `model` field")
	}
	t, err := m.current(ctx, s)
	if err != nil {
		return nil, err
	}
	mod, ok := t.byKey[id]
	if !ok {
		if p := m.uncredentialedProvider(id); p != "" {
			return nil, errorf(http.StatusNotFound, NoCredentialForModel(id, p))
		}
		return nil, errorf(http.StatusNotFound, "Unknown model: "+id)
	}
	return mod, nil
}

// uncredentialedProvider is the provider of the catalogue model id
// ("<provider>/<id>" or a bare id, first in catalogue order), or "" when
// the catalogue has no such model.
func (m *models) uncredentialedProvider(id string) string {
	if p, bare, ok := strings.Cut(id, "/"); ok {
		if _, found := m.catalog.Lookup(p, bare); found {
			return p
		}
	}
	if ms := m.catalog.ByID(id); len(ms) > 0 {
		return ms[0].Provider
	}
	return ""
}

// NoCredentialForModel is the 404 text for a catalogue model whose provider
// has no credential: the unknown-model text clients match on, then the
// provider that is missing and how to add it.
func NoCredentialForModel(model, provider string) string {
	article := "a "
	if strings.ContainsRune("aeiou", rune(provider[0])) {
		article = "an "
	}
	fix := "run omp auth-broker login " + provider
	if provider == llm.ProviderDemo {
		fix = "start the broker with --demo"
	}
	return "Unknown model: " + model + " (it needs " + article + provider + " credential and the broker holds none; " + fix + ")"
}

// modelRow is one /v1/models row; the
// field order is the wire order.
type modelRow struct {
	ID              string   `json:"id"`
	Object          string   `json:"object"`
	OwnedBy         string   `json:"owned_by"`
	API             string   `json:"api"`
	DisplayName     string   `json:"display_name"`
	InputModalities []string `json:"input_modalities"`
	// Kind is set on non-chat models only.
	Kind            string `json:"kind,omitempty"`
	ContextLength   int    `json:"context_length,omitempty"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
	// SupportsTools is false on non-chat models, absent otherwise.
	SupportsTools *bool `json:"supports_tools,omitempty"`
}

type modelList struct {
	Object string     `json:"object"`
	Data   []modelRow `json:"data"`
}

// listModels answers GET /v1/models: each resolvable model once, with its
// provider-qualified id, in catalog order.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	t, err := s.models.current(r.Context(), s)
	if err != nil {
		return err
	}
	out := modelList{Object: "list", Data: make([]modelRow, 0, len(t.models))}
	for _, m := range t.models {
		in := []string{"text"}
		if m.AcceptsImages() {
			in = append(in, "image")
		}
		name := m.Name
		if name == "" {
			name = m.ID
		}
		out.Data = append(out.Data, modelRow{
			ID: m.Provider + "/" + m.ID, Object: "model", OwnedBy: m.Provider, API: m.API,
			DisplayName: name, InputModalities: in, ContextLength: m.ContextWindow, MaxOutputTokens: m.MaxTokens,
			Kind: m.Kind,
		})
		if m.Kind != "" {
			out.Data[len(out.Data)-1].SupportsTools = new(bool)
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, body)
	return nil
}
