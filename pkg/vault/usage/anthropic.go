package usage

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/internal/retryafter"
	"github.com/ompgo/omp/pkg/vault"
)

// Anthropic usage constants.
const (
	AnthropicDefaultBase = provider.AnthropicUsageBaseURL
	anthropicBeta        = provider.AnthropicBetasUsage
	anthropicAttempts    = 3
	anthropicBaseDelay   = 500 * time.Millisecond
	hourMs               = int64(3_600_000)
	dayMs                = 24 * hourMs
	weekMs               = 7 * dayMs
)

// Anthropic probes <base>/usage for Claude OAuth credentials.
type Anthropic struct{}

// ID returns "anthropic".
func (Anthropic) ID() string { return "anthropic" }

// Supports accepts OAuth credentials only.
func (Anthropic) Supports(c vault.Credential) bool { return c.Type == vault.TypeOAuth }

// AnthropicBase normalises a configured base: trailing slashes and a
// trailing /v1 dropped, /api/oauth appended unless already present.
func AnthropicBase(base string) string {
	b := trimBase(base)
	if b == "" {
		return AnthropicDefaultBase
	}
	if strings.HasSuffix(strings.ToLower(b), "/api/oauth") {
		return b
	}
	if strings.HasSuffix(strings.ToLower(b), "/v1") {
		b = trimBase(b[:len(b)-3])
	}
	return b + "/api/oauth"
}

func anthropicHeaders(access string) map[string]string {
	return map[string]string{
		"accept":         "application/json, text/plain, */*",
		"anthropic-beta": anthropicBeta,
		"content-type":   "application/json",
		"user-agent":     provider.ClaudeCodeUserAgent(),
		"authorization":  "Bearer " + access,
	}
}

// Fetch calls GET <base>/usage with up to three attempts, reads the saved
// resets from that answer or discovers them (claudeListResets), then
// resolves the account identity (payload, organization header, credential,
// /profile). A report needs a limit or a saved reset.
// Like the reference (pi-ai usage/claude.ts fetchUsagePayload), a failed
// probe — refused credential, exhausted retries, transport error — is no
// report rather than an error (logged as warnings), so `auth-gateway check`
// reads ok=null "usage probe returned no data for this credential" there.
func (p Anthropic) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	if c.Type != vault.TypeOAuth || c.Access == "" {
		return nil, nil
	}
	base := AnthropicBase(r.BaseURL)
	url := base + "/usage"
	headers := anthropicHeaders(c.Access)
	payload, hdr, err := anthropicUsage(ctx, r, url, headers)
	if r.ModelBase && base != AnthropicDefaultBase && ctx.Err() == nil && noUsageEndpoint(payload, err) {
		// A models.yml base that has no usage endpoint (a proxy): the
		// default is tried next (18.1.21). A 401/403 or a transient
		// failure there stands.
		r.logger().Warn("Claude usage endpoint missing at the configured base; trying the default")
		base = AnthropicDefaultBase
		url = base + "/usage"
		payload, hdr, _ = anthropicUsage(ctx, r, url, headers)
	}
	if payload == nil {
		return nil, nil
	}
	rep := AnthropicReport(payload, r.nowMs())
	resets := claudePayloadResets(payload, r.nowMs())
	if resets == nil && ctx.Err() == nil {
		resets = claudeListResets(ctx, r, base, headers)
	}
	if len(rep.Limits) == 0 && (resets == nil || !hasInventory(resets) && len(resets.Credits) == 0) {
		return nil, nil
	}
	rep.ResetCredits = resets
	accountID, email, orgID := anthropicIdentity(payload)
	if h := strings.TrimSpace(hdr.Get("anthropic-organization-id")); h != "" {
		if accountID == "" {
			accountID = h
		}
		orgID = h
	}
	if accountID == "" {
		accountID = strings.TrimSpace(c.AccountID)
	}
	if email == "" {
		email = strings.TrimSpace(c.Email)
	}
	if orgID == "" {
		orgID = extra(c, "orgId")
	}
	if (accountID == "" || email == "") && ctx.Err() == nil {
		if prof, _, err := getJSON(ctx, r, http.MethodGet, base+"/profile", headers, nil); err == nil {
			pm, acct := object(prof), object(object(prof)["account"])
			if accountID == "" {
				accountID = cmp.Or(trimmed(pm, "uuid"), trimmed(acct, "uuid"))
			}
			if email == "" {
				email = cmp.Or(trimmed(pm, "email"), trimmed(acct, "email"))
			}
		}
	}
	meta := map[string]any{"endpoint": url}
	setMeta(meta, "accountId", accountID)
	setMeta(meta, "email", email)
	setMeta(meta, "orgId", orgID)
	rep.Metadata = meta
	return rep, nil
}

