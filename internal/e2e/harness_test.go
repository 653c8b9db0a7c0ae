package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

const waitLong = 5 * time.Second

// upReq is one inference request a fake upstream received.
type upReq struct {
	key    string // the credential: Bearer token, x-api-key or x-goog-api-key
	uri    string // path and query
	header http.Header
	body   string
}

// wire is where one upstream API takes inference requests.
type wire struct {
	provider string // the vault provider whose URLs point at the fake
	base     string // the path of the provider's baseUrl on the fake
	route    string // the inference endpoint, a ServeMux pattern
}

var (
	anthropicWire  = wire{"anthropic", "", "POST /v1/messages"}
	responsesWire  = wire{"openai", "/v1", "POST /v1/responses"}
	codexWire      = wire{"openai-codex", "/backend-api", "POST /backend-api/codex/responses"}
	geminiWire     = wire{"google", "/v1beta", "POST /v1beta/models/{call}"}
	codeAssistWire = wire{"google-gemini-cli", "", "POST /v1internal:streamGenerateContent"}
	chatWire       = wire{"groq", "/openai/v1", "POST /openai/v1/chat/completions"}
)

// fakeUpstream is one provider's API on one httptest.Server: the
// inference endpoint of its wire (answered by handle), the OAuth token
// endpoint the broker refreshes against (Anthropic-shaped), and the OAuth
// usage endpoints the broker probes (Anthropic's and Codex's).
type fakeUpstream struct {
	srv  *httptest.Server
	wire wire

	mu       sync.Mutex
	reqs     []upReq  // guarded by mu
	refresh  []string // guarded by mu: refresh tokens presented at the token endpoint
	handle   func(w http.ResponseWriter, r *http.Request, n int, key string)
	problems []string
}

// newFake is the fake Anthropic API.
func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int, key string)) *fakeUpstream {
	t.Helper()
	return newUpstream(t, anthropicWire, handle)
}

