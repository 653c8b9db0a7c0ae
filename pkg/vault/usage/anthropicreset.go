package usage

import (
	"cmp"
	"context"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// Claude saved resets. Anthropic runs two reset programs, each reported as
// one key of the /usage answer: "cedar_ember" (banked grants, each with a
// count of resets and the windows it clears) and "juniper_tide" (one
// session-limit reset offered when the 5-hour window is hit). The plain
// /usage answer names both keys with null values until asked to evaluate
// them: ?cedar_ember=1 and ?at_wall=1 (with skip_spend=1). A null or missing
// block is "unknown", never "no resets".
const (
	claudeCedarProgram   = "cedar_ember"
	claudeJuniperProgram = "juniper_tide"
	claudeResetTimeout   = 5 * time.Second
)

var (
	reClaudeGrantID  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]{1,40}$`) })
	reClaudeWindowID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]{1,80}$`) })
)

// claudeResetWindows maps Anthropic's window names to our limit ids; other
// valid names become "anthropic:reset:<name>".
var claudeResetWindows = map[string]string{
	"five_hour":        "anthropic:5h",
	"seven_day":        "anthropic:7d",
	"seven_day_opus":   "anthropic:7d:opus",
	"seven_day_sonnet": "anthropic:7d:sonnet",
}

func claudeWindowID(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !reClaudeWindowID().MatchString(s) {
		return "", false
	}
	if id, ok := claudeResetWindows[s]; ok {
		return id, true
	}
	return "anthropic:reset:" + s, true
}

