package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/retryafter"
	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// maxErrorBody bounds how much of a non-2xx body is read.
const maxErrorBody = 64 << 10

// transport is what the three Providers share.
type transport struct {
	provider string
	client   *http.Client
	now      func() time.Time
}

func (t transport) httpClient() *http.Client {
	if t.client != nil {
		return t.client
	}
	return http.DefaultClient
}

func (t transport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// post sends body and returns the 2xx response, or an *UpstreamError
// (non-2xx, transport failure) or the context's error.
func (t *transport) post(ctx context.Context, url string, h http.Header, body []byte) (*http.Response, error) {
	hreq, release, err := newPost(ctx, url, h, body)
	if err != nil {
		return nil, err
	}
	resp, err := t.httpClient().Do(hreq)
	release()
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, t.failed(ctx, resp, err)
	}
	return resp, nil
}

// newPost builds the POST of body. Its readers drop body once the
// transport has closed them (httpx.NewBufferRequest): the response keeps
// the request for the whole stream, and an agent's request is often
// hundreds of KB. release is called once Client.Do has returned.
func newPost(ctx context.Context, url string, h http.Header, body []byte) (hreq *http.Request, release func(), err error) {
	hreq, release, err = httpx.NewBufferRequest(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, nil, fmt.Errorf("openai: build request: %w", err)
	}
	hreq.Header = h
	return hreq, release, nil
}

// failed is post's error for a transport failure (err) or a non-2xx
// response.
func (t *transport) failed(ctx context.Context, resp *http.Response, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("openai: %w", ctx.Err())
		}
		msg, cause := httpx.TransportFailure(err)
		return llm.TransportError(t.provider, msg, cause)
	}
	defer resp.Body.Close()
	return t.httpError(resp)
}

// httpError reads a non-2xx response into an *UpstreamError. JSON bodies
// of the OpenAI shape ({"error":{…}}), the Anthropic shape, {"detail":…}
// and plain text (the ChatGPT usage-limit message) are understood.
func (t transport) httpError(resp *http.Response) *llm.UpstreamError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ue := parseErrorBody(b)
	ue.Provider = t.provider
	ue.Status = resp.StatusCode
	ue.RequestID = resp.Header.Get("x-request-id")
	ra := retryafter.Parse(resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"), t.clock())
	if ra > 0 {
		ue.RetryAfter = ra
	}
	if ue.Message == "" {
		ue.Message = http.StatusText(resp.StatusCode)
	}
	return ue
}

// errorJSON is the union of the error body shapes.
type errorJSON struct {
	Error  json.RawMessage `json:"error"`
	Detail json.RawMessage `json:"detail"`
	// Flat forms (Responses error events).
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

type errorObject struct {
	Message         string          `json:"message"`
	Type            string          `json:"type"`
	Code            json.RawMessage `json:"code"`
	ResetsInSeconds float64         `json:"resets_in_seconds"`
}

// parseErrorBody extracts type, code and message from an error body.
func parseErrorBody(b []byte) *llm.UpstreamError {
	ue := &llm.UpstreamError{}
	var ej errorJSON
	if json.Unmarshal(b, &ej) != nil {
		ue.Message = truncate(strings.TrimSpace(string(b)), 2000)
		return ue
	}
	var eo errorObject
	switch {
	case len(ej.Error) > 0 && ej.Error[0] == '{':
		_ = json.Unmarshal(ej.Error, &eo)
	case len(ej.Error) > 0 && ej.Error[0] == '"':
		_ = json.Unmarshal(ej.Error, &eo.Message)
	case len(ej.Detail) > 0:
		if json.Unmarshal(ej.Detail, &eo.Message) != nil {
			eo.Message = string(ej.Detail)
		}
	default:
		eo = errorObject{Message: ej.Message, Code: ej.Code}
		if ej.Type != "error" {
			eo.Type = ej.Type
		}
	}
	ue.Message, ue.Type, ue.Code = eo.Message, eo.Type, rawCode(eo.Code)
	if ue.Message == "" && ue.Type == "" && ue.Code == "" {
		ue.Message = truncate(strings.TrimSpace(string(b)), 2000)
	}
	if eo.ResetsInSeconds > 0 {
		ue.RetryAfter = retryafter.Seconds(eo.ResetsInSeconds)
	}
	return ue
}

// rawCode renders a string or numeric code.
func rawCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return string(raw)
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sseLoop reads SSE events from body and hands each data payload to
// handle until handle returns false or the stream ends. It returns the
// read error (nil at a clean EOF).
func sseLoop(body io.Reader, handle func(name string, data []byte) bool) error {
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if ev.Unterminated && !json.Valid(ev.Data) && string(ev.Data) != "[DONE]" {
			return nil // a cut-off final event: treated as EOF
		}
		if !handle(ev.Name, ev.Data) {
			return nil
		}
	}
}

// streamFailure is the canonical error for a stream that stopped: the
// context's error when it was cancelled, else the read error or a
// truncation.
func streamFailure(ctx context.Context, provider string, readErr error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if readErr != nil {
		return &llm.UpstreamError{Provider: provider, Status: 200, Message: "stream read failed", Err: readErr}
	}
	return &llm.UpstreamError{Provider: provider, Status: 200, Message: "stream ended before its terminal event", Err: llm.ErrTruncated}
}

// baseHeaders returns the JSON + SSE request headers, the model's
// headers, the bearer credential and the allow-listed passthrough headers.
func baseHeaders(model llm.Model, cred llm.Credential, req *llm.Request, allow ...string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	for _, name := range allow {
		if v := lookupHeader(req.Headers, name); v != "" {
			h.Set(name, v)
		}
	}
	for k, v := range model.Headers {
		h.Set(k, v)
	}
	if cred.Kind != llm.CredentialNone && cred.Secret != "" {
		h.Set("Authorization", "Bearer "+cred.Secret)
	}
	return h
}

func lookupHeader(m map[string]string, name string) string {
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// joinURL appends path to base unless base already ends with it.
func joinURL(base, path string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, path) {
		return base
	}
	return base + path
}
