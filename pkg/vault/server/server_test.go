package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	st, h, body := e.do(http.MethodGet, "/v1/healthz", "", "")
	if st != 200 || body != `{"ok":true,"version":"9.9.9-test"}` || h.Get("Content-Type") != "application/json" {
		t.Fatalf("healthz = %d %q %q", st, h.Get("Content-Type"), body)
	}
	e2 := newEnv(t, func(s *server.Server) { s.Version = "" })
	if _, _, body := e2.do(http.MethodGet, "/v1/healthz", "", ""); body != `{"ok":true}` {
		t.Fatalf("healthz without version = %q", body)
	}
}

// writeBack is a settable server.WriteBackStatus.
type writeBack struct {
	mu  sync.Mutex
	n   int
	err error
}

func (w *writeBack) Pending() int      { w.mu.Lock(); defer w.mu.Unlock(); return w.n }
func (w *writeBack) WriteError() error { w.mu.Lock(); defer w.mu.Unlock(); return w.err }

func (w *writeBack) set(n int, err error) { w.mu.Lock(); w.n, w.err = n, err; w.mu.Unlock() }

func TestHealthzReportsPendingWriteBacks(t *testing.T) {
	wb := &writeBack{}
	e := newEnv(t, func(s *server.Server) { s.WriteBack = wb })
	e.metrics.AttachWriteBack(wb)
	if _, _, body := e.do(http.MethodGet, "/v1/healthz", "", ""); body != `{"ok":true,"version":"9.9.9-test"}` {
		t.Fatalf("healthz with nothing pending = %q, want the reference body", body)
	}
	wb.set(2, &vault.Error{Code: vault.EUNAVAILABLE, Message: "vault storage is full", Err: errors.New("disk I/O /secret/path")})
	if _, _, body := e.do(http.MethodGet, "/v1/healthz", "", ""); body != `{"ok":true,"version":"9.9.9-test","pendingWrites":2,"vault":{"writable":false,"error":"vault storage is full"}}` {
		t.Fatalf("healthz while writes pend = %q", body)
	}
	h, err := client.New(e.ts.URL, "", nil).Healthz(context.Background())
	if err != nil || !h.OK {
		t.Fatalf("client rejects the extended healthz: %+v %v", h, err)
	}
	e.metrics.ObserveWriteFailure()
	_, _, body := e.get("/metrics")
	for _, want := range []string{"omp_broker_pending_writes 2\n", "omp_broker_vault_write_failures_total 1\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	wb.set(2, errors.New("raw driver text"))
	if _, _, body := e.do(http.MethodGet, "/v1/healthz", "", ""); !strings.Contains(body, `"error":"internal error"`) {
		t.Errorf("healthz leaks an unclassified error: %q", body)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, auth string
		want       int
	}{
		{"missing header is rejected", "", 401},
		{"wrong token is rejected", "Bearer nope", 401},
		{"other scheme is rejected", "Basic " + testToken, 401},
		{"scheme without space is rejected", "Bearer" + testToken, 401},
		{"token prefix is rejected", "Bearer " + testToken[:5], 401},
		{"exact token is accepted", "Bearer " + testToken, 200},
		{"lowercase scheme is accepted", "bearer " + testToken, 200},
		{"padded token is trimmed and accepted", "BEARER \t " + testToken + "  ", 200},
		{"second allow-listed token is accepted", "Bearer second-token", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, h, body := e.do(http.MethodGet, "/v1/snapshot", tt.auth, "")
			if st != tt.want {
				t.Fatalf("status %d, want %d (%s)", st, tt.want, body)
			}
			if st == 401 && (body != `{"error":"unauthorized"}` || h.Get("Content-Type") != "application/json") {
				t.Fatalf("401 body %q", body)
			}
		})
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker request unauthorized" method=GET path=/v1/snapshot peer=127.0.0.1`) {
		t.Fatalf("missing unauthorized log:\n%s", e.logs.String())
	}
	if strings.Contains(e.logs.String(), "nope") {
		t.Fatal("a presented token was logged")
	}
	// Unknown routes are behind the auth check too.
	if st, _, _ := e.do(http.MethodGet, "/nope", "", ""); st != 401 {
		t.Fatalf("unknown route without auth = %d, want 401", st)
	}
}

