package pick

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
)

// strategy is a provider's OAuth ranking strategy.
type strategy struct {
	primary, secondary         func([]vault.UsageLimit) *vault.UsageLimit
	primaryDefault, secDefault time.Duration
	// boost reports the priority boost (codex: an untouched 5 h primary window).
	boost func(primary *vault.UsageLimit) bool
	// scope, when set, narrows a report to the limits that matter for a
	// model and names the block scope of that model's requests
	// (google-antigravity: the model family's backend counter). Without
	// it every limit counts and blocks are provider-wide.
	scope func(modelID string) limitScope
}

// limitScope is what a strategy's scope returns for one model.
type limitScope struct {
	// block is the block scope ("" = provider-wide).
	block string
	// lookup are the request scopes a block is checked under besides the
	// provider-wide one: block, plus Codex's legacy "shared"
	// and "model-policy:<model>". nil: block alone.
	lookup []string
	// exhaust returns the limits whose exhaustion blocks the credential
	// for this model; rank, the limits ranking looks at.
	exhaust, rank func([]vault.UsageLimit) []vault.UsageLimit
}

// scopeFor returns the limit scope of provider's requests for modelID:
// every limit, provider-wide, unless the provider's strategy scopes them.
// Cursor has no strategy but honours model-policy blocks.
func scopeFor(provider, modelID string) limitScope {
	if s, ok := strategies[provider]; ok && s.scope != nil {
		return s.scope(modelID)
	}
	sc := limitScope{exhaust: allLimits, rank: allLimits}
	if mp := modelPolicyScope(modelID); provider == "cursor" && mp != "" {
		sc.lookup = []string{mp}
	}
	return sc
}

func allLimits(ls []vault.UsageLimit) []vault.UsageLimit { return ls }

// anthropicExhaust leaves out the model-family weekly caps Claude reports
// beside its account windows (anthropic:7d:<family>, a tier other than the
// opus and sonnet buckets, not shared): one exhausted family must not block
// the account's other models, so such a cap never blocks the credential
// ahead of a request (a 429 still does).
func anthropicExhaust(ls []vault.UsageLimit) []vault.UsageLimit {
	var out []vault.UsageLimit
	for _, l := range ls {
		shared := l.Scope.Shared != nil && *l.Scope.Shared
		if t := l.Scope.Tier; shared || t == "" || t == "opus" || t == "sonnet" {
			out = append(out, l)
		}
	}
	return out
}

// modelPolicyScope is the block scope of a model the account is not
// entitled to: "model-policy:<bare model id, lowercased>" (llm.BareModelID);
// "" when the model id has no usable bare id.
func modelPolicyScope(modelID string) string {
	if id := llm.BareModelID(modelID); id != "" {
		return "model-policy:" + id
	}
	return ""
}

// scopes is the scope list of block lookups: nil for provider-wide.
func (s limitScope) scopes() []string {
	if s.lookup != nil {
		return s.lookup
	}
	if s.block == "" {
		return nil
	}
	return []string{s.block}
}

// codexScope scopes a Codex request to the meter it spends: a "-spark" model
// the Spark meter (limits "openai-codex:spark:…", block scope "spark"), every
// other model the chat windows ("openai-codex:primary"/"secondary", scope
// "chat"). Blocks are checked under the meter, the legacy "shared" (both
// meters) and the model's model-policy scope, so an exhausted Spark meter
// never stops chat requests, nor the reverse.
func codexScope(modelID string) limitScope {
	spark := isSpark("openai-codex", modelID)
	meter := "chat"
	if spark {
		meter = "spark"
	}
	limits := func(ls []vault.UsageLimit) []vault.UsageLimit {
		var out []vault.UsageLimit
		for _, l := range ls {
			if l.ID == "openai-codex:primary" || l.ID == "openai-codex:secondary" {
				if !spark {
					out = append(out, l)
				}
				continue
			}
			if parts := strings.Split(l.ID, ":"); len(parts) > 1 && parts[1] == "spark" && spark {
				out = append(out, l)
			}
		}
		return out
	}
	lookup := []string{meter, "shared"}
	if mp := modelPolicyScope(modelID); mp != "" {
		lookup = append(lookup, mp)
	}
	return limitScope{block: meter, lookup: lookup, exhaust: limits, rank: limits}
}

