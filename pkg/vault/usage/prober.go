package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Prober fetches one provider's usage report for one credential.
type Prober interface {
	// ID returns the omp provider id the prober serves (e.g. "openai-codex").
	ID() string
	// Supports reports whether the prober can fetch usage for c.
	Supports(c vault.Credential) bool
	// Fetch returns the credential's report, or (nil, nil) when the provider
	// has nothing to report (expired token, non-2xx, payload without limits).
	// Errors never contain a secret.
	Fetch(ctx context.Context, req Request) (*vault.UsageReport, error)
}

// Request is one usage fetch for one credential.
type Request struct {
	// Provider is the omp provider id.
	Provider string
	// Credential is the credential to probe with (never logged).
	Credential vault.Credential
	// BaseURL overrides the prober's default usage base; "" uses the default.
	BaseURL string
	// ModelBase says BaseURL came from a models.yml provider baseUrl:
	// a prober may fall back to its default when that
	// host turns out to have no usage endpoint. An explicit usage URL never
	// falls back.
	ModelBase bool
	// HTTP is the client for upstream calls; nil means http.DefaultClient.
	HTTP *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings without secrets; nil discards them.
	Logger *slog.Logger
	// Wait sleeps between retries; nil waits on a timer honouring ctx.
	Wait func(ctx context.Context, d time.Duration) error
}

func (r Request) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r Request) nowMs() int64 { return r.now().UnixMilli() }

func (r Request) client() *http.Client {
	if r.HTTP != nil {
		return r.HTTP
	}
	return http.DefaultClient
}

func (r Request) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (r Request) wait(ctx context.Context, d time.Duration) error {
	if r.Wait != nil {
		return r.Wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxBody bounds every upstream response body we read.
const maxBody = 4 << 20

// StatusError is a non-2xx upstream answer. Body is not kept: it may echo
// request material.
type StatusError struct {
	URL    string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("usage request %s: HTTP %d", e.URL, e.Status)
}

// do sends req and returns the status, headers and body (bounded). Non-2xx
// answers are returned, not turned into errors, so callers can classify.
func do(hc *http.Client, req *http.Request) (int, http.Header, []byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("usage request %s: %w", redactURL(req.URL.String()), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("usage response %s: %w", redactURL(req.URL.String()), err)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// redactURL drops the query string (it may carry parameters we do not want
// in logs) from u.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// getJSON performs a request and decodes a 2xx JSON body into a generic
// value. Non-2xx → *StatusError.
func getJSON(ctx context.Context, r Request, method, url string, headers map[string]string, body []byte) (any, http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("usage request: %w", err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	status, hdr, raw, err := do(r.client(), req)
	if err != nil {
		return nil, hdr, err
	}
	if status < 200 || status > 299 {
		return nil, hdr, &StatusError{URL: redactURL(url), Status: status}
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, hdr, fmt.Errorf("usage response %s: %w", redactURL(url), err)
	}
	return v, hdr, nil
}

func decodeJSON(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &notJSONError{err}
	}
	return v, nil
}

// notJSONError is a 2xx answer whose body is not JSON.
type notJSONError struct{ err error }

func (e *notJSONError) Error() string { return "decode JSON: " + e.err.Error() }
func (e *notJSONError) Unwrap() error { return e.err }

// Generic JSON accessors mirroring the reference's lenient parsing.

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func array(v any) []any {
	a, _ := v.([]any)
	return a
}

// number is the reference toNumber: finite JSON numbers and numeric strings.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			return x, true
		}
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	}
	return 0, false
}

func numberPtr(v any) *float64 {
	if f, ok := number(v); ok {
		return &f
	}
	return nil
}

func boolean(v any) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// trimmed returns the trimmed string at m[k], "" if absent or not a string.
func trimmed(m map[string]any, k string) string {
	return strings.TrimSpace(str(m[k]))
}

func ptr[T any](v T) *T { return &v }

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// percentAmount builds the amount of a 0–100 utilisation.
func percentAmount(used *float64) vault.UsageAmount {
	if used == nil {
		return vault.UsageAmount{Unit: "percent"}
	}
	c := clamp(*used, 0, 100)
	f := c / 100
	return vault.UsageAmount{
		Used: ptr(c), Limit: ptr(100.0), Remaining: ptr(math.Max(0, 100-c)),
		UsedFraction: ptr(f), RemainingFraction: ptr(math.Max(0, 1-f)), Unit: "percent",
	}
}

// statusFor maps a used fraction to a status (≥ 1 exhausted, ≥ 0.9 warning).
func statusFor(used *float64) string {
	switch {
	case used == nil:
		return vault.StatusUnknown
	case *used >= 1:
		return vault.StatusExhausted
	case *used >= 0.9:
		return vault.StatusWarning
	}
	return vault.StatusOK
}

// parseISO parses an ISO-8601 timestamp into epoch ms.
func parseISO(v any) *int64 {
	s := strings.TrimSpace(str(v))
	if s == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return ptr(t.UnixMilli())
		}
	}
	return nil
}

// setMeta sets metadata[k] unless v is the zero string (JavaScript drops
// undefined values).
func setMeta(m map[string]any, k string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case *bool:
		if x == nil {
			return
		}
		v = *x
	}
	m[k] = v
}

// extra returns the string stored under k in the credential's Extra.
func extra(c vault.Credential, k string) string {
	raw, ok := c.Extra[k]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func trimBase(s string) string { return strings.TrimRight(strings.TrimSpace(s), "/") }
