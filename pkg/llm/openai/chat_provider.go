package openai

import (
	"context"
	"net/http"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
)

// DefaultBaseURL is the OpenAI API base URL.
const DefaultBaseURL = provider.OpenAIBaseURL

// ChatProvider calls a Chat Completions endpoint: OpenAI itself or any
// OpenAI-compatible server. It always streams
// from upstream and asks for usage.
type ChatProvider struct {
	// ProviderID labels messages and errors ("openai", "ollama", …).
	ProviderID string
	// BaseURL is the API base ("…/v1"); "" uses the model's BaseURL, then
	// DefaultBaseURL. The caller resolves OMP_PROVIDER_<ID>_BASE_URL.
	BaseURL string
	// Compat overrides the switches derived by ResolveChatCompat when set.
	Compat *ChatCompat
	// HTTPClient sends the requests (nil = http.DefaultClient). It should
	// have no overall Timeout: streams can be long.
	HTTPClient *http.Client
	// Now is the clock for retry-after dates (nil = time.Now).
	Now func() time.Time
}

var _ llm.Provider = (*ChatProvider)(nil)

func (p *ChatProvider) baseURL(model llm.Model) string {
	switch {
	case p.BaseURL != "":
		return p.BaseURL
	case model.BaseURL != "":
		return model.BaseURL
	}
	return DefaultBaseURL
}

// Stream sends req and returns the canonical event stream. It fails
// before streaming with an *llm.UpstreamError for a non-2xx answer (status
// and retry-after set) or a transport error, and with the context's error
// when ctx ends first.
func (p *ChatProvider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	url, h, body, t := p.request(req, model, cred)
	return streamChat(ctx, t, url, h, body, model.ID)
}

// request builds the upstream request.
func (p *ChatProvider) request(req *llm.Request, model *llm.Model, cred llm.Credential) (string, http.Header, []byte, transport) {
	base := p.baseURL(*model)
	compat := ResolveChatCompat(*model, base)
	if p.Compat != nil {
		compat = *p.Compat
	}
	body := AppendChatBody(nil, req, *model, compat)
	h := baseHeaders(*model, cred, req, "OpenAI-Organization", "OpenAI-Project")
	t := transport{provider: p.providerID(*model), client: p.HTTPClient, now: p.Now}
	return joinURL(base, "/chat/completions"), h, body, t
}

// streamChat posts the request and returns its event stream.
func streamChat(ctx context.Context, t transport, url string, h http.Header, body []byte, modelID string) (*llm.Stream, error) {
	resp, err := t.post(ctx, url, h, body)
	if err != nil {
		return nil, err
	}
	seq := func(yield func(llm.Event) bool) {
		defer resp.Body.Close()
		b := llm.NewBuilder(llm.APIOpenAIChat, t.provider, modelID, yield)
		b.Message().Timestamp = t.clock().UnixMilli()
		ps := newChatParser(b)
		readErr := sseLoop(resp.Body, func(_ string, data []byte) bool { return ps.handle(data) })
		if b.Ended() {
			return
		}
		if readErr == nil && ctx.Err() == nil && ps.finish != "" {
			ps.end() // a clean EOF after finish_reason but without [DONE]
			return
		}
		b.Fail(streamFailure(ctx, t.provider, readErr))
	}
	return llm.NewStream(seq, resp.Body), nil
}

func (p *ChatProvider) providerID(model llm.Model) string {
	if p.ProviderID != "" {
		return p.ProviderID
	}
	if model.Provider != "" {
		return model.Provider
	}
	return "openai"
}