// strategies are the per-provider OAuth ranking strategies (primary and
// secondary window, their default durations, the limits in scope).
var strategies = map[string]strategy{
	"openai-codex": {
		primary:        findLimit("openai-codex:primary", "primary", "1h"),
		secondary:      findLimit("openai-codex:secondary", "secondary", "7d"),
		primaryDefault: time.Hour, secDefault: 7 * 24 * time.Hour,
		boost: codexBoost,
		scope: codexScope,
	},
	"anthropic": {
		primary:        findLimit("anthropic:5h", "", ""),
		secondary:      findLimit("anthropic:7d", "", ""),
		primaryDefault: 5 * time.Hour, secDefault: 7 * 24 * time.Hour,
		scope: func(string) limitScope { return limitScope{exhaust: anthropicExhaust, rank: allLimits} },
	},
	// Antigravity reports one limit per backend counter (anthropic,
	// google, openai, default), tier and window. Ranking looks at the most
	// pressured limit of the model family's counter only, with no
	// secondary: an account at 95 % of its Gemini day is worse for a
	// Gemini model than one at 0 % of its Claude week.
	"google-antigravity": {
		primary:        mostPressured,
		secondary:      func([]vault.UsageLimit) *vault.UsageLimit { return nil },
		primaryDefault: 24 * time.Hour, secDefault: 24 * time.Hour,
		scope: antigravityScope,
	},
}

// antigravityCounter maps an Antigravity model id to its backend quota
// counter: claude- → anthropic, gemini-/gemma- → google,
// gpt-/openai/ → openai; "" when unknown.
func antigravityCounter(modelID string) string {
	id := strings.ToLower(modelID)
	switch {
	case strings.HasPrefix(id, "claude-"):
		return "anthropic"
	case strings.HasPrefix(id, "gemini-"), strings.HasPrefix(id, "gemma-"):
		return "google"
	case strings.HasPrefix(id, "gpt-"), strings.HasPrefix(id, "openai/"):
		return "openai"
	}
	return ""
}

// antigravityScope scopes a report to the model's counter, falling back
// to the legacy "default" counter when that counter has no limits. A model
// of no known family exhausts nothing (one exhausted family must not block
// the account for every model) and ranks on every limit; its blocks still
// live in their own scope, counter:unknown.
func antigravityScope(modelID string) limitScope {
	counter := antigravityCounter(modelID)
	if counter == "" {
		return limitScope{block: "counter:unknown", rank: allLimits,
			exhaust: func([]vault.UsageLimit) []vault.UsageLimit { return nil }}
	}
	scoped := func(ls []vault.UsageLimit) []vault.UsageLimit {
		if out := vault.AntigravityCounterLimits(ls, counter); len(out) > 0 {
			return out
		}
		return vault.AntigravityCounterLimits(ls, "default")
	}
	return limitScope{block: "counter:" + counter, exhaust: scoped, rank: scoped}
}

// mostPressured is the limit with the highest used fraction (the first of
// equals); nil when there is none.
func mostPressured(ls []vault.UsageLimit) *vault.UsageLimit {
	var best *vault.UsageLimit
	for i := range ls {
		if best == nil || usedFraction(&ls[i]) > usedFraction(best) {
			best = &ls[i]
		}
	}
	return best
}

