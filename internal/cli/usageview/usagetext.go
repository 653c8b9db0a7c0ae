package usageview

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// Text rendering of `omp usage`: the reference's content, order and
// wording, every line fitted to 80 columns.

const (
	barWidth      = 28 // BAR_WIDTH
	minBarWidth   = 10 // the bar shrinks to this before text is cut
	sparkWidth    = 48 // HISTORY_SPARK_WIDTH
	minTitleWidth = 12 // a limit title is not cut below this
	minLabelWidth = 10 // nor an account label
	// anthropicGrantTTL is how long an Anthropic OAuth grant lives after
	// the interactive login (ANTHROPIC_OAUTH_GRANT_TTL_MS).
	anthropicGrantTTL = 30 * dayMs
	reloginWarnWindow = 7 * dayMs
	dayMs             = 86_400_000
)

// Account is a stored credential's identity ("every account"
// coverage); its JSON is an accountsWithoutUsage item.
type Account struct {
	Provider      string `json:"provider"`
	Type          string `json:"type"`
	Email         string `json:"email,omitempty"`
	AccountID     string `json:"accountId,omitempty"`
	ProjectID     string `json:"projectId,omitempty"`
	EnterpriseURL string `json:"enterpriseUrl,omitempty"`
	OrgID         string `json:"orgId,omitempty"`
	OrgName       string `json:"orgName,omitempty"`
	AuthorizedAt  int64  `json:"authorizedAt,omitempty"`
	// Reason says why the account may have no usage data; the text shows
	// it in place of "no usage data", the JSON leaves it out.
	Reason string `json:"-"`
}

// FormatDuration is the reference's formatDuration (pi-utils).
func FormatDuration(ms int64) string {
	const sec, minute, hour, day = 1000, 60_000, 3_600_000, 86_400_000
	switch {
	case ms <= 0:
		return "0ms"
	case ms < sec:
		return fmt.Sprintf("%dms", ms)
	case ms < minute:
		return strconv.FormatFloat(float64(ms)/sec, 'f', 1, 64) + "s"
	case ms < hour:
		return unitPair(ms/minute, "m", ms%minute/sec, "s")
	case ms < day:
		return unitPair(ms/hour, "h", ms%hour/minute, "m")
	}
	return unitPair(ms/day, "d", ms%day/hour, "h")
}

func unitPair(a int64, ua string, b int64, ub string) string {
	if b > 0 {
		return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
	}
	return fmt.Sprintf("%d%s", a, ua)
}

