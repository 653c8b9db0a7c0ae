package usage

import (
	"context"
	"net/http"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// TestEveryProbeNamesTheCredentialEmail: clients attribute a report to a
// credential by metadata.email first, so every prober's report carries the
// credential's email when the provider's answer names none.
func TestEveryProbeNamesTheCredentialEmail(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/backend-api/wham/usage":
			writeJSON(w, 200, codexPayload)
		case "/coding/v1/usages":
			writeJSON(w, 200, `{"usage":{"limit":"100","used":"40"}}`)
		case "/v1internal:retrieveUserQuotaSummary":
			writeJSON(w, 200, antigravitySummary)
		case "/v1internal:loadCodeAssist":
			writeJSON(w, 200, `{"cloudaicompanionProject":"p1"}`)
		case "/v1internal:retrieveUserQuota":
			writeJSON(w, 200, `{"buckets":[{"modelId":"gemini-2.5-pro","remainingFraction":0.5}]}`)
		case "/api/oauth/usage":
			writeJSON(w, 200, `{"five_hour":{"utilization":10}}`)
		case "/api/oauth/profile":
			writeJSON(w, 200, `{"account":{"uuid":"u1"}}`)
		case "/api/monitor/usage/quota/limit":
			writeJSON(w, 200, `{"success":true,"data":{"limits":[{"type":"TOKENS_LIMIT","usage":10,"currentValue":1,"unit":3,"number":5}]}}`)
		case "/copilot_internal/user":
			writeJSON(w, 200, `{"quota_snapshots":{"premium_interactions":{"entitlement":300,"remaining":30,"percent_remaining":10}}}`)
		case "/users/octo/settings/billing/premium_request/usage":
			writeJSON(w, 200, `{"usageItems":[{"grossQuantity":3}]}`)
		default:
			writeJSON(w, 404, `{}`)
		}
	})
	oauth := oauthCred()
	oauth.ProjectID, oauth.Email = "p1", "owner@x.io"
	key := vault.Credential{Type: vault.TypeAPIKey, Key: "k", Email: "owner@x.io", AccountID: "octo"}
	tests := []struct {
		prober Prober
		base   string
		cred   vault.Credential
	}{
		{Codex{}, srv.URL + "/backend-api", oauth},
		{Kimi{}, srv.URL + "/coding/v1", oauth},
		{Antigravity{}, srv.URL, oauth},
		{Gemini{}, srv.URL, oauth},
		{Anthropic{}, srv.URL, oauth},
		{Zai{}, srv.URL, key},
		{Copilot{}, srv.URL, oauth},
		{Copilot{}, srv.URL, key},
	}
	for _, tt := range tests {
		t.Run(tt.prober.ID()+"/"+string(tt.cred.Type), func(t *testing.T) {
			rep, err := tt.prober.Fetch(context.Background(), probeRequest(tt.prober.ID(), tt.base, tt.cred))
			if err != nil || rep == nil {
				t.Fatalf("Fetch = %v, %v", rep, err)
			}
			if rep.Metadata["email"] != "owner@x.io" {
				t.Errorf("metadata = %v, want email owner@x.io", rep.Metadata)
			}
		})
	}
	if len(tests) < len(DefaultProbers()) {
		t.Errorf("%d probers tested, %d registered", len(tests), len(DefaultProbers()))
	}
}