// noUsageEndpoint reports whether an answer shows the host has no usage
// endpoint at all: 404/405/410/501, an empty or non-JSON 2xx body, or JSON
// that is not a usage payload.
func noUsageEndpoint(payload map[string]any, err error) bool {
	var se *StatusError
	var nj *notJSONError
	switch {
	case errors.As(err, &se):
		return se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed ||
			se.Status == http.StatusGone || se.Status == http.StatusNotImplemented
	case errors.As(err, &nj):
		return true
	case err != nil:
		return false
	}
	return payload == nil || !anthropicHasData(payload) && object(payload[claudeCedarProgram]) == nil &&
		object(payload[claudeJuniperProgram]) == nil
}

// anthropicUsage fetches the usage payload, retrying 429/5xx answers,
// network errors and payloads without usage data. It returns the last
// object payload seen (possibly without data) and its headers.
func anthropicUsage(ctx context.Context, r Request, url string, headers map[string]string) (map[string]any, http.Header, error) {
	var (
		last    map[string]any
		lastHdr http.Header
		lastErr error
	)
	for attempt := range anthropicAttempts {
		retryAfter := ""
		v, hdr, err := getJSON(ctx, r, http.MethodGet, url, headers, nil)
		var se *StatusError
		switch {
		case err == nil:
			if m := object(v); m != nil {
				last, lastHdr = m, hdr
				if anthropicHasData(m) || claudePayloadResets(m, r.nowMs()) != nil {
					return m, hdr, nil
				}
			}
			lastErr = nil
			r.logger().Warn("Claude usage response missing usage data", "attempt", attempt)
		case errors.As(err, &se):
			lastErr = err
			if se.Status != http.StatusTooManyRequests && se.Status < 500 {
				r.logger().Warn("Claude usage fetch failed", "status", se.Status, "attempt", attempt)
				return last, lastHdr, err
			}
			r.logger().Warn("Claude usage fetch failed", "status", se.Status, "attempt", attempt, "willRetry", attempt < anthropicAttempts-1)
			retryAfter = hdr.Get("retry-after")
		default:
			lastErr = err
			if ctx.Err() != nil {
				return last, lastHdr, err
			}
			r.logger().Warn("Claude usage fetch error", "error", err, "attempt", attempt)
		}
		if attempt == anthropicAttempts-1 {
			break
		}
		if err := r.wait(ctx, retryDelay(attempt, retryAfter, r.now())); err != nil {
			return last, lastHdr, err
		}
	}
	return last, lastHdr, lastErr
}

// retryDelay is 500 ms × 2^attempt, raised to Retry-After (seconds or an
// HTTP date) when larger, and at most maxAnthropicRetryAfter.
func retryDelay(attempt int, retryAfter string, now time.Time) time.Duration {
	return max(anthropicBaseDelay<<attempt, min(retryafter.Header(retryAfter, now), maxAnthropicRetryAfter))
}

// maxAnthropicRetryAfter caps the wait between usage attempts (the caller's
// context bounds it too).
const maxAnthropicRetryAfter = time.Hour

type anthropicBucket struct {
	id, label, tier string
	key             string
	shared          bool
}

var anthropicBuckets = []anthropicBucket{
	{"anthropic:5h", "Claude 5 Hour", "", "five_hour", true},
	{"anthropic:7d", "Claude 7 Day", "", "seven_day", true},
	{"anthropic:7d:opus", "Claude 7 Day (Opus)", "opus", "seven_day_opus", false},
	{"anthropic:7d:sonnet", "Claude 7 Day (Sonnet)", "sonnet", "seven_day_sonnet", false},
}