// findLimit finds the limit with id exactly, else the first whose id
// contains part, else the first whose window id is window ("" = skip).
func findLimit(id, part, window string) func([]vault.UsageLimit) *vault.UsageLimit {
	return func(ls []vault.UsageLimit) *vault.UsageLimit {
		for i := range ls {
			if ls[i].ID == id {
				return &ls[i]
			}
		}
		if part != "" {
			for i := range ls {
				if strings.Contains(ls[i].ID, part) {
					return &ls[i]
				}
			}
		}
		if window != "" {
			for i := range ls {
				if ls[i].Window != nil && ls[i].Window.ID == window {
					return &ls[i]
				}
			}
		}
		return nil
	}
}

// codexBoost: the primary window is 5 h (id "5h" or a duration within 60 s of
// 5 h) and its usedFraction is exactly 0 — a fresh window to start draining.
func codexBoost(l *vault.UsageLimit) bool {
	if l == nil || l.Window == nil || l.Amount.UsedFraction == nil || *l.Amount.UsedFraction != 0 {
		return false
	}
	const fiveH = 5 * 60 * 60 * 1000
	w := l.Window
	return w.ID == "5h" || (w.DurationMs != nil && math.Abs(float64(*w.DurationMs-fiveH)) <= 60_000)
}

// isSpark reports a Codex spark model (ranking runs and Pro plans go first).
func isSpark(provider, modelID string) bool {
	return provider == "openai-codex" && strings.Contains(modelID, "-spark")
}

// planPriority orders Codex plans for spark models: Pro 0, unknown 1, other 2.
func planPriority(r *vault.UsageReport) int {
	if r == nil {
		return 1
	}
	p, _ := r.Metadata["planType"].(string)
	switch {
	case p == "":
		return 1
	case strings.Contains(strings.ToLower(p), "pro"):
		return 0
	}
	return 2
}

// candidate is one OAuth credential under ranking.
type candidate struct {
	entry        vault.Entry
	report       *vault.UsageReport
	pos          int // prefetch order, the final tie-break
	blocked      bool
	blockedUntil int64
	plan         int
	boost        bool
	secDrain     float64
	secUsed      float64
	priDrain     float64
	priUsed      float64
	// inReserve: the account's remaining usage is measured and at or
	// below its reserve (account policies); reserveMeasured: remaining
	// usage is known and a reserve applies.
	inReserve       bool
	reserveMeasured bool
	// priority is the account policy's priority (0 without one).
	priority float64
}

// usedFraction is amount.usedFraction clamped to [0,1]; 0.5 when missing.
func usedFraction(l *vault.UsageLimit) float64 {
	if l == nil || l.Amount.UsedFraction == nil {
		return 0.5
	}
	return min(1, max(0, *l.Amount.UsedFraction))
}

// drainRate is the used fraction per elapsed hour of the window: elapsed =
// duration − clamp(resetsAt − now, 0, duration). Missing duration → def;
// missing reset or no elapsed time → the used fraction itself.
func drainRate(l *vault.UsageLimit, def time.Duration, nowMs int64) float64 {
	used := usedFraction(l)
	if l == nil || l.Window == nil || l.Window.ResetsAt == nil {
		return used
	}
	dur := float64(def.Milliseconds())
	if l.Window.DurationMs != nil {
		dur = float64(*l.Window.DurationMs)
	}
	left := min(dur, max(0, float64(*l.Window.ResetsAt-nowMs)))
	elapsed := dur - left
	if elapsed <= 0 {
		return used
	}
	return used / (elapsed / float64(time.Hour.Milliseconds()))
}

// measure fills the ranking metrics of c from its report, looking at the
// limits sc ranks on.
func (s strategy) measure(c *candidate, sc limitScope, spark bool, nowMs int64) {
	var ls []vault.UsageLimit
	if c.report != nil {
		ls = sc.rank(c.report.Limits)
	}
	pri, sec := s.primary(ls), s.secondary(ls)
	c.priUsed, c.priDrain = usedFraction(pri), drainRate(pri, s.primaryDefault, nowMs)
	if sec == nil {
		c.secUsed, c.secDrain = c.priUsed, c.priDrain
	} else {
		c.secUsed, c.secDrain = usedFraction(sec), drainRate(sec, s.secDefault, nowMs)
	}
	if s.boost != nil {
		c.boost = s.boost(pri)
	}
	if spark {
		c.plan = planPriority(c.report)
	}
}

