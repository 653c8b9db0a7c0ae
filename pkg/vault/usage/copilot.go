package usage

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// GitHub Copilot usage constants.
const (
	CopilotDefaultAPI = provider.CopilotAPIURL
	copilotUserAgent  = provider.CopilotUserAgent
)

// Copilot probes GitHub's Copilot quota (OAuth) or premium-request billing
// usage (API keys).
type Copilot struct{}

// ID returns "github-copilot".
func (Copilot) ID() string { return "github-copilot" }

// Supports accepts OAuth credentials with a token and non-empty API keys.
func (Copilot) Supports(c vault.Credential) bool {
	if c.Type == vault.TypeOAuth {
		return c.Refresh != "" || c.Access != ""
	}
	return c.Key != ""
}

// copilotAPI resolves the GitHub API base: a configured base (unless it is a
// githubcopilot.com host), else https://api.<enterprise host>, else
// api.github.com.
func copilotAPI(base string, c vault.Credential) string {
	if b := trimBase(base); b != "" && !strings.Contains(b, "githubcopilot.com") {
		return b
	}
	e := strings.TrimSpace(c.EnterpriseURL)
	switch {
	case e == "":
		return CopilotDefaultAPI
	case strings.HasPrefix(e, "http://") || strings.HasPrefix(e, "https://"):
		return strings.TrimSuffix(e, "/")
	case strings.HasPrefix(e, "api."):
		return "https://" + e
	}
	return "https://api." + e
}

func githubHeaders(token string) map[string]string {
	return map[string]string{"Accept": "application/vnd.github+json", "Authorization": "Bearer " + token, "X-GitHub-Api-Version": "2022-11-28"}
}

func (Copilot) login(ctx context.Context, r Request, api, token string) string {
	v, _, err := getJSON(ctx, r, http.MethodGet, api+"/user", githubHeaders(token), nil)
	if err != nil {
		return ""
	}
	return str(object(v)["login"])
}

func (p Copilot) internal(ctx context.Context, r Request, api, token string) (map[string]any, error) {
	v, _, err := getJSON(ctx, r, http.MethodGet, api+"/copilot_internal/user", map[string]string{
		"Content-Type": "application/json", "Accept": "application/json", "Authorization": "Bearer " + token, "User-Agent": copilotUserAgent}, nil)
	if err != nil {
		return nil, err
	}
	m := object(v)
	if m == nil {
		return nil, fmt.Errorf("invalid Copilot usage response")
	}
	return m, nil
}

// Fetch reads the quota snapshots (OAuth: with the GitHub token, which the
// vault stores as the refresh token) or the billing usage (API key).
func (p Copilot) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	if !p.Supports(c) {
		return nil, nil
	}
	api := copilotAPI(r.BaseURL, c)
	now := r.nowMs()
	if c.Type == vault.TypeAPIKey {
		user := cmp.Or(strings.TrimSpace(c.AccountID), extra(c, "username"), extra(c, "user"))
		if user == "" {
			user = p.login(ctx, r, api, c.Key)
		}
		if user != "" {
			v, _, err := getJSON(ctx, r, http.MethodGet, api+"/users/"+url.PathEscape(user)+"/settings/billing/premium_request/usage", githubHeaders(c.Key), nil)
			if err == nil && object(v) != nil {
				rep := CopilotBillingReport(v, now)
				setMeta(rep.Metadata, "email", c.Email)
				return rep, nil
			}
			r.logger().Warn("Copilot usage fetch failed", "error", err)
		}
		m, err := p.internal(ctx, r, api, c.Key)
		if err != nil {
			r.logger().Warn("Copilot usage fetch failed", "error", err)
			return nil, err
		}
		rep := CopilotQuotaReport(m, now, user)
		return rep, nil
	}
	token := cmp.Or(c.Refresh, c.Access)
	m, err := p.internal(ctx, r, api, token)
	if err != nil {
		r.logger().Warn("Copilot usage fetch failed", "error", err)
		return nil, err
	}
	account := c.AccountID
	if account == "" && c.Refresh != "" {
		account = p.login(ctx, r, api, c.Refresh)
	}
	if account == "" && c.Access != "" {
		account = p.login(ctx, r, api, c.Access)
	}
	rep := CopilotQuotaReport(m, now, account)
	setMeta(rep.Metadata, "email", c.Email)
	return rep, nil
}

type copilotQuota struct {
	entitlement, remaining, overage float64
	unlimited                       bool
}

func parseCopilotQuota(v any) *copilotQuota {
	m := object(v)
	ent, ok1 := number(m["entitlement"])
	rem, ok2 := number(m["remaining"])
	_, ok3 := number(m["percent_remaining"])
	unl := boolean(m["unlimited"])
	if !ok1 || !ok2 || !ok3 || unl == nil {
		return nil
	}
	over, _ := number(m["overage_count"])
	return &copilotQuota{ent, rem, over, *unl}
}

