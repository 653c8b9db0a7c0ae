// Package catalog reads models.yml: user-defined providers
// and models, such as OpenAI-compatible endpoints (Ollama, vLLM, llama.cpp,
// LiteLLM, OpenRouter), and per-model overrides of the bundled catalog.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ompgo/omp/pkg/llm"
)

// File is a parsed models.yml.
type File struct {
	Providers   map[string]Provider `yaml:"providers" json:"providers"`
	Equivalence *Equivalence        `yaml:"equivalence,omitempty" json:"equivalence,omitempty"`
}

// Equivalence maps "<provider>/<model>" keys to canonical ids.
type Equivalence struct {
	Overrides map[string]string `yaml:"overrides,omitempty" json:"overrides,omitempty"`
	Exclude   []string          `yaml:"exclude,omitempty" json:"exclude,omitempty"`
}

// Provider is one providers.<id> entry.
type Provider struct {
	BaseURL string `yaml:"baseUrl" json:"baseUrl"`
	// APIKey is an env var name, a literal or a "!command"; it is resolved
	// by the caller (internal/config), never here.
	APIKey string `yaml:"apiKey" json:"apiKey"`
	API    string `yaml:"api" json:"api"`
	// Headers are extra request headers for every model of the provider.
	Headers map[string]string `yaml:"headers" json:"headers"`
	// AuthHeader injects Authorization: Bearer <resolved apiKey>.
	AuthHeader bool `yaml:"authHeader" json:"authHeader"`
	// Auth is "apiKey" (default), "none" (keyless) or "oauth" (18.1.21:
	// the provider id's stored credential, no apiKey needed).
	Auth           string                   `yaml:"auth" json:"auth"`
	Discovery      *Discovery               `yaml:"discovery" json:"discovery"`
	ModelOverrides map[string]ModelOverride `yaml:"modelOverrides" json:"modelOverrides"`
	Models         []ModelEntry             `yaml:"models" json:"models"`
}

// Discovery configures model discovery (e.g. {type: ollama}).
type Discovery struct {
	Type string `yaml:"type" json:"type"`
}

// ModelEntry is one providers.<id>.models[] item.
type ModelEntry struct {
	ID                     string            `yaml:"id" json:"id"`
	Name                   string            `yaml:"name" json:"name"`
	API                    string            `yaml:"api" json:"api"`
	Reasoning              bool              `yaml:"reasoning" json:"reasoning"`
	Input                  []llm.Modality    `yaml:"input" json:"input"`
	Cost                   *Cost             `yaml:"cost" json:"cost"`
	ContextWindow          int               `yaml:"contextWindow" json:"contextWindow"`
	MaxTokens              int               `yaml:"maxTokens" json:"maxTokens"`
	Headers                map[string]string `yaml:"headers" json:"headers"`
	Compat                 map[string]any    `yaml:"compat" json:"compat"`
	ContextPromotionTarget string            `yaml:"contextPromotionTarget" json:"contextPromotionTarget"`
}

// ModelOverride changes fields of an existing model; nil / zero fields are
// left alone.
type ModelOverride struct {
	Name          string            `yaml:"name" json:"name"`
	Reasoning     *bool             `yaml:"reasoning" json:"reasoning"`
	Input         []llm.Modality    `yaml:"input" json:"input"`
	Cost          *Cost             `yaml:"cost" json:"cost"`
	ContextWindow int               `yaml:"contextWindow" json:"contextWindow"`
	MaxTokens     int               `yaml:"maxTokens" json:"maxTokens"`
	Headers       map[string]string `yaml:"headers" json:"headers"`
	Compat        map[string]any    `yaml:"compat" json:"compat"`
}

// Cost is a price in US dollars per million tokens.
type Cost struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cacheRead" json:"cacheRead"`
	CacheWrite float64 `yaml:"cacheWrite" json:"cacheWrite"`
}

// KnownAPIs are the api values models.yml accepts.
var KnownAPIs = []string{
	llm.APIOpenAIChat, llm.APIOpenAIResponses, llm.APICodex, "azure-openai-responses",
	llm.APIAnthropic, llm.APIGoogle, "google-vertex",
}

// ErrInvalid marks a models.yml that fails validation; the caller keeps
// the built-in models and reports it.
var ErrInvalid = errors.New("invalid models.yml")