// compareMetric compares two metrics with relative tolerance 1e-6 and
// absolute tolerance 1e-9.
func compareMetric(a, b float64) int {
	if a == b {
		return 0
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		if a < b {
			return -1
		}
		return 1
	}
	if math.Abs(a-b) <= max(1e-9, max(math.Abs(a), math.Abs(b))*1e-6) {
		return 0
	}
	if a < b {
		return -1
	}
	return 1
}

// comparePriority orders two candidates without the prefetch-order
// tie-break: unblocked first; blocked by earliest unblock; Pro plans first
// (spark); accounts outside their usage reserve before those inside it;
// boosted first; higher account priority first; then ascending secondary
// drain, secondary used, primary drain, primary used.
func comparePriority(a, b *candidate) int {
	if a.blocked != b.blocked {
		if a.blocked {
			return 1
		}
		return -1
	}
	if a.blocked {
		return cmpInt(a.blockedUntil, b.blockedUntil)
	}
	if a.plan != b.plan {
		return a.plan - b.plan
	}
	if a.inReserve != b.inReserve {
		if a.inReserve {
			return 1
		}
		return -1
	}
	if a.boost != b.boost {
		if a.boost {
			return -1
		}
		return 1
	}
	if a.priority != b.priority {
		if a.priority > b.priority {
			return -1
		}
		return 1
	}
	for _, m := range [][2]float64{{a.secDrain, b.secDrain}, {a.secUsed, b.secUsed}, {a.priDrain, b.priDrain}, {a.priUsed, b.priUsed}} {
		if c := compareMetric(m[0], m[1]); c != 0 {
			return c
		}
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rank sorts cs (ties keep prefetch order) and, when weighted, with a
// session id and at least two unblocked candidates, moves the weighted pick
// to the front:
// unblocked candidates are bucketed (a new bucket whenever the priority
// comparison differs from the previous candidate's), bucket b has weight
// 1 + (1 − b/maxBucket) (1 when there is one bucket), and the pick is the
// candidate whose cumulative weight first exceeds
// xxHash32(sessionId)/2^32 × totalWeight.
//
// A provider governed by account policies is not weighted: the sorted
// order is the policy's order (a weighted pick could land a session on an
// account inside its reserve or below a higher priority).
func rank(cs []*candidate, sessionID string, weighted bool) []*candidate {
	slices.SortStableFunc(cs, func(a, b *candidate) int {
		if c := comparePriority(a, b); c != 0 {
			return c
		}
		return a.pos - b.pos
	})
	unblocked := 0
	for unblocked < len(cs) && !cs[unblocked].blocked {
		unblocked++
	}
	if !weighted || sessionID == "" || unblocked < 2 {
		return cs
	}
	buckets := make([]int, unblocked)
	for i := 1; i < unblocked; i++ {
		buckets[i] = buckets[i-1]
		if comparePriority(cs[i-1], cs[i]) != 0 {
			buckets[i]++
		}
	}
	maxBucket := buckets[unblocked-1]
	weights := make([]float64, unblocked)
	total := 0.0
	for i, b := range buckets {
		prio := 0.0
		if maxBucket > 0 {
			prio = 1 - float64(b)/float64(maxBucket)
		}
		weights[i] = 1 + prio
		total += weights[i]
	}
	hit := float64(XXHash32(sessionID)) / (1 << 32) * total
	pick := unblocked - 1
	acc := 0.0
	for i, w := range weights {
		acc += w
		if hit < acc {
			pick = i
			break
		}
	}
	out := make([]*candidate, 0, len(cs))
	out = append(out, cs[pick])
	out = append(out, cs[:pick]...)
	out = append(out, cs[pick+1:]...)
	return out
}