func TestEmptyAllowListIsRefused(t *testing.T) {
	s := &server.Server{Store: newEnv(t).store}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run without tokens returned nil")
	}
	rec := httptestRecorder(s.Handler(), http.MethodGet, "/v1/snapshot", "Bearer ")
	if id := rec.Header().Get("X-Request-Id"); rec.Code != 500 || id == "" || rec.Body.String() != `{"error":"internal error (request id `+id+`)"}` {
		t.Fatalf("handler without tokens = %d %s", rec.Code, rec.Body.String())
	}
}

func TestNoRoute(t *testing.T) {
	e := newEnv(t)
	tests := []struct{ method, path, want string }{
		{"GET", "/v1/nope", "No route: GET /v1/nope"},
		{"HEAD", "/v1/snapshot", ""},
		{"HEAD", "/v1/healthz", ""},
		{"PUT", "/v1/snapshot", "No route: PUT /v1/snapshot"},
		{"GET", "/v1/credential", "No route: GET /v1/credential"},
		{"POST", "/v1/snapshot", "No route: POST /v1/snapshot"},
		{"POST", "/v1/credential/", "No route: POST /v1/credential/"},
		{"POST", "/v1/credential/abc/refresh", "No route: POST /v1/credential/abc/refresh"},
		{"POST", "/v1/credential/-1/refresh", "No route: POST /v1/credential/-1/refresh"},
		{"POST", "/v1/credential/1/refresh/", "No route: POST /v1/credential/1/refresh/"},
		{"GET", "/v1/credential/1/refresh", "No route: GET /v1/credential/1/refresh"},
		{"POST", "/v1/credential/%31/disable", "No route: POST /v1/credential/%31/disable"},
		{"GET", "/v1/snapshot/", "No route: GET /v1/snapshot/"},
		{"DELETE", "/v1/credential/1/block", "No route: DELETE /v1/credential/1/block"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			st, _, body := e.do(tt.method, tt.path, "Bearer "+testToken, "")
			if st != 404 {
				t.Fatalf("status %d, want 404", st)
			}
			if tt.method != "HEAD" {
				want, _ := json.Marshal(map[string]string{"error": tt.want})
				if body != string(want) {
					t.Fatalf("body %s, want %s", body, want)
				}
			}
		})
	}
}

