package llm

import (
	"encoding/json"
	"slices"
	"sync"
)

// Modality is an input kind a model accepts.
type Modality string

// Input modalities.
const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
)

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Thinking describes how a model's reasoning is controlled.
type Thinking struct {
	// Mode is "effort" (OpenAI), "budget" (token budget),
	// "anthropic-adaptive", "anthropic-budget-effort" or "google-level".
	Mode string `json:"mode,omitempty"`
	// Efforts lists the supported effort levels.
	Efforts []Effort `json:"efforts,omitempty"`
}

// Model is one catalog entry. JSON names follow the reference catalog and
// models.yml.
type Model struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Provider string `json:"provider"`
	// API is the wire API (APIAnthropic, APIOpenAIResponses, …).
	API string `json:"api"`
	// BaseURL is the provider endpoint (an adapter's default when empty).
	BaseURL string `json:"baseUrl,omitempty"`
	// Reasoning is true for models that think.
	Reasoning bool       `json:"reasoning,omitempty"`
	Input     []Modality `json:"input,omitempty"`
	Cost      Price      `json:"cost"`
	// ContextWindow is the context size in tokens.
	ContextWindow int `json:"contextWindow,omitempty"`
	// MaxTokens is the output limit in tokens.
	MaxTokens int       `json:"maxTokens,omitempty"`
	Thinking  *Thinking `json:"thinking,omitempty"`
	// RequestModelID is the id to send upstream when it differs from ID.
	RequestModelID string `json:"requestModelId,omitempty"`
	// Headers are extra request headers for this model (models.yml).
	Headers map[string]string `json:"headers,omitempty"`
	// Compat holds models.yml compatibility switches, raw.
	Compat json.RawMessage `json:"compat,omitempty"`
	// Kind is what the model does (KindImage, KindEmbedding, …); "" is
	// KindChat.
	Kind string `json:"kind,omitempty"`
}

// Model kinds: the routes that serve them. A chat model answers the chat
// routes; every other kind has its own route.
const (
	KindChat      = "chat"
	KindJudge     = "judge"
	KindImage     = "image"
	KindTTS       = "tts"
	KindSTT       = "stt"
	KindEmbedding = "embedding"
	KindRerank    = "rerank"
	KindVideo     = "video"
)

// ModelKind returns the model's kind, KindChat when unset.
func (m Model) ModelKind() string {
	if m.Kind == "" {
		return KindChat
	}
	return m.Kind
}

// WireID returns the model id to send upstream.
func (m Model) WireID() string {
	if m.RequestModelID != "" {
		return m.RequestModelID
	}
	return m.ID
}

// AcceptsImages reports whether the model takes image input.
func (m Model) AcceptsImages() bool { return slices.Contains(m.Input, ModalityImage) }

// Key returns "provider/id".
func (m Model) Key() string { return m.Provider + "/" + m.ID }

// Catalog is an immutable set of models, looked up by provider and id.
type Catalog struct {
	models []Model
	byKey  map[string]int
	byID   map[string][]int
}

// NewCatalog returns a catalog of models; a later model with the same
// provider and id replaces an earlier one.
func NewCatalog(models ...Model) *Catalog { return newCatalog(models) }

// newCatalog is NewCatalog over the concatenation of parts, without
// building it.
func newCatalog(parts ...[]Model) *Catalog {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c := &Catalog{byKey: make(map[string]int, n), byID: make(map[string][]int, n), models: make([]Model, 0, n)}
	for _, p := range parts {
		for _, m := range p {
			key := m.Key()
			if i, ok := c.byKey[key]; ok {
				c.models[i] = m
				continue
			}
			c.byKey[key] = len(c.models)
			c.byID[m.ID] = append(c.byID[m.ID], len(c.models))
			c.models = append(c.models, m)
		}
	}
	return c
}

// With returns a new catalog holding c's models overridden and extended by
// models.
func (c *Catalog) With(models ...Model) *Catalog { return newCatalog(c.models, models) }

// Lookup returns the model with the given provider and id.
func (c *Catalog) Lookup(provider, id string) (Model, bool) {
	i, ok := c.byKey[provider+"/"+id]
	if !ok {
		return Model{}, false
	}
	return c.models[i], true
}

// ByID returns every provider's model with the given id, in catalog order.
func (c *Catalog) ByID(id string) []Model {
	idx := c.byID[id]
	out := make([]Model, len(idx))
	for j, i := range idx {
		out[j] = c.models[i]
	}
	return out
}

// Models returns a copy of all models in catalog order.
func (c *Catalog) Models() []Model { return slices.Clone(c.models) }

// Providers returns the distinct provider ids in catalog order.
func (c *Catalog) Providers() []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range c.models {
		if !seen[m.Provider] {
			seen[m.Provider] = true
			out = append(out, m.Provider)
		}
	}
	return out
}

// builtin is the bundled catalog, built on first use from catalog_gen.go
// (catalog.json as Go: decoding the JSON was most of `omp -p`'s time before
// its first request).
// The demo model comes last, so that a default choice never lands on it
// while a real provider has credentials.
var builtin = sync.OnceValue(func() *Catalog { return NewCatalog(append(builtinModels(), DemoModel())...) })

// Builtin returns the bundled catalog: the subscription providers
// (anthropic, openai, openai-codex, google, google-gemini-cli,
// google-antigravity) and the API-key providers on the Chat Completions
// and Responses wires (groq, cerebras, mistral, deepseek, together,
// fireworks, moonshot, xai), generated from the reference pi-catalog by
// scripts/gencatalog.go, and the offline demo model (DemoModel).
func Builtin() *Catalog { return builtin() }
