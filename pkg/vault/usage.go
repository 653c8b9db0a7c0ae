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

// ResetCredits counts Codex saved resets.
type ResetCredits struct {
	AvailableCount int64 `json:"availableCount"`
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
