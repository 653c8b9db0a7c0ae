package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
)

// ResponsesProvider calls the OpenAI Responses API.
type ResponsesProvider struct {
	// ProviderID labels messages and errors (default: the model's
	// provider, then "openai").
	ProviderID string
	// BaseURL is the API base ("…/v1"); "" uses the model's BaseURL, then
	// DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests (nil = http.DefaultClient).
	HTTPClient *http.Client
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

var _ llm.Provider = (*ResponsesProvider)(nil)

// Stream sends req to /responses and returns the canonical stream; the
// failure contract is ChatProvider.Stream's.
func (p *ResponsesProvider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	url, h, body, t := p.request(req, model, cred)
	return streamResponses(ctx, t, url, h, body, llm.APIOpenAIResponses, model.ID)
}

// request builds the upstream request.
func (p *ResponsesProvider) request(req *llm.Request, model *llm.Model, cred llm.Credential) (string, http.Header, []byte, transport) {
	base := firstOf(p.BaseURL, model.BaseURL, DefaultBaseURL)
	body := AppendResponsesBody(nil, req, *model)
	h := baseHeaders(*model, cred, req, "OpenAI-Organization", "OpenAI-Project", "OpenAI-Beta")
	t := transport{provider: firstOf(p.ProviderID, model.Provider, "openai"), client: p.HTTPClient, now: p.Now}
	return joinURL(base, "/responses"), h, body, t
}

// Codex backend constants (reference pi-catalog wire/codex.ts).
const (
	// DefaultCodexBaseURL is the ChatGPT backend base URL.
	DefaultCodexBaseURL = provider.CodexBaseURL
	// DefaultCodexOriginator is the originator header value.
	DefaultCodexOriginator = provider.CodexOriginator
	// DefaultCodexClientVersion is the Codex client version sent in the
	// version header (the backend gates models on it).
	DefaultCodexClientVersion = provider.CodexClientVersion
	codexJWTClaim             = provider.OpenAIAuthClaim
)

// CodexProvider calls the ChatGPT-Codex responses backend with a ChatGPT
// OAuth access token: the request always streams
// with store:false, and the output is rebuilt from output_item.done.
type CodexProvider struct {
	// ProviderID labels messages and errors (default "openai-codex").
	ProviderID string
	// BaseURL is the backend base; "" uses the model's BaseURL, then
	// DefaultCodexBaseURL. "/codex/responses" is appended.
	BaseURL string
	// Originator is the originator header (default
	// DefaultCodexOriginator); an inbound originator header wins.
	Originator string
	// ClientVersion is the version header (default
	// DefaultCodexClientVersion).
	ClientVersion string
	// HTTPClient sends the requests (nil = http.DefaultClient).
	HTTPClient *http.Client
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

var _ llm.Provider = (*CodexProvider)(nil)

// Stream sends req to the Codex backend. The account id comes from
// cred.AccountID, else from the access token's ChatGPT claim, else from
// an inbound chatgpt-account-id header.
func (p *CodexProvider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	url, h, body, t := p.request(req, model, cred)
	return streamResponses(ctx, t, url, h, body, llm.APICodex, model.ID)
}

// request builds the upstream request.
func (p *CodexProvider) request(req *llm.Request, model *llm.Model, cred llm.Credential) (string, http.Header, []byte, transport) {
	base := firstOf(p.BaseURL, model.BaseURL, DefaultCodexBaseURL)
	url := strings.TrimRight(base, "/")
	switch {
	case strings.HasSuffix(url, "/codex/responses"):
	case strings.HasSuffix(url, "/codex"):
		url += "/responses"
	default:
		url += "/codex/responses"
	}
	body := AppendCodexBody(nil, req, *model)
	h := baseHeaders(*model, cred, req, "originator", "session_id", "conversation_id")
	h.Set("OpenAI-Beta", "responses=experimental")
	if h.Get("originator") == "" {
		h.Set("originator", firstOf(p.Originator, DefaultCodexOriginator))
	}
	h.Set("version", firstOf(p.ClientVersion, DefaultCodexClientVersion))
	account := firstOf(cred.AccountID, codexAccountID(cred.Secret), lookupHeader(req.Headers, "chatgpt-account-id"))
	if account != "" {
		h.Set("chatgpt-account-id", account)
	}
	if sid := firstOf(req.SessionID, req.PromptCacheKey); sid != "" {
		if h.Get("session_id") == "" {
			h.Set("session_id", sid)
		}
		if h.Get("conversation_id") == "" {
			h.Set("conversation_id", sid)
		}
	}
	t := transport{provider: firstOf(p.ProviderID, model.Provider, "openai-codex"), client: p.HTTPClient, now: p.Now}
	return url, h, body, t
}

// codexAccountID reads chatgpt_account_id from a ChatGPT access token
// (a JWT); "" when the token is not one.
func codexAccountID(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims map[string]json.RawMessage
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	var auth struct {
		AccountID string `json:"chatgpt_account_id"`
	}
	if json.Unmarshal(claims[codexJWTClaim], &auth) != nil {
		return ""
	}
	return auth.AccountID
}

// streamResponses posts the request and returns its event stream.
func streamResponses(ctx context.Context, t transport, url string, h http.Header, body []byte, api, modelID string) (*llm.Stream, error) {
	resp, err := t.post(ctx, url, h, body)
	if err != nil {
		return nil, err
	}
	seq := func(yield func(llm.Event) bool) {
		defer resp.Body.Close()
		b := llm.NewBuilder(api, t.provider, modelID, yield)
		b.Message().Timestamp = t.clock().UnixMilli()
		ps := newRespParser(b, api)
		readErr := sseLoop(resp.Body, func(_ string, data []byte) bool { return ps.handle(data) })
		if b.Ended() {
			return
		}
		b.Fail(streamFailure(ctx, t.provider, readErr))
	}
	return llm.NewStream(seq, resp.Body), nil
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
