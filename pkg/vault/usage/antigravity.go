package usage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// Antigravity endpoints.
const (
	AntigravityDefaultBase = provider.AntigravityURL
	antigravitySandbox     = provider.AntigravitySandboxURL
	antigravityUserAgent   = provider.AntigravityUserAgent
)

// Antigravity probes retrieveUserQuotaSummary (the buckets Antigravity's
// own quota page shows), falling back to fetchAvailableModels, for
// google-antigravity credentials.
type Antigravity struct{}

// ID returns "google-antigravity".
func (Antigravity) ID() string { return "google-antigravity" }

// Supports accepts every credential; Fetch needs a project id.
func (Antigravity) Supports(vault.Credential) bool { return true }

// Antigravity request paths.
const (
	antigravitySummaryPath = "/v1internal:retrieveUserQuotaSummary"
	antigravityModelsPath  = "/v1internal:fetchAvailableModels"
)

// Fetch calls POST <base>/v1internal:retrieveUserQuotaSummary and, when that
// fails or has no buckets, POST <base>/v1internal:fetchAvailableModels.
// Without a configured base each call tries the production host, then the
// sandbox host on a network error or a transient status.
func (Antigravity) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	now := r.nowMs()
	if c.ProjectID == "" || c.Access == "" || (c.Expires != 0 && c.Expires <= now) {
		return nil, nil
	}
	endpoints := []string{AntigravityDefaultBase, antigravitySandbox}
	if b := trimBase(r.BaseURL); b != "" {
		endpoints = []string{b}
	}
	body, _ := json.Marshal(map[string]string{"project": c.ProjectID})
	headers := map[string]string{"Authorization": "Bearer " + c.Access, "Content-Type": "application/json", "User-Agent": antigravityUserAgent}
	var rep *vault.UsageReport
	if payload, ep, err := agPost(ctx, r, endpoints, antigravitySummaryPath, headers, body); err == nil {
		rep = AntigravitySummaryReport(payload, now, c.AccountID, c.ProjectID)
		if rep != nil {
			rep.Metadata["endpoint"] = ep
		}
	} else if ctx.Err() != nil {
		return nil, err
	}
	if rep == nil {
		payload, ep, err := agPost(ctx, r, endpoints, antigravityModelsPath, headers, body)
		if err != nil {
			r.logger().Warn("Antigravity usage fetch failed", "error", err)
			return nil, err
		}
		rep = AntigravityReport(payload, now, c.AccountID, c.ProjectID)
		rep.Metadata["endpoint"] = ep
	}
	setMeta(rep.Metadata, "email", c.Email)
	setMeta(rep.Metadata, "accountId", c.AccountID)
	return rep, nil
}