func TestBodyErrors(t *testing.T) {
	e := newEnv(t)
	big := `{"cause":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name, path, body string
		status           int
		want             string // exact error text, or prefix ending in "…"
	}{
		{"oversized body is 413", "/v1/credential/1/disable", big, 413, "request body too large"},
		{"oversized upload is 413", "/v1/credential", big, 413, "request body too large"},
		{"empty upload body is required", "/v1/credential", "", 400, "Request body required"},
		{"syntax error is reported", "/v1/credential", "{nope", 400, "Invalid JSON body: …"},
		{"whitespace body is a syntax error", "/v1/credential", "  ", 400, "Invalid JSON body: …"},
		{"non-object upload is rejected", "/v1/credential", "[]", 400, "request body must be an object"},
		{"unknown upload key is rejected", "/v1/credential", `{"provider":"x","credential":{"type":"api_key","key":"k"},"extra":1}`, 400, `"extra" must be removed (not an allowed key)`},
		{"empty provider is rejected", "/v1/credential", `{"provider":"","credential":{"type":"api_key","key":"k"}}`, 400, "provider must be a non-empty string"},
		{"missing credential is rejected", "/v1/credential", `{"provider":"x"}`, 400, "credential must be an object"},
		{"sentinel refresh is rejected", "/v1/credential", `{"provider":"anthropic","credential":{"type":"oauth","refresh":"__remote__","access":"a","expires":1}}`, 400, "refresh token must not equal the remote sentinel (__remote__)"},
		{"mistyped orgId is rejected", "/v1/credential", `{"provider":"anthropic","credential":{"type":"oauth","refresh":"r","access":"a","expires":1,"orgId":5}}`, 400, "credential.orgId must be a string (was number)"},
		{"mistyped authorizedAt is rejected", "/v1/credential", `{"provider":"anthropic","credential":{"type":"oauth","refresh":"r","access":"a","expires":1,"authorizedAt":"x"}}`, 400, "credential.authorizedAt must be a number (was string)"},
		{"empty access is rejected", "/v1/credential", `{"provider":"anthropic","credential":{"type":"oauth","refresh":"","access":"","expires":1}}`, 400, "credential.access must be a non-empty string"},
		{"extra api key field is rejected", "/v1/credential", `{"provider":"zai","credential":{"type":"api_key","key":"k","foo":1}}`, 400, "credential.foo must be removed"},
		{"api key source other than login is rejected", "/v1/credential", `{"provider":"zai","credential":{"type":"api_key","key":"k","source":"other"}}`, 400, `credential.source must be "login" (was "other")`},
		{"unknown disable key is rejected", "/v1/credential/1/disable", `{"cause":"x","why":1}`, 400, `"why" must be removed (not an allowed key)`},
		{"non-string cause is rejected", "/v1/credential/1/disable", `{"cause":5}`, 400, "cause must be a string"},
		{"null cause is rejected", "/v1/credential/1/disable", `{"cause":null}`, 400, "cause must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, h, body := e.post(tt.path, tt.body)
			var env struct{ Error string }
			if err := json.Unmarshal([]byte(body), &env); err != nil || h.Get("Content-Type") != "application/json" {
				t.Fatalf("not a JSON error envelope: %q", body)
			}
			if st != tt.status {
				t.Fatalf("status %d, want %d (%s)", st, tt.status, body)
			}
			if p, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(env.Error, p) || len(env.Error) == len(p) {
					t.Fatalf("error %q, want prefix %q", env.Error, p)
				}
			} else if env.Error != tt.want {
				t.Fatalf("error %q, want %q", env.Error, tt.want)
			}
		})
	}
}

func TestDisable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.upsert("anthropic", oauthCred("a@b.c", 1))
	b := e.upsert("anthropic", oauthCred("b@b.c", 1))
	tests := []struct {
		name      string
		id        int64
		body      string
		status    int
		wantBody  string
		wantCause string
	}{
		{"empty body uses the default cause", a.ID, "", 200, `{"ok":true}`, vault.CauseDisabledViaAPI},
		{"explicit cause is stored", b.ID, `{"cause":"rotated by hand"}`, 200, `{"ok":true}`, "rotated by hand"},
		{"disabled id is a miss", a.ID, `{}`, 404, `{"error":"No credential with id=` + itoa(a.ID) + `"}`, ""},
		{"unknown id is a miss", 999, `{"cause":""}`, 404, `{"error":"No credential with id=999"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _, body := e.post("/v1/credential/"+itoa(tt.id)+"/disable", tt.body)
			if st != tt.status || body != tt.wantBody {
				t.Fatalf("= %d %s, want %d %s", st, body, tt.status, tt.wantBody)
			}
			if tt.wantCause != "" {
				rec, err := e.store.Get(ctx, tt.id)
				if err != nil || rec.DisabledCause != tt.wantCause {
					t.Fatalf("stored cause %q (%v), want %q", rec.DisabledCause, err, tt.wantCause)
				}
			}
		})
	}
	logs := e.logs.String()
	for _, want := range []string{`msg="auth-broker credential disabled" id=` + itoa(b.ID) + ` peer=127.0.0.1 cause="rotated by hand"`, `msg="auth-broker disable miss" id=999`} {
		if !strings.Contains(logs, want) {
			t.Errorf("missing log %q", want)
		}
	}
}