// Parse decodes and validates a models.yml (or models.json) document.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Load reads path; when it does not exist, a sibling models.json is read
// instead. A missing pair of files is an empty File and no error.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		alt := strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
		data, err = os.ReadFile(alt)
		if errors.Is(err, fs.ErrNotExist) {
			return &File{}, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read models config: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Validate checks every provider: a known api and auth, baseUrl (and an
// apiKey unless auth is none or oauth) when models are listed, otherwise at
// least one of baseUrl, modelOverrides or discovery, an api for every model,
// and no negative contextWindow or maxTokens.
func (f *File) Validate() error {
	ids := make([]string, 0, len(f.Providers))
	for id := range f.Providers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := f.Providers[id]
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: providers.%s: %s", ErrInvalid, id, fmt.Sprintf(format, a...))
		}
		if p.API != "" && !slices.Contains(KnownAPIs, p.API) {
			return bad("unknown api %q", p.API)
		}
		if p.Auth != "" && p.Auth != "apiKey" && p.Auth != "none" && p.Auth != "oauth" {
			return bad("auth must be apiKey, none or oauth")
		}
		if len(p.Models) > 0 {
			if p.BaseURL == "" {
				return bad("baseUrl is required when models are listed")
			}
			// auth: oauth (18.1.21) takes its credential from the broker
			// or the local ladder under the provider id, not from apiKey.
			if p.APIKey == "" && p.Auth != "none" && p.Auth != "oauth" {
				return bad("apiKey is required unless auth is none")
			}
		} else if p.BaseURL == "" && len(p.ModelOverrides) == 0 && p.Discovery == nil {
			return bad("needs baseUrl, modelOverrides or discovery")
		}
		if p.Discovery != nil && p.API == "" {
			return bad("discovery needs a provider-level api")
		}
		for i, m := range p.Models {
			if m.ID == "" {
				return bad("models[%d].id is required", i)
			}
			api := m.API
			if api == "" {
				api = p.API
			}
			if api == "" {
				return bad("models[%d] (%s) has no api", i, m.ID)
			}
			if !slices.Contains(KnownAPIs, api) {
				return bad("models[%d] (%s): unknown api %q", i, m.ID, api)
			}
			if m.ContextWindow < 0 || m.MaxTokens < 0 {
				return bad("models[%d] (%s): contextWindow and maxTokens must be positive", i, m.ID)
			}
		}
		for mid, o := range p.ModelOverrides {
			if o.ContextWindow < 0 || o.MaxTokens < 0 {
				return bad("modelOverrides.%s: contextWindow and maxTokens must be positive", mid)
			}
		}
	}
	return nil
}

// Apply returns base extended with f's models and overrides. Provider-level
// baseUrl and headers apply to every model of the provider; model entries
// default to text input and the bundled catalog's limits are not assumed
// for unknown ids (0 means unknown).
func (f *File) Apply(base *llm.Catalog) *llm.Catalog {
	var add []llm.Model
	ids := make([]string, 0, len(f.Providers))
	for id := range f.Providers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, pid := range ids {
		p := f.Providers[pid]
		for _, e := range p.Models {
			m := llm.Model{
				ID: e.ID, Name: e.Name, Provider: pid, API: e.API, BaseURL: p.BaseURL,
				Reasoning: e.Reasoning, Input: e.Input, ContextWindow: e.ContextWindow, MaxTokens: e.MaxTokens,
				Headers: mergeHeaders(p.Headers, e.Headers),
			}
			if m.API == "" {
				m.API = p.API
			}
			if m.Name == "" {
				m.Name = e.ID
			}
			if len(m.Input) == 0 {
				m.Input = []llm.Modality{llm.ModalityText}
			}
			if e.Cost != nil {
				m.Cost = llm.Price(*e.Cost)
			}
			m.Compat = rawJSON(e.Compat)
			add = append(add, m)
		}
		// Overrides apply to the provider's existing models (bundled or just
		// added); the merged catalog is built only when there are some.
		if len(p.ModelOverrides) > 0 {
			cur := base.With(add...)
			for mid, o := range p.ModelOverrides {
				m, ok := cur.Lookup(pid, mid)
				if !ok {
					continue
				}
				if p.BaseURL != "" {
					m.BaseURL = p.BaseURL
				}
				applyOverride(&m, o, p.Headers)
				add = append(add, m)
			}
		}
		if len(p.Models) == 0 && p.BaseURL != "" {
			// Override-only provider: retarget its bundled models.
			for _, m := range base.Models() {
				if m.Provider == pid {
					if _, overridden := p.ModelOverrides[m.ID]; overridden {
						continue
					}
					m.BaseURL = p.BaseURL
					m.Headers = mergeHeaders(m.Headers, p.Headers)
					add = append(add, m)
				}
			}
		}
	}
	return base.With(add...)
}

func applyOverride(m *llm.Model, o ModelOverride, providerHeaders map[string]string) {
	if o.Name != "" {
		m.Name = o.Name
	}
	if o.Reasoning != nil {
		m.Reasoning = *o.Reasoning
	}
	if len(o.Input) > 0 {
		m.Input = o.Input
	}
	if o.Cost != nil {
		m.Cost = llm.Price(*o.Cost)
	}
	if o.ContextWindow > 0 {
		m.ContextWindow = o.ContextWindow
	}
	if o.MaxTokens > 0 {
		m.MaxTokens = o.MaxTokens
	}
	m.Headers = mergeHeaders(mergeHeaders(m.Headers, providerHeaders), o.Headers)
	if o.Compat != nil {
		m.Compat = rawJSON(o.Compat)
	}
}

func mergeHeaders(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func rawJSON(v map[string]any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