// agPost posts body to path at each endpoint in turn until one answers
// without a network error or a transient status; it returns that answer
// and the endpoint.
func agPost(ctx context.Context, r Request, endpoints []string, path string, headers map[string]string, body []byte) (any, string, error) {
	var lastErr error
	for _, ep := range endpoints {
		payload, _, err := getJSON(ctx, r, http.MethodPost, ep+path, headers, body)
		if err == nil {
			return payload, ep, nil
		}
		lastErr = err
		var se *StatusError
		if errors.As(err, &se) && se.Status != 408 && se.Status != 429 && se.Status < 500 {
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", lastErr
}

// agSummaryCounters maps a quota-summary bucket to the backend counters it
// limits: the Gemini bucket to "google", the one third-party bucket shared
// by Claude and GPT models to both "anthropic" and "openai" (one quota seen
// from both model families), anything else to "default".
func agSummaryCounters(group, bucket map[string]any) []string {
	id := strings.ToLower(str(bucket["bucketId"]))
	name := strings.ToLower(str(group["displayName"]))
	switch {
	case strings.HasPrefix(id, "gemini-") || strings.Contains(name, "gemini"):
		return []string{"google"}
	case strings.HasPrefix(id, "3p-") || strings.Contains(name, "claude") || strings.Contains(name, "gpt") ||
		strings.Contains(name, "third party"):
		return []string{"anthropic", "openai"}
	}
	return []string{"default"}
}

// AntigravitySummaryReport converts a retrieveUserQuotaSummary payload into
// a report, nil when it has no buckets. Each bucket becomes one limit per
// counter it applies to, labelled "Gemini", "Claude & GPT (shared)" (with
// scope shared and sharedGroup "<bucketId>:<window>") or the bucket's group
// name; the most used first.
func AntigravitySummaryReport(payload any, now int64, accountID, projectID string) *vault.UsageReport {
	m := object(payload)
	groups, top := array(m["groups"]), array(m["buckets"])
	grouped := slices.ContainsFunc(groups, func(g any) bool { return len(array(object(g)["buckets"])) > 0 })
	if !grouped && len(top) == 0 {
		return nil
	}
	rep := &vault.UsageReport{Provider: "google-antigravity", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload,
		Metadata: map[string]any{}}
	setMeta(rep.Metadata, "projectId", projectID)
	add := func(b, g map[string]any) {
		if b == nil || b["disabled"] == true {
			return
		}
		bucketID, window := str(b["bucketId"]), str(b["window"])
		var win *vault.UsageWindow
		d, reset := agClassify(window, str(b["displayName"])), parseISO(b["resetTime"])
		if d != nil {
			win = &vault.UsageWindow{ID: d.id, Label: d.label, DurationMs: d.durationMs, ResetsAt: reset}
		} else if reset != nil {
			win = &vault.UsageWindow{ID: cmp.Or(window, "default"), Label: "Default", ResetsAt: reset}
		}
		amount, status := vault.UsageAmount{Unit: "unknown"}, vault.StatusUnknown
		if rf, ok := number(b["remainingFraction"]); ok {
			rf = clamp(rf, 0, 1)
			amount = vault.UsageAmount{Unit: "percent", RemainingFraction: ptr(rf), UsedFraction: ptr(1 - rf),
				Remaining: ptr(rf * 100), Used: ptr((1 - rf) * 100), Limit: ptr(100.0)}
			status = agStatus(&rf)
		} else if rem, ok := number(b["remainingAmount"]); ok {
			amount.Remaining = ptr(rem)
			if rem == 0 {
				status = vault.StatusExhausted
			}
		}
		windowID := cmp.Or(window, bucketID, "default")
		if win != nil {
			windowID = win.ID
		}
		counters := agSummaryCounters(g, b)
		sharedGroup := ""
		if len(counters) > 1 {
			w := cmp.Or(window, "default")
			if win != nil {
				w = win.ID
			}
			sharedGroup = cmp.Or(bucketID, str(g["displayName"]), "third-party") + ":" + w
		}
		for _, counter := range counters {
			label := cmp.Or(str(g["displayName"]), str(b["displayName"]), "Usage")
			switch {
			case sharedGroup != "":
				label = "Claude & GPT (shared)"
			case counter == "google":
				label = "Gemini"
			}
			scope := vault.UsageScope{Provider: "google-antigravity", AccountID: accountID, ProjectID: projectID, WindowID: windowID}
			if sharedGroup != "" {
				scope.Shared, scope.SharedGroup = ptr(true), sharedGroup
			}
			rep.Limits = append(rep.Limits, vault.UsageLimit{
				ID:    "google-antigravity:" + counter + ":default:" + cmp.Or(bucketID, windowID),
				Label: label, Scope: scope, Window: win, Amount: amount, Status: status,
			})
		}
	}
	if grouped {
		for _, g := range groups {
			for _, b := range array(object(g)["buckets"]) {
				add(object(b), object(g))
			}
		}
	} else {
		for _, b := range top {
			add(object(b), nil)
		}
	}
	sort.SliceStable(rep.Limits, func(i, j int) bool { return remOr1(rep.Limits[i]) < remOr1(rep.Limits[j]) })
	return rep
}

type agQuota struct {
	remaining                 *float64
	resetTime                 string
	tier, windowID, windowLbl string
	provider                  string // modelProvider ?? apiProvider
}

type agDescriptor struct {
	id, label  string
	durationMs *int64
}

var (
	reSevenDay = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`7[\s_-]*day`) })
	reFiveHour = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`5[\s_-]*hour`) })
)

