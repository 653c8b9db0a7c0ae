package google

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
)

// DefaultBaseURL is the Gemini Developer API root, version included.
const DefaultBaseURL = provider.GeminiBaseURL

// Gemini is the upstream Provider of the Gemini Developer API
// (API key in x-goog-api-key; an OAuth credential is sent as a Bearer token).
type Gemini struct {
	// BaseURL overrides the API root including the version segment, e.g.
	// "https://generativelanguage.googleapis.com/v1beta" (default: the
	// model's BaseURL, else DefaultBaseURL). The caller resolves
	// OMP_PROVIDER_<ID>_BASE_URL into it.
	BaseURL string
	// Client sends the requests (default http.DefaultClient).
	Client *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID returns ids for tool calls Gemini sends without one (default:
	// "call_" + 24 random hex digits).
	NewID func() string
}

var _ llm.Provider = (*Gemini)(nil)

// Stream calls streamGenerateContent?alt=sse and returns the canonical
// event stream. A non-2xx answer is returned as an *llm.UpstreamError.
func (g *Gemini) Stream(ctx context.Context, req *llm.Request, model llm.Model, cred llm.Credential) (*llm.Stream, error) {
	body, err := BuildRequest(req, model, Target{})
	if err != nil {
		return nil, err
	}
	raw := body.AppendJSON(make([]byte, 0, 4096))
	base := firstNonEmpty(g.BaseURL, model.BaseURL, DefaultBaseURL)
	endpoint := strings.TrimRight(base, "/") + "/models/" + url.PathEscape(model.WireID()) + ":streamGenerateContent?alt=sse"
	h := http.Header{}
	switch cred.Kind {
	case llm.CredentialAPIKey:
		h.Set("x-goog-api-key", cred.Secret)
	case llm.CredentialOAuth:
		h.Set("Authorization", "Bearer "+cred.Secret)
	}
	for k, v := range model.Headers {
		h.Set(k, v)
	}
	c := caller{client: g.Client, now: g.Now, provider: model.Provider}
	resp, err := c.post(ctx, endpoint, h, raw)
	if err != nil {
		return nil, err
	}
	return c.stream(ctx, resp, model, llm.APIGoogle, DecoderOptions{Request: body, NewID: g.NewID, Price: model.Cost}), nil
}

// caller holds what both providers need to talk HTTP.
type caller struct {
	client   *http.Client
	now      func() time.Time
	provider string
}

func (c caller) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// post sends body and returns a 2xx response; any other status is read and
// returned as an *llm.UpstreamError.
func (c caller) post(ctx context.Context, endpoint string, h http.Header, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("google: build request: %w", err)
	}
	hr.Header = h
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	client := c.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("google: %w", ctx.Err())
		}
		return nil, &llm.UpstreamError{Provider: c.provider, Message: "request failed", Err: redactURL(err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, upstreamError(c.provider, resp.StatusCode, resp.Header, b, c.clock())
	}
	return resp, nil
}

// redactURL drops the request URL from a transport error: a ?key= query
// would leak a credential.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// stream wraps a 2xx streaming response as a canonical Stream.
func (c caller) stream(ctx context.Context, resp *http.Response, model llm.Model, api string, opts DecoderOptions) *llm.Stream {
	now := c.clock()
	seq := iter.Seq[llm.Event](func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(api, model.Provider, model.ID, yield)
		b.Message().Timestamp = now.UnixMilli()
		if !b.Start() {
			return
		}
		NewDecoder(b, opts).consume(ctx, resp.Body)
	})
	return llm.NewStream(seq, resp.Body)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// randomCallID returns "call_" and 24 random hex digits.
func randomCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
