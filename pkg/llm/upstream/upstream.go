// Package upstream builds the provider adapter of a model's wire API. It
// is the one place that maps an llm.API* value to its adapter under
// pkg/llm (anthropic, openai, google, and the offline demo), for every caller that sends
// requests: the gateway (pkg/proxy) and the agent (cmd/omp).
package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/demo"
	"github.com/ompgo/omp/pkg/llm/google"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// Options configure the adapter New returns.
type Options struct {
	// BaseURL overrides the model's baseUrl (OMP_PROVIDER_<ID>_BASE_URL,
	// providers.<id>.baseUrl); "" keeps the model's or the adapter's
	// default.
	BaseURL string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Now is the clock (timestamps of messages); nil means time.Now.
	Now func() time.Time
}

// ErrUnsupported is wrapped by New's error for a wire API no adapter
// speaks.
var ErrUnsupported = errors.New("unsupported api")

// New returns the provider adapter of m's wire API.
func New(m llm.Model, o Options) (llm.Provider, error) {
	switch m.API {
	case llm.APIAnthropic:
		return &anthropic.Provider{BaseURL: o.BaseURL, Client: o.Client, Now: o.Now}, nil
	case llm.APIOpenAIChat:
		return &openai.ChatProvider{ProviderID: m.Provider, BaseURL: o.BaseURL, HTTPClient: o.Client, Now: o.Now}, nil
	case llm.APIOpenAIResponses:
		return &openai.ResponsesProvider{ProviderID: m.Provider, BaseURL: o.BaseURL, HTTPClient: o.Client, Now: o.Now}, nil
	case llm.APICodex:
		return &openai.CodexProvider{BaseURL: o.BaseURL, HTTPClient: o.Client, Now: o.Now}, nil
	case llm.APIGoogle:
		return &google.Gemini{BaseURL: o.BaseURL, Client: o.Client, Now: o.Now}, nil
	case llm.APIGeminiCLI:
		return &google.CodeAssist{BaseURL: o.BaseURL, Client: o.Client, Now: o.Now}, nil
	case llm.APIDemo:
		// Offline: no base URL and no client.
		return &demo.Provider{Now: o.Now}, nil
	}
	return nil, fmt.Errorf("%w %q (model %s)", ErrUnsupported, m.API, m.Key())
}