func newUpstream(t *testing.T, wr wire, handle func(w http.ResponseWriter, r *http.Request, n int, key string)) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{wire: wr, handle: handle}
	mux := http.NewServeMux()
	mux.HandleFunc(wr.route, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // the handler may read it too
		key := r.Header.Get("x-api-key")
		if key == "" {
			key = r.Header.Get("x-goog-api-key")
		}
		if tok, ok := httpx.BearerToken(r.Header.Get("Authorization")); ok {
			key = tok
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, upReq{key: key, uri: r.URL.RequestURI(), header: r.Header.Clone(), body: string(body)})
		h := f.handle
		f.mu.Unlock()
		h(w, r, n, key)
	})
	mux.HandleFunc("POST /v1/oauth/token", func(w http.ResponseWriter, r *http.Request) {
		body := map[string]string{} // Anthropic's endpoint takes JSON, the others a form
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			_ = json.NewDecoder(r.Body).Decode(&body)
		} else if r.ParseForm() == nil {
			for k := range r.PostForm {
				body[k] = r.PostForm.Get(k)
			}
		}
		f.mu.Lock()
		f.refresh = append(f.refresh, body["refresh_token"])
		n := len(f.refresh)
		f.mu.Unlock()
		if body["grant_type"] != "refresh_token" {
			f.problem("token grant_type %q", body["grant_type"])
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"token_type": "Bearer", "access_token": fmt.Sprintf("sk-ant-oat01-e2e-minted-%d", n),
			"refresh_token": fmt.Sprintf("sk-ant-ort01-e2e-rotated-%d", n), "expires_in": 28800,
			"scope":   "user:inference user:profile",
			"account": map[string]any{"uuid": "acct-e2e", "email_address": "alice@example.com"},
		})
	})
	mux.HandleFunc("GET /api/oauth/usage", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"five_hour":{"utilization":10,"resets_at":"2030-01-01T05:00:00Z"},"seven_day":{"utilization":20,"resets_at":"2030-01-07T00:00:00Z"}}`)
	})
	mux.HandleFunc("GET /wham/usage", func(w http.ResponseWriter, r *http.Request) {
		// Codex usage: both windows healthy.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":false,`+
			`"primary_window":{"used_percent":10,"limit_window_seconds":18000,"reset_after_seconds":600},`+
			`"secondary_window":{"used_percent":20,"limit_window_seconds":604800,"reset_after_seconds":6000}}}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.problem("unexpected upstream request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.problems {
			t.Errorf("fake upstream: %s", p)
		}
	})
	return f
}

func (f *fakeUpstream) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *fakeUpstream) requests() []upReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upReq(nil), f.reqs...)
}

func (f *fakeUpstream) keys() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.key)
	}
	return out
}

func (f *fakeUpstream) refreshes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refresh...)
}

// urls points every URL of the fake's provider, in both programs, at the
// fake.
func (f *fakeUpstream) urls(provider, kind string) string {
	if provider != f.wire.provider {
		return ""
	}
	switch kind {
	case "tokenUrl":
		return f.srv.URL + "/v1/oauth/token"
	case "usageUrl":
		return f.srv.URL
	case "baseUrl":
		return f.srv.URL + f.wire.base
	}
	return ""
}

// stack is a running broker and a gateway following it.
type stack struct {
	fake         *fakeUpstream
	broker       *brokerclient.Client
	gw           *gateway.Main
	gwURL, token string // the gateway's URL and bearer token
}

func startStack(t *testing.T, f *fakeUpstream) *stack {
	t.Helper()
	dir := t.TempDir()
	b := startBroker(t, f, dir, "127.0.0.1:0")
	gm, token := startGateway(t, f, b, filepath.Join(dir, "gw"))
	return &stack{fake: f, broker: b.client(), gw: gm, gwURL: gm.URL(), token: token}
}

// runningBroker is a broker started by startBroker; stop ends it before
// the test does (a restart is a second startBroker on the same dir and
// address).
type runningBroker struct {
	m     *broker.Main
	token string
	stop  func()
}

func (b *runningBroker) client() *brokerclient.Client {
	return brokerclient.New(b.m.URL(), b.token, nil)
}

// startBroker runs a broker on the vault in dir, listening on bind. tune
// adjusts the config.
func startBroker(t *testing.T, f *fakeUpstream, dir, bind string, tune ...func(*broker.Config)) *runningBroker {
	t.Helper()
	bm := &broker.Main{Config: broker.Config{
		Bind:         bind,
		DBPath:       filepath.Join(dir, "vault.db"),
		TokenPath:    filepath.Join(dir, "auth-broker.token"),
		KeyPath:      filepath.Join(dir, "vault.key"),
		Version:      "e2e",
		Logger:       slog.New(slog.DiscardHandler),
		HTTPClient:   &http.Client{Timeout: waitLong},
		URLs:         f.urls,
		PollInterval: 50 * time.Millisecond,
		KeepAlive:    200 * time.Millisecond,
	}}
	for _, f := range tune {
		f(&bm.Config)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if err := bm.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	raw, err := os.ReadFile(bm.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	bctx, bstop := context.WithCancel(context.Background())
	bdone := make(chan error, 1)
	go func() { bdone <- bm.Run(bctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			bstop()
			if err := <-bdone; err != nil {
				t.Errorf("broker Run: %v", err)
			}
			bm.Close()
		})
	}
	t.Cleanup(stop)
	return &runningBroker{m: bm, token: strings.TrimSpace(string(raw)), stop: stop}
}

// startGateway runs a gateway following broker b, with its state in dir;
// it returns the gateway and its bearer token. tune adjusts the config.
func startGateway(t *testing.T, f *fakeUpstream, b *runningBroker, dir string, tune ...func(*gateway.Config)) (*gateway.Main, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	gm := &gateway.Main{Config: gateway.Config{
		Bind:          "127.0.0.1:0",
		TokenPath:     filepath.Join(dir, "auth-gateway.token"),
		BrokerURL:     b.m.URL(),
		BrokerToken:   b.token,
		URLs:          f.urls,
		Logger:        slog.New(slog.DiscardHandler),
		Out:           io.Discard,
		Version:       "e2e",
		ShutdownGrace: time.Second,
	}}
	for _, f := range tune {
		f(&gm.Config)
	}
	if err := gm.Open(ctx); err != nil {
		t.Fatalf("gateway Open: %v", err)
	}
	gctx, gstop := context.WithCancel(context.Background())
	gdone := make(chan error, 1)
	go func() { gdone <- gm.Run(gctx) }()
	t.Cleanup(func() { // registered after the broker's: runs before the broker stops
		gstop()
		if err := <-gdone; err != nil {
			t.Errorf("gateway Run: %v", err)
		}
		gm.Close()
	})
	raw, err := os.ReadFile(gm.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	return gm, strings.TrimSpace(string(raw))
}

// upload stores cred at the broker and waits until the gateway's store
// holds n credentials of provider; it returns the uploaded entry's id.
func (s *stack) upload(t *testing.T, provider string, cred vault.Credential, n int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	es, err := s.broker.Upload(ctx, provider, cred)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	var id int64
	for _, e := range es {
		if (cred.Key != "" && e.Credential.Key == cred.Key) || (cred.Access != "" && e.Credential.Access == cred.Access) {
			id = e.ID
		}
	}
	if id == 0 {
		t.Fatalf("upload did not return the credential: %+v", es)
	}
	s.waitStore(t, provider, n)
	return id
}

func (s *stack) waitStore(t *testing.T, provider string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for {
		es, err := s.gw.Store.List(ctx, provider)
		if err == nil && len(es) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway's store holds %d %s credentials, want %d (%v)", len(es), provider, n, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkNoLeak fails the test when upstream request i carries the
// gateway's token, the remote refresh sentinel or one of the refresh
// tokens, in its headers or body.
func (s *stack) checkNoLeak(t *testing.T, i int, r upReq, refresh ...string) {
	t.Helper()
	all := r.uri + "\n" + r.body
	for k, vs := range r.header {
		all += "\n" + k + ": " + strings.Join(vs, ",")
	}
	if strings.Contains(all, s.token) {
		t.Errorf("request %d carries the gateway token", i)
	}
	for _, tok := range append(refresh, vault.RemoteRefreshSentinel) {
		if tok != "" && strings.Contains(all, tok) {
			t.Errorf("request %d carries a refresh token", i)
		}
	}
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

// replay reads a recorded upstream stream: path is under pkg/llm, e.g.
// "anthropic/testdata/upstream_truncated.sse".
func replay(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "pkg", "llm", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anthropicText is an Anthropic Messages stream answering "Hello world".
const anthropicText = `event: message_start
data: {"type":"message_start","message":{"id":"msg_up1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

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

const usageLimit429 = `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your usage limit for this account"}}`

const expired401 = `{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired"}}`
