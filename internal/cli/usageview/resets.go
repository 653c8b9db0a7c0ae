package usageview

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// resetSummary is what an account header says about saved resets.
type resetSummary struct {
	banked, redeemable int64
	expiry             string // the soonest future expiry, else the latest past one; ISO
	reason             string // why none can be redeemed, "" when unknown
}

// summarizeResets condenses a report's saved resets: counts, the soonest
// expiry of a credit still holding resets, and the first reason that
// applies — the provider's, a cooldown, the limits blocking the next
// credit, that credit's status, ineligibility, or none usable now.
func summarizeResets(rc *vault.ResetCredits, now int64) resetSummary {
	if rc == nil {
		return resetSummary{}
	}
	sum := resetSummary{banked: max(0, rc.AvailableCount), redeemable: max(0, rc.AvailableCount)}
	if rc.RedeemableCount != nil {
		sum.redeemable = max(0, *rc.RedeemableCount)
	}
	soonest, latestPast := int64(math.MaxInt64), int64(math.MinInt64)
	var past string
	for _, c := range rc.Credits {
		if c.ExpiresAt == "" || (c.RemainingCount != nil && *c.RemainingCount == 0) || c.Status == "redeemed" {
			continue
		}
		at, ok := parseTimeOK(c.ExpiresAt)
		switch {
		case !ok:
		case at > now && at < soonest:
			soonest, sum.expiry = at, c.ExpiresAt
		case at <= now && at > latestPast:
			latestPast, past = at, c.ExpiresAt
		}
	}
	if sum.expiry == "" {
		sum.expiry = past
	}
	var next *vault.ResetCredit
	if rc.NextCreditID != "" {
		if i := slices.IndexFunc(rc.Credits, func(c vault.ResetCredit) bool { return c.ID == rc.NextCreditID }); i >= 0 {
			next = &rc.Credits[i]
		}
	} else if i := slices.IndexFunc(rc.Credits, func(c vault.ResetCredit) bool { return c.Usable == nil || *c.Usable }); i >= 0 {
		next = &rc.Credits[i]
	} else if len(rc.Credits) > 0 {
		next = &rc.Credits[0]
	}
	switch {
	case rc.Reason != "":
		sum.reason = rc.Reason
	case rc.CooldownUntil != "":
		sum.reason = "cooldown until " + rc.CooldownUntil
	case next != nil && len(next.Blocking) > 0:
		names := make([]string, len(next.Blocking))
		for i, id := range next.Blocking {
			names[i] = resetLimitName(id)
		}
		sum.reason = "blocked by " + strings.Join(names, ", ")
	case next != nil && next.Status != "" && next.Status != "available":
		sum.reason = next.Status
	case rc.Eligible != nil && !*rc.Eligible:
		sum.reason = "not eligible"
	case sum.banked > 0 && sum.redeemable == 0:
		sum.reason = "not usable right now"
	}
	return sum
}

// resetLimitName names a limit a reset is blocked by.
func resetLimitName(id string) string {
	switch id {
	case "anthropic:5h":
		return "Claude 5h"
	case "anthropic:7d":
		return "Claude weekly"
	case "anthropic:7d:opus":
		return "Claude Opus weekly"
	case "anthropic:7d:sonnet":
		return "Claude Sonnet weekly"
	}
	return id
}

func parseTimeOK(iso string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(iso))
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

func parseTime(iso string) int64 {
	ms, _ := parseTimeOK(iso)
	return ms
}

// oneLine replaces each run of line breaks and tabs with one space.
func oneLine(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range s {
		if r == '\r' || r == '\n' || r == '\t' {
			if !gap {
				b.WriteByte(' ')
			}
			gap = true
			continue
		}
		gap = false
		b.WriteRune(r)
	}
	return b.String()
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// collapseShared drops, within each report, every limit of a shared group
// after the first: one quota reported under several model families is
// shown once. The reports passed in are not changed.
func collapseShared(reports []vault.UsageReport) []vault.UsageReport {
	var out []vault.UsageReport
	for i, r := range reports {
		seen := map[string]bool{}
		kept := make([]vault.UsageLimit, 0, len(r.Limits))
		for _, l := range r.Limits {
			if g := l.Scope.SharedGroup; g != "" {
				if seen[g] {
					continue
				}
				seen[g] = true
			}
			kept = append(kept, l)
		}
		if len(kept) == len(r.Limits) {
			continue
		}
		if out == nil {
			out = slices.Clone(reports)
		}
		out[i].Limits = kept
	}
	if out == nil {
		return reports
	}
	return out
}
