package usage

import (
	"context"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// Codex usage constants.
const (
	CodexDefaultBase = provider.CodexBaseURL
	codexUserAgent   = provider.CodexUsageUserAgent
)

// Codex probes the ChatGPT backend's /wham/usage for openai-codex OAuth
// credentials.
type Codex struct{}

// ID returns "openai-codex".
func (Codex) ID() string { return "openai-codex" }

// Supports accepts OAuth credentials only.
func (Codex) Supports(c vault.Credential) bool { return c.Type == vault.TypeOAuth }

// CodexBase normalises a configured base: trailing slashes trimmed, and a
// chatgpt.com / chat.openai.com origin without /backend-api gets it appended.
func CodexBase(base string) string {
	b := trimBase(base)
	if b == "" {
		return CodexDefaultBase
	}
	lower := strings.ToLower(b)
	if (strings.HasPrefix(lower, "https://chatgpt.com") || strings.HasPrefix(lower, "https://chat.openai.com")) &&
		!strings.Contains(lower, "/backend-api") {
		b += "/backend-api"
	}
	return b
}

// Fetch calls GET <base>/wham/usage.
func (p Codex) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	if c.Type != vault.TypeOAuth || c.Access == "" {
		return nil, nil
	}
	now := r.nowMs()
	if c.Expires != 0 && c.Expires <= now {
		r.logger().Warn("Codex usage token expired", "provider", r.Provider)
		return nil, nil
	}
	accountID, email := codexIdentity(c)
	headers := map[string]string{"Authorization": "Bearer " + c.Access, "User-Agent": codexUserAgent}
	if accountID != "" {
		headers["ChatGPT-Account-Id"] = accountID
	}
	payload, _, err := getJSON(ctx, r, http.MethodGet, CodexBase(r.BaseURL)+"/wham/usage", headers, nil)
	if err != nil {
		r.logger().Warn("Codex usage request failed", "provider", r.Provider, "error", err)
		return nil, err
	}
	return CodexReport(payload, now, accountID, email), nil
}

// codexIdentity resolves the account id (credential, else the access-token
// auth claim) and the lowercased email (credential, else the profile claim).
func codexIdentity(c vault.Credential) (accountID, email string) {
	accountID = c.AccountID
	email = c.Email
	if accountID == "" || email == "" {
		claims := vault.JWTClaims(c.Access)
		if accountID == "" {
			accountID = str(object(claims[provider.OpenAIAuthClaim])["chatgpt_account_id"])
		}
		if email == "" {
			email = str(object(claims[provider.OpenAIProfileClaim])["email"])
		}
	}
	return accountID, strings.ToLower(strings.TrimSpace(email))
}

// codexWindow is one parsed rate-limit window.
type codexWindow struct {
	usedPercent, windowSeconds, resetAfter, resetAt *float64
}

func parseCodexWindow(v any) *codexWindow {
	m := object(v)
	if m == nil {
		return nil
	}
	w := &codexWindow{numberPtr(m["used_percent"]), numberPtr(m["limit_window_seconds"]), numberPtr(m["reset_after_seconds"]), numberPtr(m["reset_at"])}
	if w.usedPercent == nil && w.windowSeconds == nil && w.resetAfter == nil && w.resetAt == nil {
		return nil
	}
	return w
}

// codexRateLimit is a parsed rate_limit block.
type codexRateLimit struct {
	allowed, limitReached *bool
	primary, secondary    *codexWindow
}

func parseCodexRateLimit(v any) *codexRateLimit {
	m := object(v)
	if m == nil {
		return nil
	}
	return &codexRateLimit{boolean(m["allowed"]), boolean(m["limit_reached"]), parseCodexWindow(m["primary_window"]), parseCodexWindow(m["secondary_window"])}
}

func (rl *codexRateLimit) empty() bool {
	return rl.primary == nil && rl.secondary == nil && rl.allowed == nil && rl.limitReached == nil
}

func (w *codexWindow) window(key string, now int64) *vault.UsageWindow {
	var resets *int64
	if w.resetAt != nil {
		ms := *w.resetAt
		if ms <= 1e12 {
			ms *= 1000
		}
		if !math.IsInf(ms, 0) {
			resets = ptr(int64(math.Round(ms)))
		}
	} else if w.resetAfter != nil {
		resets = ptr(now + int64(math.Round(*w.resetAfter*1000)))
	}
	if w.windowSeconds != nil {
		id, label := codexWindowLabel(*w.windowSeconds)
		return &vault.UsageWindow{ID: id, Label: label, DurationMs: ptr(int64(math.Round(*w.windowSeconds * 1000))), ResetsAt: resets}
	}
	label := "Primary window"
	if key == "secondary" {
		label = "Secondary window"
	}
	return &vault.UsageWindow{ID: key, Label: label, ResetsAt: resets}
}

