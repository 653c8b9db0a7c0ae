package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// memSource is an in-memory vault.Source (the gateway's production source
// is the remote store; pkg/proxy must not link the SQLite vault). Refresh
// rotates the access token to "<old>~r<n>".
type memSource struct {
	mu        sync.Mutex
	entries   []vault.Entry
	refreshes []int64
	reports   []vault.UsageReport // Usage's answer
	usageErr  error               // Usage's failure
}

var _ vault.Source = (*memSource)(nil)

func (m *memSource) Snapshot(context.Context) (vault.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return vault.Snapshot{Credentials: append([]vault.Entry(nil), m.entries...)}, nil
}

func (m *memSource) Get(_ context.Context, id int64) (vault.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.ID == id {
			return e, nil
		}
	}
	return vault.Entry{}, vault.NotFoundID(id)
}

func (m *memSource) List(_ context.Context, provider string) ([]vault.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []vault.Entry
	for _, e := range m.entries {
		if provider == "" || e.Provider == provider {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memSource) Refresh(_ context.Context, id int64) (vault.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refreshes = append(m.refreshes, id)
	for i, e := range m.entries {
		if e.ID == id {
			if !e.Credential.IsOAuth() {
				return vault.Entry{}, vault.Errorf(vault.EINVALID, "Credential %d is not OAuth (provider=%s, type=api_key)", id, e.Provider)
			}
			e.Credential.Access = fmt.Sprintf("%s~r%d", e.Credential.Access, len(m.refreshes))
			m.entries[i] = e
			return e, nil
		}
	}
	return vault.Entry{}, vault.NotFoundID(id)
}

func (m *memSource) Usage(context.Context) ([]vault.UsageReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.usageErr != nil {
		return nil, m.usageErr
	}
	if m.reports == nil {
		return []vault.UsageReport{}, nil
	}
	return m.reports, nil
}

func (m *memSource) refreshed() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int64(nil), m.refreshes...)
}

const farFuture = 4102444800000 // 2100-01-01, epoch ms

func apiKeyEntry(id int64, provider, key string) vault.Entry {
	return vault.Entry{ID: id, Provider: provider, Credential: vault.Credential{Type: vault.TypeAPIKey, Key: key}}
}

func oauthEntry(id int64, provider, access string) vault.Entry {
	return vault.Entry{ID: id, Provider: provider, IdentityKey: "email:" + access + "@x",
		Credential: vault.Credential{Type: vault.TypeOAuth, Access: access, Refresh: vault.RemoteRefreshSentinel,
			Expires: farFuture, Email: access + "@x"}}
}

// upstream is a fake provider API on a real listener. handle answers
// request n (0-based) that carried credential key.
type upstream struct {
	srv *httptest.Server

	mu     sync.Mutex
	keys   []string // guarded by mu: the credential of each request
	bodies []string // guarded by mu
	handle func(w http.ResponseWriter, r *http.Request, n int, key string)
}

func newUpstream(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int, key string)) *upstream {
	t.Helper()
	u := &upstream{handle: handle}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("x-api-key")
		if tok, ok := httpx.BearerToken(r.Header.Get("Authorization")); ok {
			key = tok
		}
		u.mu.Lock()
		n := len(u.keys)
		u.keys = append(u.keys, key)
		u.bodies = append(u.bodies, string(body))
		u.mu.Unlock()
		u.handle(w, r, n, key)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.keys...)
}

func writeSSE(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
}

func writeJSON(w http.ResponseWriter, status int, header map[string]string, body string) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// anthropicText is an Anthropic Messages stream answering "Hello world".
const anthropicText = `event: message_start
data: {"type":"message_start","message":{"id":"msg_up1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"world"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`

// chatText is an OpenAI Chat Completions stream answering "Hi there".
const chatText = `data: {"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi "},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"there"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}

data: [DONE]

`

const gatewayToken = "gw-test-token"

// gateway serves a proxy.Server over src on a real listener; urls maps a
// provider to its upstream base URL.
func gateway(t testing.TB, src vault.Source, urls map[string]string, catalog *llm.Catalog, tune ...func(*proxy.Server)) *httptest.Server {
	t.Helper()
	s, err := proxy.New(proxy.Options{
		Source:  src,
		Tokens:  []string{gatewayToken},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test",
		URLs:    func(provider, kind string) string { return urls[provider] },
	})
	if err != nil {
		t.Fatal(err)
	}
	if catalog != nil {
		proxy.SetCatalog(s, catalog)
	}
	for _, f := range tune {
		f(s)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