func anthropicHasData(m map[string]any) bool {
	for _, b := range anthropicBuckets {
		if _, ok := number(object(m[b.key])["utilization"]); ok {
			return true
		}
	}
	return len(anthropicScopedLimits(m)) > 0
}

// anthropicScopedLimits reads the model-scoped weekly caps of the `limits`
// array: entries of kind "weekly_scoped" naming a model family in
// scope.model.display_name become "anthropic:7d:<slug>" with tier <slug>
// (the first entry of a slug wins). They are not shared: an exhausted
// family cap must not block the account's other models.
func anthropicScopedLimits(m map[string]any) []vault.UsageLimit {
	var out []vault.UsageLimit
	seen := map[string]bool{}
	for _, raw := range array(m["limits"]) {
		e := object(raw)
		if str(e["kind"]) != "weekly_scoped" {
			continue
		}
		name := trimmed(object(object(e["scope"])["model"]), "display_name")
		slug := claudeSlug(name)
		if slug == "" || seen[slug] {
			continue
		}
		seen[slug] = true
		util := numberPtr(e["percent"])
		if util == nil {
			continue
		}
		amount := percentAmount(util)
		out = append(out, vault.UsageLimit{
			ID: "anthropic:7d:" + slug, Label: "Claude 7 Day (" + name + ")",
			Scope:  vault.UsageScope{Provider: "anthropic", WindowID: "7d", Tier: slug},
			Window: &vault.UsageWindow{ID: "7d", Label: "7 Day", DurationMs: ptr(weekMs), ResetsAt: parseISO(e["resets_at"])},
			Amount: amount, Status: statusFor(amount.UsedFraction),
		})
	}
	return out
}

// claudeSlug lowercases name and joins its runs of letters and digits
// with "-".
func claudeSlug(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('-')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	return b.String()
}

// AnthropicReport converts a decoded /usage payload into a report without
// identity metadata: the four fixed buckets, then the model-scoped weekly
// caps of `limits`. Buckets without utilization are skipped.
func AnthropicReport(payload any, now int64) *vault.UsageReport {
	m := object(payload)
	rep := &vault.UsageReport{Provider: "anthropic", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload}
	for _, b := range anthropicBuckets {
		bucket := object(m[b.key])
		util := numberPtr(bucket["utilization"])
		if util == nil {
			continue
		}
		win := &vault.UsageWindow{ID: "7d", Label: "7 Day", DurationMs: ptr(weekMs), ResetsAt: parseISO(bucket["resets_at"])}
		if b.key == "five_hour" {
			win.ID, win.Label, win.DurationMs = "5h", "5 Hour", ptr(5*hourMs)
		}
		scope := vault.UsageScope{Provider: "anthropic", WindowID: win.ID, Tier: b.tier}
		if b.shared {
			scope.Shared = ptr(true)
		}
		amount := percentAmount(util)
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: b.id, Label: b.label, Scope: scope, Window: win, Amount: amount, Status: statusFor(amount.UsedFraction)})
	}
	rep.Limits = append(rep.Limits, anthropicScopedLimits(m)...)
	return rep
}

// anthropicIdentity extracts the account id, email and organization id from
// a usage payload.
func anthropicIdentity(m map[string]any) (accountID, email, orgID string) {
	acct, org, user := object(m["account"]), object(m["organization"]), object(m["user"])
	accountID = cmp.Or(trimmed(m, "account_id"), trimmed(m, "accountId"), trimmed(m, "user_id"), trimmed(m, "userId"),
		trimmed(m, "org_id"), trimmed(m, "orgId"), trimmed(acct, "uuid"), trimmed(acct, "id"),
		trimmed(org, "uuid"), trimmed(org, "id"), trimmed(user, "uuid"), trimmed(user, "id"))
	email = cmp.Or(trimmed(m, "email"), trimmed(m, "user_email"), trimmed(m, "userEmail"), trimmed(acct, "email"), trimmed(user, "email"))
	orgID = cmp.Or(trimmed(m, "org_id"), trimmed(m, "orgId"), trimmed(org, "uuid"), trimmed(org, "id"))
	return accountID, email, orgID
}