// claudeWindowList normalises a required list of window names; a missing
// list or any invalid name fails.
func claudeWindowList(v any) ([]string, bool) {
	items, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, it := range items {
		id, ok := claudeWindowID(it)
		if !ok {
			return nil, false
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, true
}

// claudeUsedFractions turns {window: integer percent 0–100} into
// {limit id: fraction}; absent is an empty map.
func claudeUsedFractions(v any) (map[string]float64, bool) {
	out := map[string]float64{}
	if v == nil {
		return out, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	for k, raw := range m {
		id, ok := claudeWindowID(k)
		p, isNum := raw.(float64)
		if !ok || !isNum || p != math.Trunc(p) || p < 0 || p > 100 {
			return nil, false
		}
		out[id] = p / 100
	}
	return out, true
}

// optionalText is an optional non-blank string: absent or null → "", ok;
// anything else but a non-blank string fails.
func optionalText(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", false
	}
	return strings.TrimSpace(s), true
}

// optionalTime is an optional timestamp, returned as an ISO string in UTC
// with milliseconds.
func optionalTime(v any) (string, bool) {
	s, ok := optionalText(v)
	if !ok || s == "" {
		return "", ok
	}
	ms := parseISO(s)
	if ms == nil {
		return "", false
	}
	return isoMillis(*ms), true
}

func isoMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func optionalBool(m map[string]any, k string, def bool) (bool, bool) {
	v, present := m[k]
	if !present {
		return def, true
	}
	b, ok := v.(bool)
	return b, ok
}

// optionalCount is an optional non-negative integer.
func optionalCount(m map[string]any, k string) (int64, bool) {
	v, present := m[k]
	if !present {
		return 0, true
	}
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < 0 {
		return 0, false
	}
	return int64(f), true
}

type cedarGrant struct {
	id, label                        string
	remaining                        int64
	grantedAt, expiresAt             string
	clears, blocking                 []string
	paused, usableNow, requiresLimit bool
	usedFractions                    map[string]float64
}

func parseCedarGrant(v any) (cedarGrant, bool) {
	m := object(v)
	id, _ := m["id"].(string)
	if m == nil || !reClaudeGrantID().MatchString(id) {
		return cedarGrant{}, false
	}
	left, isNum := m["resets_left"].(float64)
	if !isNum || left != math.Trunc(left) || left < 0 {
		return cedarGrant{}, false
	}
	if _, ok := optionalCount(m, "resets_total"); !ok {
		return cedarGrant{}, false
	}
	g := cedarGrant{id: id, remaining: int64(left)}
	var ok [9]bool
	if raw := m["label"]; raw == nil {
		ok[0] = true
	} else if s, isStr := raw.(string); isStr {
		g.label, ok[0] = strings.TrimSpace(s), true
	}
	g.grantedAt, ok[1] = optionalTime(m["starts_at"])
	g.expiresAt, ok[2] = optionalTime(m["ends_at"])
	g.clears, ok[3] = claudeWindowList(m["clears"])
	g.blocking, ok[4] = claudeWindowList(m["blocking"])
	g.usedFractions, ok[5] = claudeUsedFractions(m["percent_used"])
	g.paused, ok[6] = optionalBool(m, "paused", false)
	g.usableNow, ok[7] = optionalBool(m, "usable_now", false)
	g.requiresLimit, ok[8] = optionalBool(m, "use_requires_limit", true)
	if slices.Contains(ok[:], false) {
		return cedarGrant{}, false
	}
	return g, true
}

type cedarStatus struct {
	eligible                         bool
	reason, nextGrantID, cooldownEnd string
	grants                           []cedarGrant
}

// parseCedarStatus parses a cedar_ember block; nil status for null.
func parseCedarStatus(v any) (*cedarStatus, bool) {
	if v == nil {
		return nil, true
	}
	m := object(v)
	eligible, isBool := m["eligible"].(bool)
	if !isBool {
		return nil, false
	}
	st := &cedarStatus{eligible: eligible}
	var ok1, ok2 bool
	st.reason, ok1 = optionalText(m["ineligible_reason"])
	st.cooldownEnd, ok2 = optionalTime(m["cooldown_until"])
	if !ok1 || !ok2 {
		return nil, false
	}
	if _, ok := optionalBool(m, "at_limit", false); !ok {
		return nil, false
	}
	if raw, present := m["exhausted"]; present {
		if _, ok := claudeWindowList(raw); !ok {
			return nil, false
		}
	}
	grants, present := m["grants"]
	if _, isArr := grants.([]any); present && !isArr {
		return nil, false
	}
	for _, raw := range array(grants) {
		g, ok := parseCedarGrant(raw)
		if !ok {
			return nil, false
		}
		st.grants = append(st.grants, g)
	}
	if raw := m["next_grant_id"]; raw != nil {
		id, isStr := raw.(string)
		if !isStr || !reClaudeGrantID().MatchString(id) {
			return nil, false
		}
		if slices.ContainsFunc(st.grants, func(g cedarGrant) bool { return g.id == id }) {
			st.nextGrantID = id
		}
	}
	return st, true
}

type juniperStatus struct {
	eligible, available           bool
	reason, arm                   string
	nextAvailableAt, weeklyResets string
}

// parseJuniperStatus parses a juniper_tide block; nil status for null.
func parseJuniperStatus(v any) (*juniperStatus, bool) {
	if v == nil {
		return nil, true
	}
	m := object(v)
	eligible, isBool := m["eligible"].(bool)
	if !isBool {
		return nil, false
	}
	st := &juniperStatus{eligible: eligible}
	var ok [4]bool
	st.reason, ok[0] = optionalText(m["ineligible_reason"])
	st.nextAvailableAt, ok[1] = optionalTime(m["next_available_at"])
	st.weeklyResets, ok[2] = optionalTime(m["weekly_resets_at"])
	st.available, ok[3] = optionalBool(m, "available", false)
	if slices.Contains(ok[:], false) {
		return nil, false
	}
	switch arm := m["arm"]; arm {
	case nil:
	case "control", "reset":
		st.arm = arm.(string)
	default:
		return nil, false
	}
	if _, ok := optionalCount(m, "resets_per_week"); !ok {
		return nil, false
	}
	return st, true
}

func (st *cedarStatus) credits(now int64) *vault.ResetCredits {
	cooldown := st.cooldownEnd != "" && *parseISO(st.cooldownEnd) > now
	rc := &vault.ResetCredits{RedeemableCount: ptr(int64(0)), Eligible: ptr(st.eligible), CooldownUntil: st.cooldownEnd,
		Credits: []vault.ResetCredit{}}
	if st.nextGrantID != "" && st.eligible {
		rc.NextCreditID = st.nextGrantID
	}
	switch {
	case st.reason != "":
		rc.Reason = st.reason
	case cooldown:
		rc.Reason = "cooldown"
	}
	for _, g := range st.grants {
		expired := g.expiresAt != "" && *parseISO(g.expiresAt) <= now
		selected := g.id == st.nextGrantID
		usable := st.eligible && selected && g.usableNow && !g.paused && !expired && !cooldown && g.remaining > 0
		status := "unavailable"
		switch {
		case expired:
			status = "expired"
		case g.remaining == 0:
			status = "redeemed"
		case g.paused:
			status = "paused"
		case usable:
			status = "available"
		}
		if !expired && g.remaining > 0 {
			rc.AvailableCount += g.remaining
		}
		if selected && usable {
			rc.RedeemableCount = ptr(g.remaining)
		}
		rc.Credits = append(rc.Credits, vault.ResetCredit{
			ID: g.id, Title: cmp.Or(g.label, "Claude limit reset"), Program: claudeCedarProgram,
			RemainingCount: ptr(g.remaining), Usable: ptr(usable), RequiresLimit: ptr(g.requiresLimit),
			Clears: g.clears, Blocking: g.blocking, UsedFractions: g.usedFractions,
			GrantedAt: g.grantedAt, ExpiresAt: g.expiresAt, Status: status,
		})
	}
	return rc
}

func (st *juniperStatus) credits() *vault.ResetCredits {
	eligible := st.eligible && st.arm == "reset"
	usable := eligible && st.available
	n := int64(0)
	if usable {
		n = 1
	}
	rc := &vault.ResetCredits{AvailableCount: n, RedeemableCount: ptr(n), Eligible: ptr(eligible), Reason: st.reason,
		Credits: []vault.ResetCredit{}}
	if rc.Reason == "" {
		switch {
		case !st.eligible:
			rc.Reason = "ineligible"
		case st.arm != "reset":
			rc.Reason = "control"
		case !st.available:
			rc.Reason = "unavailable"
		}
	}
	if eligible {
		rc.NextCreditID = claudeJuniperProgram
	}
	if !usable {
		rc.CooldownUntil = st.nextAvailableAt
	}
	if st.arm == "reset" {
		status := "unavailable"
		if usable {
			status = "available"
		}
		rc.Credits = append(rc.Credits, vault.ResetCredit{
			ID: claudeJuniperProgram, Title: "Claude session limit reset", Program: claudeJuniperProgram,
			RemainingCount: ptr(n), Usable: ptr(usable), RequiresLimit: ptr(true),
			Clears: []string{"anthropic:5h"}, Blocking: []string{}, UsedFractions: map[string]float64{},
			ExpiresAt: st.weeklyResets, Status: status,
		})
	}
	return rc
}

func hasInventory(rc *vault.ResetCredits) bool {
	return rc.AvailableCount > 0 || rc.NextCreditID != ""
}

// claudePayloadResets reads the reset programs from a /usage answer that
// evaluated them (an object block, not null): a Cedar grant with resets or
// a selected grant wins, else the Juniper block, else the Cedar answer. Nil
// means the answer is inconclusive (no evaluated block, or a malformed one).
func claudePayloadResets(m map[string]any, now int64) *vault.ResetCredits {
	var cedar *vault.ResetCredits
	if block := object(m[claudeCedarProgram]); block != nil {
		st, ok := parseCedarStatus(block)
		if !ok {
			return nil
		}
		if cedar = st.credits(now); hasInventory(cedar) {
			return cedar
		}
	}
	if block := object(m[claudeJuniperProgram]); block != nil {
		st, ok := parseJuniperStatus(block)
		if !ok {
			return nil
		}
		return st.credits()
	}
	return cedar
}

// claudeEnvelope reports whether m is a /usage answer (it has one of the
// usage keys).
func claudeEnvelope(m map[string]any) bool {
	for _, k := range []string{"five_hour", "seven_day", "limits", "extra_usage", "spend"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// claudeDiscover asks <base>/usage?<query> to evaluate one program. answered
// false means discovery failed; a nil status with answered true means the
// program has nothing for this account.
func claudeDiscover(ctx context.Context, r Request, base, query, field string, headers map[string]string) (block any, answered bool) {
	ctx, cancel := context.WithTimeout(ctx, claudeResetTimeout)
	defer cancel()
	// The program queries carry only the OAuth beta, not the usage set.
	headers = maps.Clone(headers)
	headers["anthropic-beta"] = provider.AnthropicBetasRefresh
	v, _, err := getJSON(ctx, r, http.MethodGet, base+"/usage?"+query, headers, nil)
	m := object(v)
	if err != nil || m == nil {
		return nil, false
	}
	if b, ok := m[field]; ok {
		return b, true
	}
	return nil, claudeEnvelope(m)
}

// claudeListResets discovers the account's saved resets: the Cedar grants
// first, then the Juniper session reset. Nil means discovery failed; a zero
// count is an answer.
func claudeListResets(ctx context.Context, r Request, base string, headers map[string]string) *vault.ResetCredits {
	block, answered := claudeDiscover(ctx, r, base, "cedar_ember=1&skip_spend=1", claudeCedarProgram, headers)
	if !answered {
		return nil
	}
	cst, ok := parseCedarStatus(block)
	if !ok {
		return nil
	}
	var cedar *vault.ResetCredits
	if cst != nil {
		if cedar = cst.credits(r.nowMs()); hasInventory(cedar) {
			return cedar
		}
	}
	block, answered = claudeDiscover(ctx, r, base, "at_wall=1&skip_spend=1", claudeJuniperProgram, headers)
	if !answered {
		return nil
	}
	jst, ok := parseJuniperStatus(block)
	switch {
	case !ok:
		return nil
	case jst != nil:
		return jst.credits()
	case cedar != nil:
		return cedar
	}
	return &vault.ResetCredits{RedeemableCount: ptr(int64(0)), Eligible: ptr(false), Credits: []vault.ResetCredit{}}
}
