package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/usage"
)

func get(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestUsage(t *testing.T) {
	used := 0.25
	src := &memSource{reports: []vault.UsageReport{{Provider: "anthropic", FetchedAt: 7,
		Limits: []vault.UsageLimit{{ID: "5h", Label: "5h", Scope: vault.UsageScope{Provider: "anthropic"},
			Amount: vault.UsageAmount{UsedFraction: &used, Unit: "percent"}}}, Raw: map[string]any{"secret": "x"}}}}
	gw := gateway(t, src, nil, nil)
	if resp, _ := get(t, gw.URL+"/v1/usage", ""); resp.StatusCode != 401 {
		t.Errorf("without a token: %d", resp.StatusCode)
	}
	resp, body := get(t, gw.URL+"/v1/usage", gatewayToken)
	if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	want := `"reports":[{"provider":"anthropic","fetchedAt":7,"limits":[{"id":"5h","label":"5h","scope":{"provider":"anthropic"},"amount":{"usedFraction":0.25,"unit":"percent"}}]}]}`
	if !strings.HasPrefix(body, `{"generatedAt":`) || !strings.HasSuffix(body, want) || strings.Contains(body, "secret") {
		t.Errorf("body %s", body)
	}
	// A broker failure is an empty list with 200.
	src.mu.Lock()
	src.usageErr = vault.Errorf(vault.EUNAVAILABLE, "broker down")
	src.mu.Unlock()
	resp, body = get(t, gw.URL+"/v1/usage", gatewayToken)
	if resp.StatusCode != 200 || !strings.HasSuffix(body, `"reports":[]}`) {
		t.Errorf("broker failure: %d %s", resp.StatusCode, body)
	}
}

// fakeProber answers usage probes for one provider from a table of
// access tokens.
type fakeProber struct {
	id      string
	oauth   bool // supports only OAuth
	mu      sync.Mutex
	answers map[string]any // token → *vault.UsageReport | error | nil
}

func (p *fakeProber) ID() string { return p.id }
func (p *fakeProber) Supports(c vault.Credential) bool {
	return !p.oauth || c.Type == vault.TypeOAuth
}
func (p *fakeProber) Fetch(_ context.Context, r usage.Request) (*vault.UsageReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch v := p.answers[r.Credential.Access].(type) {
	case *vault.UsageReport:
		return v, nil
	case error:
		return nil, v
	}
	return nil, nil
}

func checkServer(t *testing.T, src vault.Source, urls map[string]string) *proxy.Server {
	t.Helper()
	s, err := proxy.New(proxy.Options{Source: src, Tokens: []string{gatewayToken},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		URLs:   func(p, kind string) string { return urls[p] },
		Probers: []usage.Prober{&fakeProber{id: "anthropic", oauth: true, answers: map[string]any{
			"tok-ok":      &vault.UsageReport{Provider: "anthropic", Limits: []vault.UsageLimit{}, Metadata: map[string]any{"accountId": "acct-9", "orgId": "org-1"}},
			"tok-bad":     errors.New("usage probe rejected: 401"),
			"tok-old~r1":  &vault.UsageReport{Provider: "anthropic", Limits: []vault.UsageLimit{}},
			"tok-nothing": nil,
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCredentialsCheck(t *testing.T) {
	ok := oauthEntry(1, "anthropic", "tok-ok")
	ok.Credential.Email = ""
	expired := oauthEntry(3, "anthropic", "tok-old")
	expired.Credential.Expires = 1
	src := &memSource{entries: []vault.Entry{ok, oauthEntry(2, "anthropic", "tok-bad"), expired,
		oauthEntry(4, "anthropic", "tok-nothing"), apiKeyEntry(5, "anthropic", "sk-ant"), apiKeyEntry(6, "openai", "sk-oa")}}
	s := checkServer(t, src, nil)
	srv := serve(t, s)
	resp, body := get(t, srv+"/v1/credentials/check", gatewayToken)
	if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var got struct {
		GeneratedAt int64             `json:"generatedAt"`
		Credentials []json.RawMessage `json:"credentials"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.GeneratedAt == 0 {
		t.Fatalf("%v %s", err, body)
	}
	want := []string{
		`{"id":1,"provider":"anthropic","type":"oauth","ok":true,"accountId":"acct-9","orgId":"org-1","remoteRefresh":true,"report":{"provider":"anthropic","fetchedAt":0,"limits":[],"metadata":{"accountId":"acct-9","orgId":"org-1"}}}`,
		`{"id":2,"provider":"anthropic","type":"oauth","ok":false,"email":"tok-bad@x","remoteRefresh":true,"reason":"usage probe rejected: 401"}`,
		`{"id":3,"provider":"anthropic","type":"oauth","ok":true,"email":"tok-old@x","remoteRefresh":true,"report":{"provider":"anthropic","fetchedAt":0,"limits":[]}}`,
		`{"id":4,"provider":"anthropic","type":"oauth","ok":null,"email":"tok-nothing@x","remoteRefresh":true,"reason":"usage probe returned no data for this credential"}`,
		`{"id":5,"provider":"anthropic","type":"api_key","ok":null,"reason":"usage probe does not support api_key credentials for anthropic"}`,
		`{"id":6,"provider":"openai","type":"api_key","ok":null,"reason":"no usage probe configured for provider openai"}`,
	}
	if len(got.Credentials) != len(want) {
		t.Fatalf("rows %s", body)
	}
	for i, w := range want {
		if string(got.Credentials[i]) != w {
			t.Errorf("row %d\n got %s\nwant %s", i, got.Credentials[i], w)
		}
	}
	if r := src.refreshed(); len(r) != 1 || r[0] != 3 {
		t.Errorf("refreshed %v, want the expired credential only", r)
	}
	if strings.Contains(body, "completion") {
		t.Error("the HTTP check ran the completion probe")
	}
}

// With the real Anthropic usage prober, a refused usage probe reads as the
// reference's null ("no data"), not ok=false: pi-ai's Claude usage fetch
// swallows HTTP and transport failures (make interop compares both).
func TestCheckAnthropicProbeRefused(t *testing.T) {
	var calls atomic.Int32
	usageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"type":"authentication_error"}}`)
	}))
	t.Cleanup(usageSrv.Close)
	s, err := proxy.New(proxy.Options{Source: &memSource{entries: []vault.Entry{oauthEntry(1, "anthropic", "tok-revoked")}},
		Tokens: []string{gatewayToken}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		URLs:    func(p, kind string) string { return usageSrv.URL + "/api/oauth" },
		Probers: []usage.Prober{usage.Anthropic{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, serve(t, s)+"/v1/credentials/check", gatewayToken)
	want := `{"id":1,"provider":"anthropic","type":"oauth","ok":null,"email":"tok-revoked@x","remoteRefresh":true,"reason":"usage probe returned no data for this credential"}`
	if !strings.Contains(body, want) || calls.Load() != 1 {
		t.Errorf("calls=%d body %s\nwant row %s", calls.Load(), body, want)
	}
}

func TestCheckRefreshFailure(t *testing.T) {
	e := oauthEntry(1, "anthropic", "tok-ok")
	e.Credential.Expires = 1
	src := &memSource{entries: []vault.Entry{e}}
	s := checkServer(t, &failingRefresh{src}, nil)
	rows, err := s.CheckCredentials(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].OK == nil || *rows[0].OK || rows[0].Reason != "oauth refresh failed: invalid_grant" || rows[0].Completion != nil {
		t.Errorf("%+v", rows)
	}
}

type failingRefresh struct{ *memSource }

func (f *failingRefresh) Refresh(context.Context, int64) (vault.Entry, error) {
	return vault.Entry{}, errors.New("invalid_grant")
}

func TestCheckStrictWalksPastMissingModels(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		switch n {
		case 0:
			writeJSON(w, 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: not found"}}`)
		case 1:
			writeSSE(w, anthropicText)
		default:
			writeJSON(w, 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		}
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant"), apiKeyEntry(2, "anthropic", "sk-ant-2"),
		apiKeyEntry(3, "nobody", "sk")}}
	s := checkServer(t, src, map[string]string{"anthropic": up.srv.URL})
	rows, err := s.CheckCredentials(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := rows[0].Completion
	if c == nil || c.OK == nil || !*c.OK || c.ModelID == "" || c.LatencyMs == nil {
		t.Fatalf("first credential %+v", c)
	}
	var models []string
	up.mu.Lock()
	for _, b := range up.bodies {
		var body struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
		}
		_ = json.Unmarshal([]byte(b), &body)
		if body.MaxTokens != 32 {
			t.Errorf("max_tokens %d", body.MaxTokens)
		}
		models = append(models, body.Model)
	}
	up.mu.Unlock()
	if len(models) < 2 || models[0] == models[1] || models[1] != c.ModelID {
		t.Errorf("probed models %v, answered %s", models, c.ModelID)
	}
	// A 401 is not a missing model: returned at once.
	c = rows[1].Completion
	if c == nil || c.OK == nil || *c.OK || !strings.Contains(c.Reason, "invalid x-api-key") {
		t.Errorf("second credential %+v", c)
	}
	if n := len(up.seen()); n != 3 {
		t.Errorf("upstream saw %d requests, want 3", n)
	}
	if c := rows[2].Completion; c == nil || c.OK != nil || c.Reason != "no bearer-compatible probe model bundled for provider nobody" {
		t.Errorf("provider without models %+v", c)
	}
}

func serve(t *testing.T, s *proxy.Server) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestUsagePage(t *testing.T) {
	gw := gateway(t, &memSource{}, nil, nil)
	resp, body := get(t, gw.URL+"/usage", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "/v1/usage") {
		t.Fatalf("page without a token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, _ := get(t, gw.URL+"/usage/x", ""); resp.StatusCode != 401 {
		t.Errorf("/usage/x without a token: %d", resp.StatusCode)
	}
}

func TestUsageHistoryWithoutBroker(t *testing.T) {
	gw := gateway(t, &memSource{}, nil, nil)
	if resp, body := get(t, gw.URL+"/v1/usage/history", gatewayToken); resp.StatusCode != 404 || !strings.Contains(body, "not available") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