func codexWindowLabel(seconds float64) (id, label string) {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	if seconds >= 86400 {
		d := int64(math.Round(seconds / 86400))
		return strconv.FormatInt(d, 10) + "d", plural(d, "day")
	}
	h := max(1, int64(math.Round(seconds/3600)))
	return strconv.FormatInt(h, 10) + "h", plural(h, "hour")
}

func codexLimit(id, label string, w *codexWindow, key string, rl *codexRateLimit, scope vault.UsageScope, now int64) vault.UsageLimit {
	win := w.window(key, now)
	amount := percentAmount(w.usedPercent)
	status := statusFor(amount.UsedFraction)
	if rl.limitReached != nil && *rl.limitReached {
		status = vault.StatusExhausted
	}
	scope.WindowID = win.ID
	scope.Shared = ptr(true)
	if label == "" {
		label = win.Label
	} else {
		label = win.Label + " (" + label + ")"
	}
	return vault.UsageLimit{ID: id, Label: label, Scope: scope, Window: win, Amount: amount, Status: status}
}

var (
	codexPrefix  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^codex[-_]`) })
	nonAlnumRuns = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })
)

// codexSlug names an additional limit: "spark" for Spark/bengalfox meters,
// else the feature (or name) lowercased without a codex- prefix.
func codexSlug(name, feature string) string {
	probe := strings.ToLower(name + " " + feature)
	if strings.Contains(probe, "spark") || strings.Contains(probe, "bengalfox") {
		return "spark"
	}
	src := feature
	if src == "" {
		src = name
	}
	if src == "" {
		src = "extra"
	}
	s := codexPrefix().ReplaceAllString(strings.ToLower(src), "")
	s = strings.Trim(nonAlnumRuns().ReplaceAllString(s, "-"), "-")
	if s == "" {
		return "extra"
	}
	return s
}

func codexDisplayName(slug, name string) string {
	if slug == "spark" {
		return "Spark"
	}
	if name != "" {
		return name
	}
	words := strings.Split(slug, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// CodexReport converts a decoded /wham/usage payload into a report.
// It never fails: unknown shapes give a report without
// limits.
func CodexReport(payload any, now int64, accountID, email string) *vault.UsageReport {
	m := object(payload)
	planType := str(m["plan_type"])
	rep := &vault.UsageReport{Provider: "openai-codex", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload}
	base := vault.UsageScope{Provider: "openai-codex", AccountID: accountID, Tier: planType}
	rl := parseCodexRateLimit(m["rate_limit"])
	if rl == nil {
		rl = &codexRateLimit{}
	}
	if rl.primary != nil {
		rep.Limits = append(rep.Limits, codexLimit("openai-codex:primary", "", rl.primary, "primary", rl, base, now))
	}
	if rl.secondary != nil {
		rep.Limits = append(rep.Limits, codexLimit("openai-codex:secondary", "", rl.secondary, "secondary", rl, base, now))
	}
	for _, item := range array(m["additional_rate_limits"]) {
		am := object(item)
		extra := parseCodexRateLimit(am["rate_limit"])
		if extra == nil || extra.empty() {
			continue
		}
		name, feature := str(am["limit_name"]), str(am["metered_feature"])
		slug := codexSlug(name, feature)
		display := codexDisplayName(slug, name)
		scope := vault.UsageScope{Provider: "openai-codex", AccountID: accountID, Tier: slug, ModelID: name}
		if extra.primary != nil {
			rep.Limits = append(rep.Limits, codexLimit("openai-codex:"+slug+":primary", display, extra.primary, "primary", extra, scope, now))
		}
		if extra.secondary != nil {
			rep.Limits = append(rep.Limits, codexLimit("openai-codex:"+slug+":secondary", display, extra.secondary, "secondary", extra, scope, now))
		}
	}
	if n, ok := number(object(m["rate_limit_reset_credits"])["available_count"]); ok {
		rep.ResetCredits = &vault.ResetCredits{AvailableCount: int64(max(0, math.Trunc(clamp(n, -1, 1<<53))))}
	}
	meta := map[string]any{}
	setMeta(meta, "planType", planType)
	setMeta(meta, "allowed", rl.allowed)
	setMeta(meta, "limitReached", rl.limitReached)
	setMeta(meta, "email", email)
	setMeta(meta, "accountId", accountID)
	rep.Metadata = meta
	return rep
}