func TestDisableSeesRowsWrittenByAnotherProcess(t *testing.T) {
	e := newEnv(t)
	other := e.openSecondStore()
	recs, err := other.Upsert(context.Background(), "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-other"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _, body := e.post("/v1/credential/"+itoa(recs[0].ID)+"/disable", ""); st != 200 {
		t.Fatalf("disable of an externally written row = %d %s", st, body)
	}
}

func TestUpload(t *testing.T) {
	e := newEnv(t)
	e.upsert("anthropic", oauthCred("old@b.c", 5))
	body := `{"provider":"anthropic","credential":{"type":"oauth","refresh":"r-secret","access":"acc","expires":1765503600000,"email":"New@B.c","accountId":"acct"}}`
	st, _, resp := e.post("/v1/credential", body)
	if st != 200 {
		t.Fatalf("upload = %d %s", st, resp)
	}
	if strings.Contains(resp, "r-secret") {
		t.Fatalf("upload response leaks a secret: %s", resp)
	}
	// Upload replies always carry the extension fields, header or not.
	if !strings.Contains(resp, `"email":"old@b.c","apiEndpoint":"https://x"}`) {
		t.Fatalf("upload response lacks the stored extension field: %s", resp)
	}
	m := obj(t, resp)
	if got := keys(t, mustJSON(t, m)); !slices.Equal(got, []string{"entries"}) {
		t.Fatalf("keys %v", got)
	}
	var entries []json.RawMessage
	_ = json.Unmarshal(m["entries"], &entries)
	if len(entries) != 2 {
		t.Fatalf("entries %d, want every active row of the provider (2)", len(entries))
	}
	for _, en := range entries {
		if got := keys(t, en); !slices.Equal(got, []string{"credential", "id", "identityKey", "provider"}) {
			t.Fatalf("entry keys %v (no rotatesInMs on upload)", got)
		}
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker credential upserted" provider=anthropic type=oauth identity=New@B.c peer=127.0.0.1 providerTotal=2`) {
		t.Fatalf("missing upsert log:\n%s", e.logs.String())
	}
	// API key upload.
	st, _, resp = e.post("/v1/credential", `{"provider":"openai","credential":{"type":"api_key","key":"sk-1"}}`)
	if st != 200 || resp != `{"entries":[{"id":3,"provider":"openai","credential":{"type":"api_key","key":"sk-1"},"identityKey":null}]}` {
		t.Fatalf("api key upload = %d %s", st, resp)
	}
}

func TestRefresh(t *testing.T) {
	e := newEnv(t)
	a := e.upsert("anthropic", oauthCred("a@b.c", 1000))
	k := e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-x"})
	st, _, body := e.post("/v1/credential/"+itoa(a.ID)+"/refresh", "")
	want := `{"entry":{"id":1,"provider":"anthropic","credential":{"type":"oauth","refresh":"__remote__","access":"refreshed-access","expires":3601000,"email":"a@b.c","apiEndpoint":"https://x"},"identityKey":"email:a@b.c"}}`
	if st != 200 || body != want {
		t.Fatalf("refresh = %d %s\nwant %s", st, body, want)
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker credential refreshed" id=1 provider=anthropic peer=127.0.0.1 expires=3601000`) {
		t.Fatalf("missing refresh log:\n%s", e.logs.String())
	}
	tests := []struct {
		name   string
		id     int64
		err    error
		status int
		want   string
	}{
		{"unknown id is 404", 77, nil, 404, `{"error":"No credential with id=77"}`},
		{"api key is 400 with the message", k.ID, nil, 400, `{"error":"Credential 2 is not OAuth (provider=openai, type=api_key): API-key credentials have nothing to refresh"}`},
		{"provider failure is 500 with the message", a.ID, vault.Errorf(vault.EUPSTREAM, "OAuth token refresh timed out for provider: anthropic"), 500, `{"error":"OAuth token refresh timed out for provider: anthropic"}`},
		{"unknown error is a generic 500", a.ID, errors.New("disk on fire: secret-xyz"), 500, `{"error":"internal error (request id <id>)"}`},
		{"unavailable vault is 503", a.ID, vault.Errorf(vault.EUNAVAILABLE, "vault is read-only"), 503, `{"error":"vault is read-only"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.ref.mu.Lock()
			e.ref.err = tt.err
			e.ref.mu.Unlock()
			st, hdr, body := e.post("/v1/credential/"+itoa(tt.id)+"/refresh", "ignored body")
			if id := hdr.Get("X-Request-Id"); id != "" {
				tt.want = strings.Replace(tt.want, "<id>", id, 1)
			}
			if st != tt.status || body != tt.want {
				t.Fatalf("= %d %s, want %d %s", st, body, tt.status, tt.want)
			}
		})
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker refresh failed" id=77 peer=127.0.0.1 error="No credential with id=77"`) {
		t.Fatalf("missing refresh failure log:\n%s", e.logs.String())
	}
}

func TestUsage(t *testing.T) {
	e := newEnv(t)
	f := 0.25
	e.usage.reports = []vault.UsageReport{{Provider: "anthropic", FetchedAt: 5, Raw: map[string]any{"secret": "raw"},
		Limits: []vault.UsageLimit{{ID: "5h", Label: "5 hours", Scope: vault.UsageScope{Provider: "anthropic"}, Amount: vault.UsageAmount{UsedFraction: &f, Unit: "percent"}}}}}
	st, _, body := e.get("/v1/usage")
	want := `{"generatedAt":1765500000000,"reports":[{"provider":"anthropic","fetchedAt":5,"limits":[{"id":"5h","label":"5 hours","scope":{"provider":"anthropic"},"amount":{"usedFraction":0.25,"unit":"percent"}}]}]}`
	if st != 200 || body != want {
		t.Fatalf("usage = %d %s", st, body)
	}
	e.usage.reports = nil
	if _, _, body := e.get("/v1/usage"); body != `{"generatedAt":1765500000000,"reports":[]}` {
		t.Fatalf("empty usage = %s", body)
	}
	e.usage.err = vault.Errorf(vault.EUPSTREAM, "usage aggregation failed")
	if st, _, body := e.get("/v1/usage"); st != 502 || body != `{"error":"usage aggregation failed"}` {
		t.Fatalf("usage error = %d %s", st, body)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t)
	e.upsert("anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+60_000))
	f, reset := 0.5, int64(1_765_600_000_000)
	e.usage.reports = []vault.UsageReport{{Provider: "anthropic", Metadata: map[string]any{"accountId": "acct-1", "email": "a@b.c"},
		Limits: []vault.UsageLimit{{ID: "5h", Amount: vault.UsageAmount{UsedFraction: &f}, Window: &vault.UsageWindow{ResetsAt: &reset}}}}}
	e.metrics.ObserveRefresh("anthropic", "ok")
	if st, _, _ := e.do(http.MethodGet, "/metrics", "", ""); st != 401 {
		t.Fatalf("/metrics without bearer = %d", st)
	}
	e.get("/v1/snapshot")
	st, _, body := e.get("/metrics")
	if st != 200 {
		t.Fatalf("/metrics = %d", st)
	}
	for _, want := range []string{
		`omp_broker_http_requests_total{method="GET",route="/v1/snapshot",status="200"} 1`,
		`omp_broker_http_requests_total{method="GET",route="unmatched",status="401"} 1`,
		`omp_broker_refresh_total{outcome="ok",provider="anthropic"} 1`,
		`omp_broker_credential_expiry_seconds{id="1",provider="anthropic"} 60`,
		`llm_usage_limit_used_fraction{account="acct-1",limit="5h",provider="anthropic"} 0.5`,
		`llm_usage_limit_resets_at_seconds{account="acct-1",limit="5h",provider="anthropic"} 1.7656e+09`,
		`omp_broker_stream_subscribers 0`,
		`omp_broker_vault_generation 1.765500000001e+12`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "a@b.c") {
		t.Error("an email is in the metrics without the opt-in")
	}
}
