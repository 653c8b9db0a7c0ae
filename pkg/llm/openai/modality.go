package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// MediaRequest is one request of the OpenAI non-chat wire (embeddings,
// images, audio, videos, rerank) to an OpenAI or OpenAI-compatible base.
type MediaRequest struct {
	// Provider names the upstream in errors.
	Provider string
	// Method is the HTTP method; "" is POST.
	Method string
	// URL is the full endpoint: the base joined with the route's path.
	URL string
	// ContentType is the body's type ("" without a body).
	ContentType string
	// Accept is the Accept header; "" sends none.
	Accept string
	// Body is sent as is, Length bytes long (-1 when unknown); nil sends
	// no body.
	Body   io.Reader
	Length int64
	// KeyHeader, when set, carries the credential's secret as is (Gemini's
	// x-goog-api-key) instead of Authorization: Bearer.
	KeyHeader string
	// Header holds extra request headers (the model's own).
	Header map[string]string
	// Client sends the request; nil is http.DefaultClient.
	Client *http.Client
	// Now is the clock of Retry-After dates; nil is time.Now.
	Now func() time.Time
}

// Send sends r with cred as its bearer and returns the 2xx response, whose
// body the caller reads and closes. A non-2xx answer or a transport failure
// is an *llm.UpstreamError read and classified as the chat calls' are; a
// cancelled ctx is the context's error.
func Send(ctx context.Context, r MediaRequest, cred llm.Credential) (*http.Response, error) {
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	hreq, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	if r.Body != nil {
		hreq.ContentLength = r.Length
		if r.Length == 0 {
			hreq.Body = http.NoBody
		}
	}
	if r.ContentType != "" {
		hreq.Header.Set("Content-Type", r.ContentType)
	}
	if r.Accept != "" {
		hreq.Header.Set("Accept", r.Accept)
	}
	for k, v := range r.Header {
		hreq.Header.Set(k, v)
	}
	if cred.Kind != llm.CredentialNone && cred.Secret != "" {
		if r.KeyHeader != "" {
			hreq.Header.Set(r.KeyHeader, cred.Secret)
		} else {
			hreq.Header.Set("Authorization", "Bearer "+cred.Secret)
		}
	}
	t := transport{provider: firstOf(r.Provider, "openai"), client: r.Client, now: r.Now}
	resp, err := t.httpClient().Do(hreq)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, t.failed(ctx, resp, err)
	}
	return resp, nil
}

// JoinURL appends path to base unless base already ends with it.
func JoinURL(base, path string) string { return joinURL(base, path) }
