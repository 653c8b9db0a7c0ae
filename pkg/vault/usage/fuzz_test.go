package usage

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// checkReport fails when a decoded report cannot be encoded or violates the
// wire invariants (ids, labels, units).
func checkReport(t *testing.T, r *vault.UsageReport) {
	t.Helper()
	if r == nil {
		return
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("report does not encode: %v", err)
	}
	for _, l := range r.Limits {
		if l.ID == "" || l.Label == "" || l.Amount.Unit == "" {
			t.Fatalf("limit missing id/label/unit: %+v", l)
		}
		if f := l.Amount.UsedFraction; f != nil && l.Amount.Unit == "percent" && (*f < 0 || *f > 1) {
			t.Fatalf("percent used fraction out of range: %v", *f)
		}
	}
}

func FuzzCodexPayload(f *testing.F) {
	f.Add([]byte(codexPayload))
	f.Add([]byte(`{"rate_limit":{"primary_window":{"used_percent":"1e400","reset_at":"-1"}}}`))
	f.Add([]byte(`{"additional_rate_limits":[{"rate_limit":{"limit_reached":true}}],"rate_limit_reset_credits":{"available_count":1e300}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeJSON(b)
		if err != nil {
			return
		}
		r := CodexReport(v, 1767323045000, "acct", "e@x")
		checkReport(t, r)
		if r.ResetCredits != nil && r.ResetCredits.AvailableCount < 0 {
			t.Fatalf("negative reset credits %d", r.ResetCredits.AvailableCount)
		}
	})
}

func FuzzAnthropicPayload(f *testing.F) {
	f.Add([]byte(anthropicPayload))
	f.Add([]byte(`{"five_hour":{"utilization":"NaN","resets_at":"not a date"},"account":{"uuid":7}}`))
	f.Add([]byte(`{"seven_day_opus":{"utilization":-5},"organization":{"id":" o "}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeJSON(b)
		if err != nil {
			return
		}
		r := AnthropicReport(v, 1767323045000)
		checkReport(t, r)
		if m := object(v); m != nil {
			anthropicIdentity(m)
			if anthropicHasData(m) != (len(r.Limits) > 0) {
				t.Fatalf("hasData disagrees with limits: %d", len(r.Limits))
			}
		}
	})
}

func FuzzOtherPayloads(f *testing.F) {
	f.Add([]byte(`{"models":{"m":{"quotaInfoByWindow":{"WINDOW_WEEKLY":[{"remainingFraction":2}]},"quotaInfoByTier":{"t":{"resetTime":"2026-01-01T00:00:00Z"}}}}}`))
	f.Add([]byte(`{"success":true,"data":{"limits":[{"type":"TIME_LIMIT","unit":9,"number":-1,"percentage":"50"}]}}`))
	f.Add([]byte(`{"usage":{"limit":0,"used":1},"limits":[{"detail":{"remaining":1,"limit":2},"window":{"duration":"1","timeUnit":"WEEK"}}]}`))
	f.Add([]byte(antigravitySummary))
	f.Add([]byte(`{"buckets":[{"bucketId":"3p-x","remainingAmount":"nope","disabled":false}],"groups":[{"buckets":[null,{"window":7}]}]}`))
	f.Add([]byte(`{"buckets":[{"modelId":"m","remainingFraction":-3}],"copilot_plan":1,"quota_snapshots":{"premium_interactions":{"entitlement":1,"remaining":2,"percent_remaining":1,"unlimited":false}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeJSON(b)
		if err != nil {
			return
		}
		checkReport(t, AntigravityReport(v, 1, "a", "p"))
		checkReport(t, AntigravitySummaryReport(v, 1, "a", "p"))
		checkReport(t, ZaiReport(v, 1))
		checkReport(t, KimiReport(v, 1, "a"))
		checkReport(t, GeminiReport(v, 1, "a", "p"))
		if m := object(v); m != nil {
			checkReport(t, CopilotQuotaReport(m, 1, "a"))
		}
		checkReport(t, CopilotBillingReport(v, 1))
	})
}

// FuzzClaudeResets: whatever the reset blocks hold, reading them never
// panics, counts stay non-negative and the result encodes.
func FuzzClaudeResets(f *testing.F) {
	f.Add([]byte(`{"cedar_ember":{"eligible":true,"next_grant_id":"g","cooldown_until":"2026-01-01T00:00:00Z",` +
		`"grants":[{"id":"g","resets_left":2,"clears":["five_hour"],"blocking":[],"percent_used":{"seven_day":40},"usable_now":true}]}}`))
	f.Add([]byte(`{"juniper_tide":{"eligible":true,"arm":"reset","available":false,"next_available_at":"2026-01-03T00:00:00Z"}}`))
	f.Add([]byte(`{"cedar_ember":{"eligible":true,"grants":[{"id":"G!","resets_left":-1}]},"juniper_tide":{"eligible":"x"}}`))
	f.Add([]byte(`{"cedar_ember":{"eligible":false,"grants":null,"exhausted":["five_hour",3]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeJSON(b)
		if err != nil || object(v) == nil {
			return
		}
		rc := claudePayloadResets(object(v), 1767323045000)
		if rc == nil {
			return
		}
		if rc.AvailableCount < 0 || (rc.RedeemableCount != nil && *rc.RedeemableCount < 0) {
			t.Fatalf("negative counts: %+v", rc)
		}
		if _, err := json.Marshal(rc); err != nil {
			t.Fatalf("resets do not encode: %v", err)
		}
	})
}
