package google

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/httpx"
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
func (g *Gemini) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	uc, err := g.prepare(req, model, &cred)
	if err != nil {
		return nil, err
	}
	return uc.open(ctx, model)
}

// prepare builds the streamGenerateContent call of req.
func (g *Gemini) prepare(req *llm.Request, model *llm.Model, cred *llm.Credential) (*upstreamCall, error) {
	body, err := BuildRequest(req, *model, Target{})
	if err != nil {
		return nil, err
	}
	base := firstNonEmpty(g.BaseURL, model.BaseURL, DefaultBaseURL)
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
	return &upstreamCall{
		c:         caller{client: g.Client, now: g.Now, provider: model.Provider},
		endpoints: []string{strings.TrimRight(base, "/") + "/models/" + url.PathEscape(model.WireID()) + ":streamGenerateContent?alt=sse"},
		header:    h,
		raw:       body.AppendJSON(make([]byte, 0, 4096)),
		api:       llm.APIGoogle,
		opts:      DecoderOptions{Request: body, NewID: g.NewID, Price: model.Cost},
	}, nil
}

// upstreamCall is a prepared streaming call: the endpoints to try in
// order (Antigravity fails over to its sandbox), the headers and body, and
// how to decode the answer.
type upstreamCall struct {
	c         caller
	endpoints []string
	header    http.Header
	raw       []byte
	api       string
	opts      DecoderOptions
}

// open sends the call and wraps the 2xx answer as the canonical stream.
func (uc *upstreamCall) open(ctx context.Context, model *llm.Model) (*llm.Stream, error) {
	var resp *http.Response
	var err error
	if len(uc.endpoints) == 1 { // all but Antigravity: no failover
		resp, err = uc.c.post(ctx, uc.endpoints[0], uc.header, uc.raw)
	} else {
		resp, err = uc.send(ctx)
	}
	if err != nil {
		return nil, err
	}
	return uc.c.stream(ctx, resp, model, uc.api, &uc.opts), nil
}

// send posts the call to each endpoint in turn until one answers, or
// fails in a way the next would not mend.
func (uc *upstreamCall) send(ctx context.Context) (*http.Response, error) {
	for i := 0; ; i++ {
		h := uc.header
		if i > 0 {
			h = h.Clone() // the failed attempt's request may still hold the first
		}
		resp, err := uc.c.post(ctx, uc.endpoints[i], h, uc.raw)
		if err == nil || i == len(uc.endpoints)-1 || ctx.Err() != nil || !transient(err) {
			return resp, err
		}
	}
}

// caller holds what both providers need to talk HTTP.
type caller struct {
	client   *http.Client
	now      func() time.Time
	provider string
}

func (c *caller) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// post sends body and returns a 2xx response; any other status is read and
// returned as an *llm.UpstreamError.
func (c *caller) post(ctx context.Context, endpoint string, h http.Header, body []byte) (*http.Response, error) {
	hr, release, err := newPost(ctx, endpoint, h, body)
	if err != nil {
		return nil, err
	}
	client := c.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	release()
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.failed(ctx, resp, err)
	}
	return resp, nil
}

// newPost builds the POST of body; as openai's, its readers drop body
// once the transport has closed them (the response keeps the request for
// the whole stream). release is called once Client.Do has returned.
func newPost(ctx context.Context, endpoint string, h http.Header, body []byte) (hr *http.Request, release func(), err error) {
	hr, release, err = httpx.NewBufferRequest(ctx, http.MethodPost, endpoint, body)
	if err != nil {
		return nil, nil, fmt.Errorf("google: build request: %w", err)
	}
	hr.Header = h
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	return hr, release, nil
}

// failed is post's error for a transport failure (err) or a non-2xx
// response.
func (c *caller) failed(ctx context.Context, resp *http.Response, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("google: %w", ctx.Err())
		}
		msg, cause := httpx.TransportFailure(err)
		return llm.TransportError(c.provider, msg, cause)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return upstreamError(c.provider, resp.StatusCode, resp.Header, b, c.clock())
}

// stream wraps a 2xx streaming response as a canonical Stream.
func (c *caller) stream(ctx context.Context, resp *http.Response, model *llm.Model, api string, opts *DecoderOptions) *llm.Stream {
	now := c.clock()
	// What the stream needs, not what holds it: the response keeps the
	// request, and opts's call the encoded body.
	provider, id, o, body := model.Provider, model.ID, *opts, resp.Body
	seq := iter.Seq[llm.Event](func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(api, provider, id, yield)
		b.Message().Timestamp = now.UnixMilli()
		if !b.Start() {
			return
		}
		NewDecoder(b, o).consume(ctx, body)
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
