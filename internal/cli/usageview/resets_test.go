package usageview

import (
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func TestSummarizeResets(t *testing.T) {
	// fixedNow is 2026-01-02T03:04:05Z.
	tests := []struct {
		name string
		rc   *vault.ResetCredits
		want resetSummary
	}{
		{"none", nil, resetSummary{}},
		{"count only", &vault.ResetCredits{AvailableCount: 2}, resetSummary{banked: 2, redeemable: 2}},
		{"soonest future expiry, spent credits skipped",
			&vault.ResetCredits{AvailableCount: 3, Credits: []vault.ResetCredit{
				{ID: "a", ExpiresAt: "2026-01-09T00:00:00.000Z"},
				{ID: "b", ExpiresAt: "2026-01-03T00:00:00.000Z", Status: "redeemed"},
				{ID: "c", ExpiresAt: "2026-01-04T00:00:00.000Z", RemainingCount: i64p(0)},
				{ID: "d", ExpiresAt: "2026-01-05T00:00:00.000Z"},
				{ID: "e", ExpiresAt: "2025-12-01T00:00:00.000Z"},
			}},
			resetSummary{banked: 3, redeemable: 3, expiry: "2026-01-05T00:00:00.000Z"}},
		{"latest past expiry when none is ahead",
			&vault.ResetCredits{AvailableCount: 1, Credits: []vault.ResetCredit{
				{ID: "a", ExpiresAt: "2025-11-01T00:00:00.000Z"}, {ID: "b", ExpiresAt: "2025-12-01T00:00:00.000Z"}}},
			resetSummary{banked: 1, redeemable: 1, expiry: "2025-12-01T00:00:00.000Z"}},
		{"cooldown", &vault.ResetCredits{AvailableCount: 1, RedeemableCount: i64p(0), CooldownUntil: "2026-01-03T00:00:00.000Z"},
			resetSummary{banked: 1, reason: "cooldown until 2026-01-03T00:00:00.000Z"}},
		{"next credit blocked",
			&vault.ResetCredits{AvailableCount: 1, RedeemableCount: i64p(0), NextCreditID: "g", Credits: []vault.ResetCredit{
				{ID: "x", Status: "paused"}, {ID: "g", Blocking: []string{"anthropic:7d", "anthropic:reset:x"}, Status: "unavailable"}}},
			resetSummary{banked: 1, reason: "blocked by Claude weekly, anthropic:reset:x"}},
		{"first usable credit's status",
			&vault.ResetCredits{AvailableCount: 1, RedeemableCount: i64p(0), Credits: []vault.ResetCredit{
				{ID: "x", Usable: f(false), Status: "expired"}, {ID: "y", Status: "paused"}}},
			resetSummary{banked: 1, reason: "paused"}},
		{"ineligible", &vault.ResetCredits{Eligible: f(false)}, resetSummary{reason: "not eligible"}},
		{"none usable", &vault.ResetCredits{AvailableCount: 2, RedeemableCount: i64p(0), Eligible: f(true)},
			resetSummary{banked: 2, reason: "not usable right now"}},
	}
	for _, tt := range tests {
		if got := summarizeResets(tt.rc, fixedNow); got != tt.want {
			t.Errorf("%s: summarizeResets = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestCollapseSharedKeepsTheFirstOfAGroup(t *testing.T) {
	lim := func(id, group string) vault.UsageLimit {
		return vault.UsageLimit{ID: id, Scope: vault.UsageScope{SharedGroup: group}}
	}
	in := []vault.UsageReport{
		{Provider: "google-antigravity", Limits: []vault.UsageLimit{lim("a", "g:w"), lim("b", ""), lim("c", "g:w"), lim("d", "h:w")}},
		{Provider: "anthropic", Limits: []vault.UsageLimit{lim("e", "")}},
	}
	out := collapseShared(in)
	var ids []string
	for _, l := range out[0].Limits {
		ids = append(ids, l.ID)
	}
	if len(ids) != 3 || ids[0] != "a" || ids[1] != "b" || ids[2] != "d" || len(out[1].Limits) != 1 {
		t.Errorf("collapsed = %v, %v", ids, out[1].Limits)
	}
	if len(in[0].Limits) != 4 {
		t.Error("the caller's report was changed")
	}
}
