package usage

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// antigravitySummary is a retrieveUserQuotaSummary answer: the Gemini
// group, the third-party group shared by Claude and GPT models, a disabled
// bucket and an unclassified one.
const antigravitySummary = `{"groups":[
  {"displayName":"Gemini models","buckets":[
    {"bucketId":"gemini-5h","window":"WINDOW_5H","remainingFraction":0.75,"resetTime":"2026-01-02T06:00:00Z"},
    {"bucketId":"gemini-off","window":"WINDOW_WEEKLY","disabled":true}]},
  {"displayName":"Claude and GPT models","buckets":[
    {"bucketId":"3p-weekly","window":"WINDOW_WEEKLY","remainingFraction":0.2,"resetTime":"2026-01-08T00:00:00Z","extra":1}]},
  {"displayName":"Other","buckets":[{"bucketId":"misc","remainingAmount":"0"}]}
]}`

func TestAntigravitySummaryLabelsSharedBuckets(t *testing.T) {
	var paths []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		paths = append(paths, r.URL.Path)
		if r.URL.Path != "/v1internal:retrieveUserQuotaSummary" || string(b) != `{"project":"p1"}` {
			t.Errorf("request %s %s", r.URL.Path, b)
		}
		writeJSON(w, 200, antigravitySummary)
	})
	c := oauthCred()
	c.ProjectID, c.Email, c.AccountID = "p1", "g@x.io", "acct-1"
	rep, err := Antigravity{}.Fetch(context.Background(), probeRequest("google-antigravity", srv.URL, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 {
		t.Errorf("requests = %v, want the summary only", paths)
	}
	assertJSON(t, rep, `{
	 "provider": "google-antigravity", "fetchedAt": 1767323045000,
	 "metadata": {"endpoint": "`+srv.URL+`", "projectId": "p1", "email": "g@x.io", "accountId": "acct-1"},
	 "limits": [
	  {"id": "google-antigravity:anthropic:default:3p-weekly", "label": "Claude & GPT (shared)", "status": "ok",
	   "scope": {"provider": "google-antigravity", "accountId": "acct-1", "projectId": "p1", "windowId": "weekly",
	    "shared": true, "sharedGroup": "3p-weekly:weekly"},
	   "window": {"id": "weekly", "label": "Weekly", "durationMs": 604800000, "resetsAt": 1767830400000},
	   "amount": {"used": 80, "limit": 100, "remaining": 20, "usedFraction": 0.8, "remainingFraction": 0.2, "unit": "percent"}},
	  {"id": "google-antigravity:openai:default:3p-weekly", "label": "Claude & GPT (shared)", "status": "ok",
	   "scope": {"provider": "google-antigravity", "accountId": "acct-1", "projectId": "p1", "windowId": "weekly",
	    "shared": true, "sharedGroup": "3p-weekly:weekly"},
	   "window": {"id": "weekly", "label": "Weekly", "durationMs": 604800000, "resetsAt": 1767830400000},
	   "amount": {"used": 80, "limit": 100, "remaining": 20, "usedFraction": 0.8, "remainingFraction": 0.2, "unit": "percent"}},
	  {"id": "google-antigravity:google:default:gemini-5h", "label": "Gemini", "status": "ok",
	   "scope": {"provider": "google-antigravity", "accountId": "acct-1", "projectId": "p1", "windowId": "5h"},
	   "window": {"id": "5h", "label": "5 Hour", "durationMs": 18000000, "resetsAt": 1767333600000},
	   "amount": {"used": 25, "limit": 100, "remaining": 75, "usedFraction": 0.25, "remainingFraction": 0.75, "unit": "percent"}},
	  {"id": "google-antigravity:default:default:misc", "label": "Other", "status": "exhausted",
	   "scope": {"provider": "google-antigravity", "accountId": "acct-1", "projectId": "p1", "windowId": "misc"},
	   "amount": {"remaining": 0, "unit": "unknown"}}
	 ]}`)
}

func TestAntigravityEmptySummaryFallsBackToModels(t *testing.T) {
	var paths []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Path == "/v1internal:retrieveUserQuotaSummary" {
			writeJSON(w, 200, `{"groups":[{"displayName":"Gemini","buckets":[]}]}`)
			return
		}
		writeJSON(w, 200, `{"models":{"gemini-pro":{"modelProvider":"MODEL_PROVIDER_GOOGLE","quotaInfo":{"remainingFraction":0.5,"resetTime":"2026-01-02T12:00:00Z"}}}}`)
	})
	c := oauthCred()
	c.ProjectID = "p1"
	rep, err := Antigravity{}.Fetch(context.Background(), probeRequest("google-antigravity", srv.URL, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[1] != "/v1internal:fetchAvailableModels" {
		t.Errorf("requests = %v, want the summary then the models", paths)
	}
	if l := limitByID(t, rep, "google-antigravity:google:default:daily"); l.Label != "Usage (Google)" || l.Scope.SharedGroup != "" {
		t.Errorf("limit = %+v", l)
	}
}