// FormatNumber is the reference's compact number (999, 1.5K, 25K, 1.5M…).
func FormatNumber(n float64) string {
	trim1 := func(v float64) string {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	}
	switch {
	case n < 1_000:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case n < 10_000:
		return trim1(n/1_000) + "K"
	case n < 1_000_000:
		return strconv.FormatFloat(math.Round(n/1_000), 'f', 0, 64) + "K"
	case n < 10_000_000:
		return trim1(n/1_000_000) + "M"
	case n < 1_000_000_000:
		return strconv.FormatFloat(math.Round(n/1_000_000), 'f', 0, 64) + "M"
	case n < 10_000_000_000:
		return trim1(n/1_000_000_000) + "B"
	}
	return strconv.FormatFloat(math.Round(n/1_000_000_000), 'f', 0, 64) + "B"
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// statusOf is a limit's status, else derived from its used fraction.
func statusOf(l vault.UsageLimit) string {
	if l.Status != "" && l.Status != vault.StatusUnknown {
		return l.Status
	}
	f, ok := l.ResolveUsedFraction()
	return statusByFraction(f, ok)
}

func statusByFraction(f float64, ok bool) string {
	switch {
	case !ok:
		return vault.StatusUnknown
	case f >= 1:
		return vault.StatusExhausted
	case f >= 0.8:
		return vault.StatusWarning
	}
	return vault.StatusOK
}

func statusStyle(status string) style {
	switch status {
	case vault.StatusExhausted:
		return red
	case vault.StatusWarning:
		return yellow
	case vault.StatusOK:
		return green
	}
	return dim
}

// aggregateStatus is the worst of the limits' statuses.
func aggregateStatus(limits []vault.UsageLimit) string {
	seen := map[string]bool{}
	for _, l := range limits {
		seen[statusOf(l)] = true
	}
	for _, st := range []string{vault.StatusExhausted, vault.StatusWarning, vault.StatusOK} {
		if seen[st] {
			return st
		}
	}
	return vault.StatusUnknown
}

// providerName capitalises the words of a provider id ("openai-codex" →
// "Openai Codex").
func providerTitle(p string) string {
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '-' || r == '_' })
	if strings.HasPrefix(p, "-") || strings.HasPrefix(p, "_") {
		parts = append([]string{""}, parts...)
	}
	for i, w := range parts {
		if w != "" {
			parts[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(parts, " ")
}

var unitSuffix = map[string]string{"tokens": " tokens", "requests": " requests", "credits": " credits", "minutes": " min", "bytes": " bytes"}

func unitValue(v float64, unit string) string {
	if unit == "usd" {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return FormatNumber(v)
}

// describeAmount is the amount text of a limit line.
func describeAmount(l vault.UsageLimit) string {
	a := l.Amount
	absolute := a.Unit != "percent" && a.Unit != "unknown"
	f, hasF := l.ResolveUsedFraction()
	var parts []string
	switch {
	case absolute && a.Used != nil && a.Limit != nil:
		parts = append(parts, unitValue(*a.Used, a.Unit)+" / "+unitValue(*a.Limit, a.Unit)+unitSuffix[a.Unit])
	case absolute && a.Remaining != nil:
		parts = append(parts, unitValue(*a.Remaining, a.Unit)+unitSuffix[a.Unit]+" left")
	case absolute && a.Used != nil && !math.IsInf(*a.Used, 0) && !math.IsNaN(*a.Used) && !hasF:
		parts = append(parts, unitValue(*a.Used, a.Unit)+unitSuffix[a.Unit]+" used")
	}
	switch {
	case hasF:
		parts = append(parts, pct(f)+" used")
	case a.RemainingFraction != nil:
		parts = append(parts, pct(*a.RemainingFraction)+" left")
	}
	if len(parts) == 0 {
		return "no data"
	}
	return strings.Join(parts, " · ")
}

// bar is a w-cell quota bar coloured by status.
func bar(l vault.UsageLimit, w int) []seg {
	f, ok := l.ResolveUsedFraction()
	if !ok {
		return []seg{s(dim, strings.Repeat("·", w))}
	}
	filled := int(math.Round(min(max(f, 0), 1) * float64(w)))
	return []seg{s(statusStyle(statusOf(l)), strings.Repeat("█", filled)), s(dim, strings.Repeat("░", w-filled))}
}

// limitTitle appends the tier and window label when the label lacks them.
func limitTitle(l vault.UsageLimit) string {
	label := clean(l.Label)
	if t := l.Scope.Tier; t != "" && !strings.Contains(strings.ToLower(label), strings.ToLower(t)) {
		label += " (" + clean(t) + ")"
	}
	w := l.Scope.WindowID
	if l.Window != nil {
		w = l.Window.Label
	}
	return withWindow(label, clean(w))
}

func withWindow(label, window string) string {
	lw := strings.ToLower(window)
	if window == "" || lw == "quota window" || strings.Contains(strings.ToLower(label), lw) {
		return label
	}
	return label + " (" + window + ")"
}

func metaString(r vault.UsageReport, key string) string {
	v, _ := r.Metadata[key].(string)
	return v
}

// reportLabel names a report's account.
func reportLabel(r vault.UsageReport, i int) string {
	for _, k := range []string{"email", "accountId", "projectId"} {
		if v := metaString(r, k); v != "" {
			return v
		}
	}
	for _, l := range r.Limits {
		if v := cmp.Or(l.Scope.AccountID, l.Scope.ProjectID); v != "" {
			return v
		}
	}
	return fmt.Sprintf("account %d", i+1)
}

// reportIdentifiers are the lowercased identities a report can be
// attributed to.
func reportIdentifiers(r vault.UsageReport) map[string]bool {
	ids := map[string]bool{}
	add := func(v string) {
		if v != "" {
			ids[strings.ToLower(v)] = true
		}
	}
	for _, k := range []string{"email", "accountId", "projectId", "orgId"} {
		add(metaString(r, k))
	}
	for _, l := range r.Limits {
		add(l.Scope.AccountID)
		add(l.Scope.ProjectID)
		add(l.Scope.OrgID)
	}
	return ids
}

// UnreportedAccounts lists the stored credentials no report can be
// attributed to (the reference's collectUnreportedAccounts, org rules
// included).
func UnreportedAccounts(reports []vault.UsageReport, accounts []Account) []Account {
	byProvider := map[string][]vault.UsageReport{}
	for _, r := range reports {
		byProvider[r.Provider] = append(byProvider[r.Provider], r)
	}
	var out []Account
	for _, a := range accounts {
		if accountUnreported(a, byProvider[a.Provider]) {
			out = append(out, a)
		}
	}
	return out
}

func accountUnreported(a Account, reports []vault.UsageReport) bool {
	if len(reports) == 0 {
		return true
	}
	if a.Type == string(vault.TypeAPIKey) {
		return false
	}
	var ids []string
	for _, v := range []string{a.Email, a.AccountID, a.ProjectID} {
		if v != "" {
			ids = append(ids, strings.ToLower(v))
		}
	}
	covered := func(candidates []vault.UsageReport) bool {
		for _, r := range candidates {
			got := reportIdentifiers(r)
			for _, id := range ids {
				if got[id] {
					return true
				}
			}
		}
		return false
	}
	org := strings.ToLower(a.OrgID)
	var sameOrg, orgLess []vault.UsageReport
	sawOrg := false
	for _, r := range reports {
		if o := metaString(r, "orgId"); o != "" {
			sawOrg = true
			if org != "" && strings.ToLower(o) == org {
				sameOrg = append(sameOrg, r)
			}
		} else {
			orgLess = append(orgLess, r)
		}
	}
	if org != "" || sawOrg {
		candidates := orgLess
		if org != "" {
			candidates = sameOrg
		}
		if len(candidates) == 0 {
			return true
		}
		return len(ids) > 0 && !covered(candidates)
	}
	if len(ids) == 0 {
		return false
	}
	anyIdentified := false
	for _, r := range reports {
		if len(reportIdentifiers(r)) > 0 {
			anyIdentified = true
		}
	}
	return anyIdentified && !covered(reports)
}

// mask applies the --redact map (nil: no redaction).
func mask(redact map[string]string, v string) string {
	if m, ok := redact[v]; ok {
		return m
	}
	return v
}

// accountLabel names a stored account, masking each part on its own.
func accountLabel(a Account, redact map[string]string) string {
	if a.Type == string(vault.TypeAPIKey) {
		return "API key"
	}
	base := cmp.Or(a.Email, a.AccountID, a.ProjectID, a.EnterpriseURL, "OAuth account")
	org := cmp.Or(a.OrgName, a.OrgID)
	if org == "" || org == base {
		return clean(mask(redact, base))
	}
	return clean(mask(redact, base)) + " · " + clean(mask(redact, org))
}

// CapacityStat is one window of a provider's quota capacity.
type CapacityStat struct {
	Window            string  `json:"window"`
	DurationMs        *int64  `json:"durationMs,omitempty"`
	Meter             string  `json:"meter,omitempty"`
	Accounts          int     `json:"accounts"`
	UsedAccounts      float64 `json:"usedAccounts"`
	RemainingAccounts float64 `json:"remainingAccounts"`
}

// meterFor names the quota pool a limit holds inside its window, "" for the
// window's one pool. An Anthropic model-scoped cap (a tier) is its own pool
// beside the umbrella window it caps; Codex keeps chat and Spark apart. Other
// providers put the plan in tier, which must not split a window.
func meterFor(r vault.UsageReport, l vault.UsageLimit) string {
	if r.Provider != "anthropic" && r.Provider != "openai-codex" {
		return ""
	}
	if t := strings.ToLower(strings.TrimSpace(l.Scope.Tier)); t != "" {
		return t
	}
	if r.Provider != "openai-codex" {
		return ""
	}
	parts := strings.Split(strings.ToLower(l.ID), ":")
	if len(parts) > 1 && parts[1] != "" && parts[1] != "primary" && parts[1] != "secondary" {
		return parts[1]
	}
	return "chat"
}

// Capacity buckets one provider's limits by window (and meter); each
// account adds its highest used fraction in the bucket.
func Capacity(reports []vault.UsageReport) []CapacityStat {
	type bucket struct {
		stat      CapacityStat
		fractions []float64
	}
	buckets := map[string]*bucket{}
	var order []string
	for _, r := range reports {
		accountMax := map[string]float64{}
		var keys []string
		for _, l := range r.Limits {
			f, ok := l.ResolveUsedFraction()
			if !ok {
				continue
			}
			var dur *int64
			if l.Window != nil {
				dur = l.Window.DurationMs
			}
			key := ""
			if dur != nil {
				key = "d:" + strconv.FormatInt(*dur, 10)
			} else {
				key = l.Scope.WindowID
				if key == "" && l.Window != nil {
					key = l.Window.Label
				}
				key = cmp.Or(key, l.Label)
			}
			meter := meterFor(r, l)
			if meter != "" {
				key = "m:" + meter + "\x00" + key
			}
			if prev, ok := accountMax[key]; !ok || f > prev {
				if !ok {
					keys = append(keys, key)
				}
				accountMax[key] = f
			}
			if _, ok := buckets[key]; !ok {
				window := ""
				switch {
				case dur != nil:
					window = FormatDuration(*dur)
				case l.Window != nil && l.Window.Label != "":
					window = l.Window.Label
				default:
					window = cmp.Or(l.Scope.WindowID, l.Label)
				}
				buckets[key] = &bucket{stat: CapacityStat{Window: window, DurationMs: dur, Meter: meter}}
				order = append(order, key)
			}
		}
		for _, k := range keys {
			buckets[k].fractions = append(buckets[k].fractions, accountMax[k])
		}
	}
	out := make([]CapacityStat, 0, len(order))
	for _, k := range order {
		b := buckets[k]
		used := 0.0
		for _, f := range b.fractions {
			used += f
		}
		st := b.stat
		st.Accounts, st.UsedAccounts = len(b.fractions), used
		st.RemainingAccounts = max(0, float64(st.Accounts)-used)
		out = append(out, st)
	}
	slices.SortStableFunc(out, func(a, b CapacityStat) int {
		da, db := int64(math.MaxInt64), int64(math.MaxInt64)
		if a.DurationMs != nil {
			da = *a.DurationMs
		}
		if b.DurationMs != nil {
			db = *b.DurationMs
		}
		return cmp.Or(cmp.Compare(da, db), strings.Compare(a.Meter, b.Meter))
	})
	return out
}

func accountsWord(n int) string {
	if n == 1 {
		return "account"
	}
	return "accounts"
}
