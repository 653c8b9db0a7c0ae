package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// Client timeouts.
const (
	DefaultTimeout      = 10 * time.Second // per attempt
	DefaultUsageTimeout = 30 * time.Second // GET /v1/usage: a cold broker fan-out can be slow
	maxAttempts         = 2                // one retry, on network errors only
)

// Client is the broker's HTTP client. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	// Timeout is the per-attempt timeout (default DefaultTimeout); the
	// long-poll uses max(Timeout, wait+1s); the stream has none.
	Timeout time.Duration
	// UsageTimeout is the per-attempt timeout of Usage (default
	// DefaultUsageTimeout).
	UsageTimeout time.Duration
	// Logger receives the warning of an upload retried without extension
	// fields (nil: slog.Default()).
	Logger *slog.Logger

	// observedCreds: the broker's last snapshot or stream answer announced
	// ObservedCredentialIDs.
	observedCreds atomic.Bool
}

// noteCapabilities records what the broker announced on a snapshot or
// stream answer (a broker that stops announcing, e.g. after a downgrade,
// gets the reference shape again).
func (c *Client) noteCapabilities(h http.Header) {
	on := false
	for _, v := range h.Values(api.CapabilitiesHeader) {
		for t := range strings.SplitSeq(v, ",") {
			on = on || strings.TrimSpace(t) == api.ObservedCredentialIDs
		}
	}
	c.observedCreds.Store(on)
}

// ObservedCredentialIDs reports whether the broker announced that it takes
// credentialId on observed-usage entries (from the last snapshot or
// stream answer).
func (c *Client) ObservedCredentialIDs() bool { return c.observedCreds.Load() }

// Capabilities is the value of the capabilities header the client
// sends on snapshot and stream requests (as 18.1.21 clients do):
// a broker then serves the 18.1.21 credential fields. The
// second token asks a Go broker to announce observed-usage attribution
// (ObservedCredentialIDs); reference brokers look for the first only.
const Capabilities = api.CodexMeterBlockScopes + ", " + api.ObservedCredentialIDs

// New returns a client for the broker at baseURL (trailing slashes
// trimmed). hc nil means a client with no overall timeout; hc.Timeout, if
// set, must leave room for the stream (0 recommended).
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc,
		Timeout: DefaultTimeout, UsageTimeout: DefaultUsageTimeout}
}