func agClassify(id, label string) *agDescriptor {
	src := strings.ToLower(id + " " + label)
	switch {
	case strings.Contains(src, "week") || strings.Contains(src, "7d") || reSevenDay().MatchString(src):
		return &agDescriptor{"weekly", "Weekly", ptr(weekMs)}
	case strings.Contains(src, "5h") || strings.Contains(src, "five hour") || reFiveHour().MatchString(src):
		return &agDescriptor{"5h", "5 Hour", ptr(5 * hourMs)}
	case strings.Contains(src, "day") || strings.Contains(src, "24h"):
		return &agDescriptor{"daily", "Daily", ptr(dayMs)}
	case id != "" || label != "":
		return &agDescriptor{id: cmp.Or(id, label), label: cmp.Or(label, id)}
	}
	return nil
}

// agQuotas flattens a model's quota fields into one list.
func agQuotas(model map[string]any) []agQuota {
	prov := cmp.Or(str(model["modelProvider"]), str(model["apiProvider"]))
	var out []agQuota
	add := func(v any, tier string, d *agDescriptor) {
		items := array(v)
		if items == nil && object(v) != nil {
			items = []any{v}
		}
		for _, it := range items {
			m := object(it)
			if m == nil {
				continue
			}
			q := agQuota{remaining: numberPtr(m["remainingFraction"]), resetTime: str(m["resetTime"]), tier: str(m["tier"]),
				windowID: str(m["windowId"]), windowLbl: str(m["windowLabel"]),
				provider: cmp.Or(str(m["modelProvider"]), str(m["apiProvider"]), prov)}
			if tier != "" {
				q.tier = tier
			}
			if d != nil {
				q.windowID, q.windowLbl = cmp.Or(q.windowID, d.id), cmp.Or(q.windowLbl, d.label)
			}
			out = append(out, q)
		}
	}
	add(model["quotaInfo"], "", nil)
	add(model["quotaInfos"], "", nil)
	for _, k := range []string{"dailyQuotaInfo", "dailyQuotaInfos"} {
		add(model[k], "", agClassify("daily", "Daily"))
	}
	for _, k := range []string{"weeklyQuotaInfo", "weeklyQuotaInfos"} {
		add(model[k], "", agClassify("weekly", "Weekly"))
	}
	for _, k := range sortedKeys(object(model["quotaInfoByTier"])) {
		add(object(model["quotaInfoByTier"])[k], k, nil)
	}
	for _, field := range []string{"quotaInfoByWindow", "quotaInfosByWindow"} {
		m := object(model[field])
		for _, k := range sortedKeys(m) {
			add(m[k], "", agClassify(k, ""))
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func agCounter(provider string) (key, name string) {
	switch provider {
	case "MODEL_PROVIDER_ANTHROPIC", "API_PROVIDER_ANTHROPIC_VERTEX":
		return "anthropic", "Anthropic"
	case "MODEL_PROVIDER_GOOGLE", "API_PROVIDER_GOOGLE_GEMINI":
		return "google", "Google"
	case "MODEL_PROVIDER_OPENAI", "API_PROVIDER_OPENAI_VERTEX":
		return "openai", "OpenAI"
	}
	return "default", ""
}

// agDescriptors classifies every quota's window: explicit ids/labels first,
// else inferred from the reset time (the latest of several distinct resets
// in a counter group is weekly; > 1 day away is weekly; else daily).
func agDescriptors(qs []agQuota, now int64) []*agDescriptor {
	out := make([]*agDescriptor, len(qs))
	groups := map[string][]int{}
	for i, q := range qs {
		if d := agClassify(q.windowID, q.windowLbl); d != nil {
			out[i] = d
			continue
		}
		k := q.provider + "|" + q.tier
		groups[k] = append(groups[k], i)
	}
	for _, idx := range groups {
		var resets []int64
		for _, i := range idx {
			if t := parseISO(qs[i].resetTime); t != nil && !slices.Contains(resets, *t) {
				resets = append(resets, *t)
			}
		}
		var latest *int64
		if len(resets) > 1 {
			latest = ptr(slices.Max(resets))
		}
		for _, i := range idx {
			t := parseISO(qs[i].resetTime)
			switch {
			case latest != nil && t != nil && *t == *latest, t != nil && *t-now > dayMs:
				out[i] = &agDescriptor{"weekly", "Weekly", ptr(weekMs)}
			default:
				out[i] = &agDescriptor{"daily", "Daily", ptr(dayMs)}
			}
		}
	}
	return out
}

func agStatus(rem *float64) string {
	switch {
	case rem == nil:
		return vault.StatusUnknown
	case *rem <= 0:
		return vault.StatusExhausted
	case *rem <= 0.1:
		return vault.StatusWarning
	}
	return vault.StatusOK
}

type agEntry struct {
	amount                  vault.UsageAmount
	window                  *vault.UsageWindow
	tier, tierKey, windowID string
	counterKey, counterName string
}

// AntigravityReport converts a fetchAvailableModels payload into a report:
// quotas shared by models are merged per (counter, tier, window), the most
// used first.
func AntigravityReport(payload any, now int64, accountID, projectID string) *vault.UsageReport {
	rep := &vault.UsageReport{Provider: "google-antigravity", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload,
		Metadata: map[string]any{}}
	setMeta(rep.Metadata, "projectId", projectID)
	models := object(object(payload)["models"])
	var order []string
	entries := map[string]*agEntry{}
	for _, name := range sortedKeys(models) {
		qs := agQuotas(object(models[name]))
		descs := agDescriptors(qs, now)
		for i, q := range qs {
			rem := q.remaining
			if rem != nil {
				rem = ptr(clamp(*rem, 0, 1))
			} else if q.resetTime != "" {
				rem = ptr(0.0) // exhausted legacy counters keep only resetTime
			}
			amount := vault.UsageAmount{Unit: "percent"}
			if rem != nil {
				amount = vault.UsageAmount{Unit: "percent", RemainingFraction: rem, UsedFraction: ptr(1 - *rem),
					Remaining: ptr(*rem * 100), Used: ptr((1 - *rem) * 100), Limit: ptr(100.0)}
			}
			var win *vault.UsageWindow
			d, reset := descs[i], parseISO(q.resetTime)
			if d != nil || reset != nil {
				win = &vault.UsageWindow{ID: "default", Label: cmp.Or(q.windowLbl, "Default"), ResetsAt: reset}
				if d != nil {
					win.ID, win.Label, win.DurationMs = d.id, cmp.Or(q.windowLbl, d.label), d.durationMs
				}
			}
			ck, cn := agCounter(q.provider)
			tierKey := strings.ToLower(cmp.Or(q.tier, "default"))
			wid := cmp.Or(q.windowID, "default")
			if win != nil {
				wid = win.ID
			}
			key := ck + "|" + tierKey + "|" + wid
			e, ok := entries[key]
			if !ok {
				entries[key] = &agEntry{amount, win, q.tier, tierKey, wid, ck, cn}
				order = append(order, key)
				continue
			}
			if (e.amount.RemainingFraction == nil && amount.RemainingFraction != nil) ||
				(e.amount.RemainingFraction != nil && amount.RemainingFraction != nil && *amount.RemainingFraction < *e.amount.RemainingFraction) {
				e.amount = amount
				if q.tier != "" {
					e.tier = q.tier
				}
			}
			if (e.window == nil || e.window.ResetsAt == nil) && win != nil && (win.ResetsAt != nil || e.window == nil) {
				e.window = win
			}
		}
	}
	metered := map[string]bool{}
	for _, e := range entries {
		if e.window != nil && e.window.ResetsAt != nil {
			metered[e.counterKey+"|"+e.tierKey] = true
		}
	}
	for _, k := range order {
		e := entries[k]
		if (e.window == nil || e.window.ResetsAt == nil) && metered[e.counterKey+"|"+e.tierKey] {
			continue
		}
		label := "Usage"
		if e.counterName != "" {
			label = "Usage (" + e.counterName + ")"
		}
		rep.Limits = append(rep.Limits, vault.UsageLimit{
			ID: "google-antigravity:" + e.counterKey + ":" + e.tierKey + ":" + e.windowID, Label: label,
			Scope:  vault.UsageScope{Provider: "google-antigravity", AccountID: accountID, ProjectID: projectID, Tier: e.tier, WindowID: e.windowID},
			Window: e.window, Amount: e.amount, Status: agStatus(e.amount.RemainingFraction),
		})
	}
	sort.SliceStable(rep.Limits, func(i, j int) bool { return remOr1(rep.Limits[i]) < remOr1(rep.Limits[j]) })
	return rep
}

func remOr1(l vault.UsageLimit) float64 {
	if l.Amount.RemainingFraction != nil {
		return *l.Amount.RemainingFraction
	}
	return 1
}
