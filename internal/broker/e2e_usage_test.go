package broker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

const (
	codexAccess      = "codex-e2e-access-" + "xxxxxxxxxxxxxxxxxxxxxxxx"
	codexRefresh     = "rt_e2e-codex-upload-refresh-" + "yyyyyyyyyyyyyyyyyyyy"
	anthropicUAccess = "sk-ant-oat01-usage-access-" + "uuuuuuuuuuuuuuuuuuuu"
	anthropicURefr   = "sk-ant-ort01-usage-refresh-" + "vvvvvvvvvvvvvvvvvvvv"
)

// TestE2EUsage checks GET /v1/usage end to end: the broker probes the fake
// Codex and Claude usage endpoints with the stored tokens and answers the
// normalised reports (provider, fetchedAt, limits), without raw payloads.
func TestE2EUsage(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	expires := time.Now().Add(time.Hour).UnixMilli() // fresh: no refresh before probing
	codexEntries, err := b.client.Upload(ctx, "openai-codex", vault.Credential{Type: vault.TypeOAuth, Access: codexAccess, Refresh: codexRefresh,
		Expires: expires, AccountID: "acct-codex-e2e", Email: "carol@example.com"})
	if err != nil {
		t.Fatalf("Upload codex: %v", err)
	}
	if _, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: anthropicUAccess, Refresh: anthropicURefr,
		Expires: expires, Email: "dave@example.com"}); err != nil {
		t.Fatalf("Upload anthropic: %v", err)
	}

	// Wire JSON of selected limits, checked on the raw body.
	wantLimits := map[string][]string{}

	t.Run("reports come from the fake endpoints in the wire shape", func(t *testing.T) {
		before := time.Now().UnixMilli()
		u, err := b.client.Usage(ctx)
		if err != nil {
			t.Fatalf("Usage: %v", err)
		}
		if u.GeneratedAt < before || len(u.Reports) != 2 {
			t.Fatalf("Usage = generatedAt %d, %d reports, want 2 fresh ones", u.GeneratedAt, len(u.Reports))
		}
		byProvider := map[string]vault.UsageReport{}
		for _, r := range u.Reports {
			byProvider[r.Provider] = r
		}

		codex := byProvider["openai-codex"]
		if ids := limitIDs(codex); !reflect.DeepEqual(ids, []string{"openai-codex:primary", "openai-codex:secondary"}) {
			t.Errorf("codex limits = %v", ids)
		}
		if codex.ResetCredits == nil || codex.ResetCredits.AvailableCount != 2 {
			t.Errorf("codex resetCredits = %+v, want 2", codex.ResetCredits)
		}
		wantMeta := map[string]any{"planType": "pro", "allowed": true, "limitReached": false, "email": "carol@example.com", "accountId": "acct-codex-e2e"}
		if !reflect.DeepEqual(codex.Metadata, wantMeta) {
			t.Errorf("codex metadata = %v, want %v", codex.Metadata, wantMeta)
		}
		wantLimits["openai-codex"] = append(wantLimits["openai-codex"], `{"id":"openai-codex:secondary","label":"7 days","scope":{"provider":"openai-codex",
			"accountId":"acct-codex-e2e","tier":"pro","windowId":"7d","shared":true},"window":{"id":"7d","label":"7 days","durationMs":604800000,
			"resetsAt":1893456000000},"amount":{"used":95,"limit":100,"remaining":5,"usedFraction":0.95,"remainingFraction":0.050000000000000044,
			"unit":"percent"},"status":"warning"}`)

		claude := byProvider["anthropic"]
		if ids := limitIDs(claude); !reflect.DeepEqual(ids, []string{"anthropic:5h", "anthropic:7d", "anthropic:7d:sonnet"}) {
			t.Errorf("anthropic limits = %v", ids)
		}
		wantMeta = map[string]any{"endpoint": h.up.srv.URL + anthropicUsagePath, "accountId": "acct-anthropic-usage", "email": "dave@example.com"}
		if !reflect.DeepEqual(claude.Metadata, wantMeta) {
			t.Errorf("anthropic metadata = %v, want %v", claude.Metadata, wantMeta)
		}
		want := &vault.ResetCredits{AvailableCount: 2, RedeemableCount: ptr(int64(2)), NextCreditID: "grant-1", Eligible: ptr(true),
			Credits: []vault.ResetCredit{{ID: "grant-1", Title: "Saved reset", Program: "cedar_ember", RemainingCount: ptr(int64(2)),
				Usable: ptr(true), RequiresLimit: ptr(true), Clears: []string{"anthropic:5h"}, Blocking: []string{},
				UsedFractions: map[string]float64{"anthropic:5h": 0.35}, ExpiresAt: "2030-02-01T00:00:00.000Z", Status: "available"}}}
		if !reflect.DeepEqual(claude.ResetCredits, want) {
			got, _ := json.Marshal(claude.ResetCredits)
			t.Errorf("anthropic resetCredits = %s", got)
		}
		wantLimits["anthropic"] = append(wantLimits["anthropic"], `{"id":"anthropic:5h","label":"Claude 5 Hour","scope":{"provider":"anthropic","windowId":"5h",
			"shared":true},"window":{"id":"5h","label":"5 Hour","durationMs":18000000,"resetsAt":1893474000000},"amount":{"used":35,"limit":100,
			"remaining":65,"usedFraction":0.35,"remainingFraction":0.65,"unit":"percent"},"status":"ok"}`)
		wantLimits["anthropic"] = append(wantLimits["anthropic"], `{"id":"anthropic:7d:sonnet","label":"Claude 7 Day (Sonnet)","scope":{"provider":"anthropic",
			"tier":"sonnet","windowId":"7d"},"window":{"id":"7d","label":"7 Day","durationMs":604800000},"amount":{"used":100,"limit":100,
			"remaining":0,"usedFraction":1,"remainingFraction":0,"unit":"percent"},"status":"exhausted"}`)
	})

	t.Run("raw body has the strict envelope and no raw payloads", func(t *testing.T) {
		r := b.do(t, http.MethodGet, "/v1/usage", b.bearer(), nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /v1/usage = %d %s", r.status, r.body)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &env); err != nil {
			t.Fatal(err)
		}
		if len(env) != 2 || env["generatedAt"] == nil || env["reports"] == nil {
			t.Errorf("envelope keys = %v, want generatedAt and reports", keys(env))
		}
		var reports []map[string]json.RawMessage
		if err := json.Unmarshal(env["reports"], &reports); err != nil {
			t.Fatal(err)
		}
		for _, rep := range reports {
			if _, ok := rep["raw"]; ok {
				t.Errorf("report %s carries raw", rep["provider"])
			}
			var provider string
			_ = json.Unmarshal(rep["provider"], &provider)
			for _, want := range wantLimits[provider] {
				assertLimitJSON(t, provider, rep["limits"], want)
			}
		}
		for _, field := range []string{`"redeemableCount":2`, `"nextCreditId":"grant-1"`, `"clears":["anthropic:5h"]`, `"blocking":[]`,
			`"usedFractions":{"anthropic:5h":0.35}`, `"requiresLimit":true`} {
			if !strings.Contains(r.body, field) {
				t.Errorf("usage body lacks %s", field)
			}
		}
		assertNoSecrets(t, "usage body", r.body, []string{codexAccess, codexRefresh, anthropicUAccess, anthropicURefr})
		// Both calls were served from the per-credential cache after the first probe.
		if c, a := h.up.usageCalls(codexUsagePath), h.up.usageCalls(anthropicUsagePath); c != 1 || a != 1 {
			t.Errorf("upstream usage calls codex=%d anthropic=%d, want 1 each (5 min cache)", c, a)
		}
	})

	t.Run("metrics expose the usage gauges without emails", func(t *testing.T) {
		body, samples := b.scrape(t)
		if v, ok := find(samples, "llm_usage_limit_used_fraction", map[string]string{"provider": "openai-codex", "account": "acct-codex-e2e", "limit": "openai-codex:primary"}); !ok || v != 0.425 {
			t.Errorf("codex primary used fraction = %v (present %v), want 0.425", v, ok)
		}
		if v, ok := find(samples, "llm_usage_limit_resets_at_seconds", map[string]string{"provider": "anthropic", "limit": "anthropic:5h"}); !ok || v != 1893474000 {
			t.Errorf("anthropic 5h reset = %v (present %v)", v, ok)
		}
		assertNoSecrets(t, "metrics", body, []string{"carol@example.com", "dave@example.com", codexAccess, anthropicUAccess})
	})

	t.Run("codex refresh uses the form-encoded grant", func(t *testing.T) {
		e, err := b.client.Refresh(ctx, codexEntries[0].ID)
		if err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		calls := h.up.tokenCalls()
		if len(calls) != 1 || calls[0].Provider != "openai-codex" || calls[0].Refresh != codexRefresh {
			t.Fatalf("token calls = %+v", calls)
		}
		if e.Credential.Access != h.up.secrets()[0] || e.Credential.AccountID != "acct-codex-e2e" || e.Credential.Email != "carol@example.com" {
			t.Errorf("refreshed codex entry = %+v", e)
		}
		lo := time.Now().Add(codexTokenTTL*time.Second - time.Minute).UnixMilli()
		if e.Credential.Expires < lo {
			t.Errorf("codex expiry %d, want about now + %d s", e.Credential.Expires, codexTokenTTL)
		}
	})

	b.stop()
	secrets := append([]string{codexAccess, codexRefresh, anthropicUAccess, anthropicURefr}, h.up.secrets()...)
	assertNoSecretsOnDisk(t, h.dir, secrets)
	assertNoSecrets(t, "broker logs", h.logs.String(), secrets)
}

func limitIDs(r vault.UsageReport) []string {
	var ids []string
	for _, l := range r.Limits {
		ids = append(ids, l.ID)
	}
	return ids
}

// assertLimitJSON finds the limit of want's id in the raw limits array and
// compares the two JSON values (key order and whitespace ignored).
func assertLimitJSON(t *testing.T, provider string, limits json.RawMessage, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(limits, &got); err != nil {
		t.Fatalf("%s limits: %v", provider, err)
	}
	for _, g := range got {
		if g["id"] != w["id"] {
			continue
		}
		if !reflect.DeepEqual(g, w) {
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			t.Errorf("%s limit %s =\n%s\nwant\n%s", provider, w["id"], gb, wb)
		}
		return
	}
	t.Errorf("%s report has no limit %s", provider, w["id"])
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