// Error is every error the client returns. Message is the exact reference
// text; Status and Body are set for HTTP errors. For an HTTP
// error Err is a *vault.Error rebuilt from the response (code from the
// status, message = the broker's "error" text), for a network error the
// transport error.
type Error struct {
	Status  int    // HTTP status, 0 when no response
	Body    string // response body (HTTP errors) or validation detail
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// BrokerMessage returns the broker's {"error": …} text of an HTTP error, ""
// if there is none.
func (e *Error) BrokerMessage() string {
	var ve *vault.Error
	if errors.As(e.Err, &ve) {
		return ve.Message
	}
	return ""
}

// ErrStreamUnsupported is matched (errors.Is) by the error of Stream when the
// broker answers 404: it predates /v1/snapshot/stream; fall back to
// long-polling.
var ErrStreamUnsupported = errors.New("auth broker does not support the snapshot stream")

func httpError(prefix string, resp *http.Response, body []byte) *Error {
	status := strings.TrimSpace(resp.Status)
	if !strings.Contains(status, " ") {
		status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	var env struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	msg := prefix + status
	if resp.StatusCode == http.StatusForbidden && env.Error != "" {
		// Only our broker answers 403 (a client token on an admin route):
		// say which right is missing. Other statuses keep the reference's
		// text.
		msg += ": " + env.Error
	}
	return &Error{
		Status: resp.StatusCode, Body: string(body),
		Message: msg,
		Err:     &vault.Error{Code: api.CodeForStatus(resp.StatusCode), Message: env.Error},
	}
}

func aborted(ctx context.Context) *Error {
	return &Error{Message: "Auth broker request aborted", Err: context.Cause(ctx)}
}

// response is a fully read response.
type response struct {
	status int
	header http.Header
	body   []byte
}

type reqOpts struct {
	auth    bool
	body    any
	header  map[string]string
	timeout time.Duration
}

// do performs a request with the retry policy: one retry on network errors
// (including an attempt timeout), none on HTTP errors or a cancelled caller.
func (c *Client) do(ctx context.Context, method, path string, o reqOpts) (*response, error) {
	var payload []byte
	if o.body != nil {
		var err error
		if payload, err = json.Marshal(o.body); err != nil {
			return nil, &Error{Message: "Auth broker request failed: cannot encode body", Err: err}
		}
	}
	if ctx.Err() != nil {
		return nil, aborted(ctx)
	}
	timeout := o.timeout
	if timeout <= 0 {
		timeout = c.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var lastErr error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		resp, err := c.attempt(ctx, method, path, payload, o, timeout)
		if err == nil {
			return resp, nil
		}
		var he *Error
		if errors.As(err, &he) {
			return nil, err // HTTP errors (and unusable requests) are never retried
		}
		if ctx.Err() != nil {
			return nil, aborted(ctx)
		}
		lastErr = err
	}
	return nil, &Error{Message: fmt.Sprintf("Auth broker request failed after %d attempt(s)", maxAttempts), Err: lastErr}
}

func (c *Client) attempt(ctx context.Context, method, path string, payload []byte, o reqOpts, timeout time.Duration) (*response, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, method, c.base+path, body)
	if err != nil {
		return nil, &Error{Message: "Auth broker request failed: invalid URL", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if o.auth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range o.header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotModified {
		return nil, httpError("Auth broker request failed: ", resp, b)
	}
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// decodeBody parses a JSON body (empty → null) and validates it with fn.
func decodeBody[T any](r *response, fn func(json.RawMessage) (T, error)) (T, error) {
	var zero T
	raw := json.RawMessage(r.body)
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	} else if !json.Valid(raw) {
		// A success body may hold credentials: it is not kept on the error.
		return zero, &Error{Status: r.status, Message: "Auth broker returned malformed JSON"}
	}
	v, err := fn(raw)
	if err != nil {
		return zero, &Error{Status: r.status, Body: err.Error(), Message: "Auth broker response failed schema validation", Err: err}
	}
	return v, nil
}

// Healthz calls GET /v1/healthz (no bearer).
func (c *Client) Healthz(ctx context.Context) (api.Health, error) {
	r, err := c.do(ctx, http.MethodGet, api.PathHealthz, reqOpts{})
	if err != nil {
		return api.Health{}, err
	}
	return decodeBody(r, api.DecodeHealth)
}

// SnapshotResult is the outcome of a snapshot fetch: Status 200 with a
// Snapshot, or 304 (long-poll timed out unchanged) without one. Generation
// is the ETag's value, else the snapshot's (200) or the sent one (304).
type SnapshotResult struct {
	Status     int
	Snapshot   *vault.Snapshot
	Generation int64
	// Raw is the 200 body exactly as received (what the snapshot cache
	// stores); nil on a 304.
	Raw []byte
}

// Snapshot fetches GET /v1/snapshot. With ifGenerationGt it sends
// If-None-Match: "<gen>"; with wait > 0 it long-polls (?wait=<ms>) with an
// attempt timeout of max(Timeout, wait+1s).
func (c *Client) Snapshot(ctx context.Context, ifGenerationGt *int64, wait time.Duration) (SnapshotResult, error) {
	path := api.PathSnapshot
	o := reqOpts{auth: true, header: map[string]string{api.CapabilitiesHeader: Capabilities}}
	if wait > 0 {
		path += "?wait=" + strconv.FormatInt(wait.Milliseconds(), 10)
		o.timeout = max(c.Timeout, wait+time.Second)
	}
	if ifGenerationGt != nil {
		o.header["If-None-Match"] = `"` + strconv.FormatInt(*ifGenerationGt, 10) + `"`
	}
	r, err := c.do(ctx, http.MethodGet, path, o)
	if err != nil {
		return SnapshotResult{}, err
	}
	c.noteCapabilities(r.header)
	tag, tagged := api.ParseGenerationTag(r.header.Get("ETag"))
	if r.status == http.StatusNotModified {
		res := SnapshotResult{Status: http.StatusNotModified}
		switch {
		case tagged:
			res.Generation = tag
		case ifGenerationGt != nil:
			res.Generation = *ifGenerationGt
		}
		return res, nil
	}
	snap, err := decodeBody(r, api.DecodeSnapshot)
	if err != nil {
		return SnapshotResult{}, err
	}
	res := SnapshotResult{Status: http.StatusOK, Snapshot: &snap, Generation: snap.Generation, Raw: r.body}
	if tagged {
		res.Generation = tag
	}
	return res, nil
}

// Usage fetches GET /v1/usage with UsageTimeout per attempt.
func (c *Client) Usage(ctx context.Context) (api.Usage, error) {
	r, err := c.do(ctx, http.MethodGet, api.PathUsage, reqOpts{auth: true, timeout: c.UsageTimeout})
	if err != nil {
		return api.Usage{}, err
	}
	return decodeBody(r, api.DecodeUsage)
}

// UsageHistory fetches GET /v1/usage/history?sinceMs=<sinceMs>[&provider=].
// A broker older than 17.1.2 answers 404: an *Error with
// Status 404.
func (c *Client) UsageHistory(ctx context.Context, sinceMs int64, provider string) (api.History, error) {
	q := url.Values{"sinceMs": {strconv.FormatInt(sinceMs, 10)}}
	if provider != "" {
		q.Set("provider", provider)
	}
	return c.UsageHistoryQuery(ctx, q)
}

// UsageHistoryQuery fetches GET /v1/usage/history with the query q as
// given (sinceMs, days, provider): the gateway relays its caller's query.
// A 400 (bad days) is an *Error whose Err is a vault EINVALID error with
// the broker's message.
func (c *Client) UsageHistoryQuery(ctx context.Context, q url.Values) (api.History, error) {
	path := api.PathUsageHistory
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	r, err := c.do(ctx, http.MethodGet, path, reqOpts{auth: true, timeout: c.UsageTimeout})
	if err != nil {
		return api.History{}, err
	}
	return decodeBody(r, api.DecodeHistory)
}

// Refresh asks the broker to refresh credential id now and returns the
// refreshed entry (RotatesInMs nil).
func (c *Client) Refresh(ctx context.Context, id int64) (vault.Entry, error) {
	r, err := c.do(ctx, http.MethodPost, api.CredentialPath(id, api.ActionRefresh), reqOpts{auth: true})
	if err != nil {
		return vault.Entry{}, err
	}
	return decodeBody(r, api.DecodeRefresh)
}

// Disable soft-deletes credential id with cause ("" → the broker's default).
func (c *Client) Disable(ctx context.Context, id int64, cause string) error {
	r, err := c.do(ctx, http.MethodPost, api.CredentialPath(id, api.ActionDisable),
		reqOpts{auth: true, body: map[string]string{"cause": cause}})
	if err != nil {
		return err
	}
	_, err = decodeBody(r, api.DecodeOK)
	return err
}

// Upload upserts cred for provider and returns every active entry of that
// provider afterwards. It sends the 18.1.21 shape (extension fields
// included); when a broker answers 400 to a credential carrying extension
// fields (a 15.x broker), it warns and retries once with the 15.x field set.
func (c *Client) Upload(ctx context.Context, provider string, cred vault.Credential) ([]vault.Entry, error) {
	type body struct {
		Provider   string           `json:"provider"`
		Credential vault.Credential `json:"credential"`
	}
	r, err := c.do(ctx, http.MethodPost, api.PathCredential, reqOpts{auth: true, body: body{provider, cred}})
	var he *Error
	if err != nil && cred.HasExtensions() && errors.As(err, &he) && he.Status == http.StatusBadRequest {
		log := c.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("auth-broker rejected extended credential fields; uploaded without them", "provider", provider)
		r, err = c.do(ctx, http.MethodPost, api.PathCredential, reqOpts{auth: true, body: body{provider, cred.Base()}})
	}
	if err != nil {
		return nil, err
	}
	return decodeBody(r, api.DecodeEntries)
}

// streamURL is the stream endpoint.
func (c *Client) streamURL() string { return c.base + api.PathSnapshotStream }
