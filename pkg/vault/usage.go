package vault

import "strings"

// Usage report shapes. Optional fields are pointers or omitted
// when empty; Raw is never serialised.

// Usage limit statuses.
const (
	StatusOK        = "ok"
	StatusWarning   = "warning"
	StatusExhausted = "exhausted"
	StatusUnknown   = "unknown"
)

// UsageReport is one account's usage as reported by a provider.
type UsageReport struct {
	Provider     string         `json:"provider"`
	FetchedAt    int64          `json:"fetchedAt"`
	Limits       []UsageLimit   `json:"limits"`
	ResetCredits *ResetCredits  `json:"resetCredits,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Raw          any            `json:"-"`
}

// ResetCredits is the saved (banked) rate-limit resets of an account:
// Codex saved resets and Claude reset grants. Every field but
// AvailableCount is optional.
type ResetCredits struct {
	// AvailableCount counts banked resets, usable now or not.
	AvailableCount int64 `json:"availableCount"`
	// RedeemableCount counts the resets the provider lets the account
	// redeem now.
	RedeemableCount *int64 `json:"redeemableCount,omitempty"`
	// NextCreditID is the credit the provider selected for the next
	// redemption.
	NextCreditID string `json:"nextCreditId,omitempty"`
	// Eligible says whether the account may use the reset program at all.
	Eligible *bool `json:"eligible,omitempty"`
	// Reason is the provider's reason the program or its credits are
	// unavailable.
	Reason string `json:"reason,omitempty"`
	// CooldownUntil is the ISO time until which redemption cools down.
	CooldownUntil string `json:"cooldownUntil,omitempty"`
	// Credits are the individual credits, when the provider lists them.
	Credits []ResetCredit `json:"credits,omitzero"`
}

// ResetCredit is one saved reset (a credit or grant). Limit ids in Clears,
// Blocking and UsedFractions are UsageLimit.ID values. Empty lists and maps
// are kept on the wire ([] and {}); absent ones are nil.
type ResetCredit struct {
	ID             string             `json:"id,omitempty"`
	Title          string             `json:"title,omitempty"`
	Program        string             `json:"program,omitempty"`
	RemainingCount *int64             `json:"remainingCount,omitempty"`
	Usable         *bool              `json:"usable,omitempty"`
	RequiresLimit  *bool              `json:"requiresLimit,omitempty"`
	Clears         []string           `json:"clears,omitzero"`
	Blocking       []string           `json:"blocking,omitzero"`
	UsedFractions  map[string]float64 `json:"usedFractions,omitzero"`
	GrantedAt      string             `json:"grantedAt,omitempty"` // ISO time
	ExpiresAt      string             `json:"expiresAt,omitempty"` // ISO time
	Status         string             `json:"status,omitempty"`    // e.g. available, redeemed, expired
}

// UsageLimit is one limit of a report.
type UsageLimit struct {
	ID     string       `json:"id"`
	Label  string       `json:"label"`
	Scope  UsageScope   `json:"scope"`
	Window *UsageWindow `json:"window,omitempty"`
	Amount UsageAmount  `json:"amount"`
	Status string       `json:"status,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
}

// UsageScope says what a limit applies to.
type UsageScope struct {
	Provider  string `json:"provider"`
	AccountID string `json:"accountId,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
	OrgID     string `json:"orgId,omitempty"`
	ModelID   string `json:"modelId,omitempty"`
	Tier      string `json:"tier,omitempty"`
	WindowID  string `json:"windowId,omitempty"`
	Shared    *bool  `json:"shared,omitempty"`
	// SharedGroup names the pool several limits draw from
	// ("<bucket>:<window>"): limits with the same group are one quota.
	SharedGroup string `json:"sharedGroup,omitempty"`
}

// UsageWindow is a limit's time window.
type UsageWindow struct {
	ID         string `json:"id"`
	Label      string `json:"label"`
	DurationMs *int64 `json:"durationMs,omitempty"`
	ResetsAt   *int64 `json:"resetsAt,omitempty"`
}

// UsageAmount is how much of a limit is used.
type UsageAmount struct {
	Used              *float64 `json:"used,omitempty"`
	Limit             *float64 `json:"limit,omitempty"`
	Remaining         *float64 `json:"remaining,omitempty"`
	UsedFraction      *float64 `json:"usedFraction,omitempty"`
	RemainingFraction *float64 `json:"remainingFraction,omitempty"`
	Unit              string   `json:"unit"`
}

// ResolveUsedFraction implements resolveUsedFraction.
func (l UsageLimit) ResolveUsedFraction() (float64, bool) {
	a := l.Amount
	switch {
	case a.UsedFraction != nil:
		return *a.UsedFraction, true
	case a.Used != nil && a.Limit != nil && *a.Limit > 0:
		return *a.Used / *a.Limit, true
	case a.Unit == "percent" && a.Used != nil:
		return *a.Used / 100, true
	case a.RemainingFraction != nil:
		return max(0, 1-*a.RemainingFraction), true
	}
	return 0, false
}

// AntigravityCounterLimits returns the limits of one Antigravity backend
// quota counter: ids "google-antigravity:<counter>:…" (compared in lower
// case), in report order. Selection scopes a request to them and the
// broker heals a counter's block by them.
func AntigravityCounterLimits(ls []UsageLimit, counter string) []UsageLimit {
	prefix := "google-antigravity:" + counter + ":"
	var out []UsageLimit
	for _, l := range ls {
		if strings.HasPrefix(strings.ToLower(l.ID), prefix) {
			out = append(out, l)
		}
	}
	return out
}

// Exhausted reports whether the limit is used up.
func (l UsageLimit) Exhausted() bool {
	a := l.Amount
	return l.Status == StatusExhausted ||
		(a.UsedFraction != nil && *a.UsedFraction >= 1) ||
		(a.RemainingFraction != nil && *a.RemainingFraction <= 0) ||
		(a.Used != nil && a.Limit != nil && *a.Used >= *a.Limit) ||
		(a.Remaining != nil && *a.Remaining <= 0) ||
		(a.Unit == "percent" && a.Used != nil && *a.Used >= 100)
}