func copilotAmount(used, limit *float64) vault.UsageAmount {
	a := vault.UsageAmount{Used: used, Limit: limit, Unit: "requests"}
	if used != nil && limit != nil {
		a.Remaining = ptr(math.Max(0, *limit-*used))
		if *limit > 0 {
			a.UsedFraction = ptr(*used / *limit)
			a.RemainingFraction = ptr(*a.Remaining / *limit)
		}
	}
	return a
}

func copilotStatus(a vault.UsageAmount, unlimited bool) string {
	switch {
	case unlimited:
		return vault.StatusOK
	case a.RemainingFraction == nil:
		return vault.StatusUnknown
	case *a.RemainingFraction <= 0:
		return vault.StatusExhausted
	case *a.RemainingFraction <= 0.1:
		return vault.StatusWarning
	}
	return vault.StatusOK
}

// CopilotQuotaReport converts a /copilot_internal/user payload into a report
// with copilot:premium (and chat/completions when metered) limits.
func CopilotQuotaReport(payload map[string]any, now int64, accountID string) *vault.UsageReport {
	plan := str(payload["copilot_plan"])
	reset := str(payload["quota_reset_date"])
	var win *vault.UsageWindow
	if t := parseISO(reset); t != nil {
		win = &vault.UsageWindow{ID: "monthly", Label: "Monthly", ResetsAt: t}
	}
	rep := &vault.UsageReport{Provider: "github-copilot", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload, Metadata: map[string]any{}}
	snaps := object(payload["quota_snapshots"])
	for _, s := range []struct{ key, field, label string }{
		{"premium", "premium_interactions", "Premium Requests"}, {"chat", "chat", "Chat Requests"}, {"completions", "completions", "Completions"},
	} {
		q := parseCopilotQuota(snaps[s.field])
		if q == nil || (q.unlimited && s.key != "premium") {
			continue
		}
		var used, limit *float64
		if !q.unlimited {
			used, limit = ptr(math.Max(0, q.entitlement-q.remaining)), ptr(q.entitlement)
		}
		amount := copilotAmount(used, limit)
		var notes []string
		if q.unlimited {
			notes = append(notes, "Unlimited")
		}
		if q.overage > 0 {
			notes = append(notes, fmt.Sprintf("Overage requests: %v", q.overage))
		}
		scope := vault.UsageScope{Provider: "github-copilot", AccountID: accountID, Tier: plan}
		if win != nil {
			scope.WindowID = win.ID
		}
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: "copilot:" + s.key, Label: s.label, Scope: scope, Window: win,
			Amount: amount, Status: copilotStatus(amount, q.unlimited), Notes: notes})
	}
	setMeta(rep.Metadata, "accountId", accountID)
	setMeta(rep.Metadata, "plan", plan)
	setMeta(rep.Metadata, "quotaResetDate", reset)
	return rep
}

// CopilotBillingReport converts a premium_request/usage billing payload.
func CopilotBillingReport(payload any, now int64) *vault.UsageReport {
	m := object(payload)
	user := str(m["user"])
	period := object(m["timePeriod"])
	year, _ := number(period["year"])
	label := fmt.Sprintf("%d", int64(year))
	if month, ok := number(period["month"]); ok && month != 0 {
		label = fmt.Sprintf("%d-%02d", int64(year), int64(month))
	}
	win := &vault.UsageWindow{ID: "billing-period", Label: label}
	var used, limit float64
	items := array(m["usageItems"])
	for _, it := range items {
		im := object(it)
		if sku := str(im["sku"]); sku == "Copilot Premium Request" || strings.Contains(sku, "Premium") {
			g, _ := number(im["grossQuantity"])
			l, _ := number(im["limit"])
			used, limit = used+g, limit+l
		}
	}
	var lp *float64
	if limit != 0 {
		lp = &limit
	}
	amount := copilotAmount(&used, lp)
	rep := &vault.UsageReport{Provider: "github-copilot", FetchedAt: now, Raw: payload, Metadata: map[string]any{}}
	rep.Limits = []vault.UsageLimit{{ID: "copilot:premium", Label: "Premium Requests", Window: win, Amount: amount,
		Scope: vault.UsageScope{Provider: "github-copilot", AccountID: user, WindowID: win.ID}, Status: copilotStatus(amount, false)}}
	for _, it := range items {
		im := object(it)
		model := str(im["model"])
		g, _ := number(im["grossQuantity"])
		if model == "" || g <= 0 {
			continue
		}
		a := copilotAmount(&g, numberPtr(im["limit"]))
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: "copilot:model:" + model, Label: "Model " + model, Window: win, Amount: a,
			Scope: vault.UsageScope{Provider: "github-copilot", AccountID: user, ModelID: model, WindowID: win.ID}, Status: copilotStatus(a, false)})
	}
	setMeta(rep.Metadata, "accountId", user)
	setMeta(rep.Metadata, "account", user)
	if period != nil {
		rep.Metadata["period"] = period
	}
	return rep
}
