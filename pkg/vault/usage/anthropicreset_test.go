package usage

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// claudeUsageNoResets is a plain /usage answer: the reset programs are named
// but not evaluated (null).
const claudeUsageNoResets = `{"five_hour":{"utilization":100,"resets_at":"2026-01-02T05:00:00Z"},
  "cedar_ember":null,"juniper_tide":null,"account":{"email":"c@x.io"}}`

func TestAnthropicResetCreditsFromTheUsageAnswer(t *testing.T) {
	var queries []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/oauth/profile" {
			writeJSON(w, 200, `{"account":{"uuid":"u1"}}`)
			return
		}
		queries = append(queries, r.URL.RawQuery)
		writeJSON(w, 200, `{"five_hour":{"utilization":100},"account":{"email":"c@x.io"},
		  "cedar_ember":{"eligible":true,"next_grant_id":"g-1","cooldown_until":"2026-01-01T00:00:00Z","at_limit":true,"unknown":1,
		    "grants":[
		      {"id":"g-1","label":" Holiday reset ","resets_left":2,"resets_total":3,"starts_at":"2025-12-20T00:00:00Z",
		       "ends_at":"2026-02-01T00:00:00+01:00","clears":["five_hour","seven_day","five_hour","custom_win"],"blocking":[],
		       "usable_now":true,"use_requires_limit":false,"percent_used":{"five_hour":100,"seven_day":40}},
		      {"id":"g-old","resets_left":1,"ends_at":"2026-01-01T00:00:00Z","clears":["five_hour"],"blocking":["seven_day_opus"]}]},
		  "juniper_tide":null}`)
	})
	rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL, anthropicCred()))
	if err != nil || rep == nil {
		t.Fatalf("rep=%v err=%v", rep, err)
	}
	if len(queries) != 1 || queries[0] != "" {
		t.Errorf("queries = %q, want the one usage request (the answer evaluated the grants)", queries)
	}
	assertJSON(t, rep.ResetCredits, `{
	 "availableCount": 2, "redeemableCount": 2, "nextCreditId": "g-1", "eligible": true,
	 "cooldownUntil": "2026-01-01T00:00:00.000Z",
	 "credits": [
	  {"id": "g-1", "title": "Holiday reset", "program": "cedar_ember", "remainingCount": 2, "usable": true,
	   "requiresLimit": false, "clears": ["anthropic:5h", "anthropic:7d", "anthropic:reset:custom_win"], "blocking": [],
	   "usedFractions": {"anthropic:5h": 1, "anthropic:7d": 0.4},
	   "grantedAt": "2025-12-20T00:00:00.000Z", "expiresAt": "2026-01-31T23:00:00.000Z", "status": "available"},
	  {"id": "g-old", "title": "Claude limit reset", "program": "cedar_ember", "remainingCount": 1, "usable": false,
	   "requiresLimit": true, "clears": ["anthropic:5h"], "blocking": ["anthropic:7d:opus"], "usedFractions": {},
	   "expiresAt": "2026-01-01T00:00:00.000Z", "status": "expired"}
	 ]}`)
	if rep.Metadata["email"] != "c@x.io" {
		t.Errorf("metadata = %v", rep.Metadata)
	}
}

func TestAnthropicResetCreditsDiscovered(t *testing.T) {
	tests := []struct {
		name           string
		cedar, juniper string
		want           string
		wantQueries    int
	}{
		{"juniper session reset offered",
			`{"cedar_ember":{"eligible":false,"ineligible_reason":"no_grants","grants":[]},"five_hour":{}}`,
			`{"juniper_tide":{"eligible":true,"arm":"reset","available":true,"weekly_resets_at":"2026-01-08T00:00:00Z"}}`,
			`{"availableCount": 1, "redeemableCount": 1, "nextCreditId": "juniper_tide", "eligible": true,
			  "credits": [{"id": "juniper_tide", "title": "Claude session limit reset", "program": "juniper_tide",
			   "remainingCount": 1, "usable": true, "requiresLimit": true, "clears": ["anthropic:5h"], "blocking": [],
			   "usedFractions": {}, "expiresAt": "2026-01-08T00:00:00.000Z", "status": "available"}]}`, 3},
		{"juniper control arm",
			`{"five_hour":{}}`,
			`{"juniper_tide":{"eligible":true,"arm":"control","next_available_at":"2026-01-03T00:00:00Z"}}`,
			`{"availableCount": 0, "redeemableCount": 0, "eligible": false, "reason": "control",
			  "cooldownUntil": "2026-01-03T00:00:00.000Z", "credits": []}`, 3},
		{"cedar grant selected",
			`{"cedar_ember":{"eligible":true,"next_grant_id":"g-9","grants":[{"id":"g-9","resets_left":1,"clears":["seven_day"],"blocking":["five_hour"]}]}}`,
			`{"juniper_tide":null}`,
			`{"availableCount": 1, "redeemableCount": 0, "nextCreditId": "g-9", "eligible": true,
			  "credits": [{"id": "g-9", "title": "Claude limit reset", "program": "cedar_ember", "remainingCount": 1,
			   "usable": false, "requiresLimit": true, "clears": ["anthropic:7d"], "blocking": ["anthropic:5h"],
			   "usedFractions": {}, "status": "unavailable"}]}`, 2},
		{"malformed cedar block is no answer",
			`{"cedar_ember":{"eligible":"yes"}}`, `{}`, `null`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var queries []string
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/oauth/profile" {
					writeJSON(w, 200, `{"account":{"uuid":"u1"}}`)
					return
				}
				mu.Lock()
				queries = append(queries, r.URL.RawQuery)
				mu.Unlock()
				switch r.URL.RawQuery {
				case "":
					writeJSON(w, 200, claudeUsageNoResets)
				case "cedar_ember=1&skip_spend=1":
					writeJSON(w, 200, tt.cedar)
				case "at_wall=1&skip_spend=1":
					writeJSON(w, 200, tt.juniper)
				default:
					t.Errorf("query %q", r.URL.RawQuery)
				}
			})
			rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL, anthropicCred()))
			if err != nil || rep == nil {
				t.Fatalf("rep=%v err=%v", rep, err)
			}
			assertJSON(t, rep.ResetCredits, tt.want)
			if len(queries) != tt.wantQueries || !slices.Contains(queries, "cedar_ember=1&skip_spend=1") {
				t.Errorf("queries = %q", queries)
			}
		})
	}
}

func TestAnthropicResetsAloneMakeAReport(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"five_hour":null,"juniper_tide":{"eligible":true,"arm":"reset","available":true}}`)
	})
	rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL, anthropicCred()))
	if err != nil || rep == nil {
		t.Fatalf("rep=%v err=%v", rep, err)
	}
	if len(rep.Limits) != 0 || rep.ResetCredits == nil || rep.ResetCredits.AvailableCount != 1 {
		t.Errorf("report = %+v, want no limits and one reset", rep)
	}
}
