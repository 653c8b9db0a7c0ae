package usage

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// ZaiDefaultBase is the Z.ai API origin.
const ZaiDefaultBase = provider.ZaiBaseURL

// Zai probes the Z.ai coding-plan quota for API-key credentials.
type Zai struct{}

// ID returns "zai".
func (Zai) ID() string { return "zai" }

// Supports accepts API keys only.
func (Zai) Supports(c vault.Credential) bool { return c.Type == vault.TypeAPIKey && c.Key != "" }

// zaiBase reduces a configured base to its origin.
func zaiBase(base string) string {
	b := trimBase(base)
	if b == "" {
		return ZaiDefaultBase
	}
	u, err := url.Parse(b)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ZaiDefaultBase
	}
	return u.Scheme + "://" + u.Host
}

// Fetch calls <base>/api/monitor/usage/quota/limit and, best effort,
// /api/monitor/usage/model-usage for the last week. The key is sent raw in
// Authorization (no Bearer prefix), as the reference does.
func (Zai) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	if c.Type != vault.TypeAPIKey || c.Key == "" {
		return nil, nil
	}
	base := zaiBase(r.BaseURL)
	endpoint := base + "/api/monitor/usage/quota/limit"
	headers := map[string]string{"Authorization": c.Key, "Content-Type": "application/json", "User-Agent": "omp/" + buildinfo.String()}
	payload, _, err := getJSON(ctx, r, http.MethodGet, endpoint, headers, nil)
	if err != nil {
		r.logger().Warn("ZAI usage fetch failed", "error", err)
		return nil, err
	}
	now := r.now()
	rep := ZaiReport(payload, now.UnixMilli())
	if rep == nil {
		return nil, nil
	}
	rep.Metadata["endpoint"] = endpoint
	setMeta(rep.Metadata, "accountId", strings.TrimSpace(c.AccountID))
	setMeta(rep.Metadata, "email", strings.TrimSpace(c.Email))
	start, end := now.Add(-7*24*time.Hour), now
	mu := fmt.Sprintf("%s/api/monitor/usage/model-usage?startTime=%s&endTime=%s", base, url.QueryEscape(zaiDate(start)), url.QueryEscape(zaiDate(end)))
	if v, _, err := getJSON(ctx, r, http.MethodGet, mu, headers, nil); err == nil && object(v) != nil {
		rep.Metadata["modelUsage"] = v
	}
	return rep, nil
}

func zaiDate(t time.Time) string { return t.Format("2006-01-02+15:04:05") }

func zaiWindow(m map[string]any) *vault.UsageWindow {
	count := 1.0
	if n, ok := number(m["number"]); ok && n > 0 {
		count = n
	}
	c := strconv.FormatFloat(count, 'f', -1, 64)
	counted := func(unit string) string {
		if count == 1 {
			return c + " " + unit
		}
		return c + " " + unit + "s"
	}
	w := &vault.UsageWindow{}
	unit, hasUnit := number(m["unit"])
	switch {
	case hasUnit && unit == 3:
		w.ID, w.Label, w.DurationMs = c+"h", counted("Hour"), ptr(int64(count*float64(hourMs)))
	case hasUnit && unit == 4:
		w.ID, w.Label, w.DurationMs = c+"d", counted("Day"), ptr(int64(count*float64(dayMs)))
	case hasUnit && unit == 5:
		w.ID, w.Label, w.DurationMs = c+"mo", counted("Month"), ptr(int64(count*30*float64(dayMs)))
		if count == 1 {
			w.Label = "Monthly"
		}
	case hasUnit && unit == 6:
		w.ID, w.Label, w.DurationMs = "1w", "Weekly", ptr(weekMs)
	case hasUnit:
		w.ID, w.Label = c+"u"+strconv.FormatFloat(unit, 'f', -1, 64), "Quota"
	default:
		w.ID, w.Label = "quota", "Quota"
	}
	if t, ok := number(m["nextResetTime"]); ok {
		if t <= 1e12 {
			t *= 1000
		}
		w.ResetsAt = ptr(int64(math.Round(t)))
	}
	return w
}

// ZaiReport converts a quota/limit payload into a report; nil when the
// payload is not successful or holds no token/request limit. The first limit
// of each kind is "zai:tokens" / "zai:requests"; further windows of the same
// kind get a ":<window>" suffix so ids stay unique.
func ZaiReport(payload any, now int64) *vault.UsageReport {
	m := object(payload)
	if ok, _ := m["success"].(bool); !ok {
		return nil
	}
	data := object(m["data"])
	rep := &vault.UsageReport{Provider: "zai", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload, Metadata: map[string]any{}}
	setMeta(rep.Metadata, "planType", str(data["level"]))
	seen := map[string]bool{}
	for _, it := range array(data["limits"]) {
		lm := object(it)
		var id, unit, label string
		win := zaiWindow(lm)
		switch str(lm["type"]) {
		case "TOKENS_LIMIT":
			id, unit, label = "zai:tokens", "tokens", "ZAI "+win.Label+" Token Quota"
		case "TIME_LIMIT":
			id, unit, label = "zai:requests", "requests", "ZAI Request Quota"
		default:
			continue
		}
		if seen[id] {
			id += ":" + win.ID
		}
		seen[id] = true
		used, limit, rem := numberPtr(lm["currentValue"]), numberPtr(lm["usage"]), numberPtr(lm["remaining"])
		amount := vault.UsageAmount{Used: used, Limit: limit, Remaining: rem, Unit: unit}
		if p, ok := number(lm["percentage"]); ok {
			amount.UsedFraction = ptr(clamp(p/100, 0, 1))
		} else if used != nil && limit != nil && *limit > 0 {
			amount.UsedFraction = ptr(math.Min(*used / *limit, 1))
		}
		if amount.UsedFraction != nil {
			amount.RemainingFraction = ptr(math.Max(1-*amount.UsedFraction, 0))
		}
		status := ""
		if amount.UsedFraction != nil {
			status = statusFor(amount.UsedFraction)
		}
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: id, Label: label, Window: win, Amount: amount, Status: status,
			Scope: vault.UsageScope{Provider: "zai", WindowID: win.ID, Shared: ptr(true)}})
	}
	if len(rep.Limits) == 0 {
		return nil
	}
	return rep
}
