package pick

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

const hourMs, dayMs = int64(3600_000), int64(86_400_000)

// codexPool: accounts a and b with the given secondary (7 d) used fractions;
// both windows half elapsed.
func codexPool(secA, secB float64) *fakeSource {
	now := t0.UnixMilli()
	mk := func(acct string, sec float64) vault.UsageReport {
		return report("openai-codex", acct, nil,
			limit("openai-codex:primary", "1h", hourMs, 0.1, now+hourMs/2),
			limit("openai-codex:secondary", "7d", 7*dayMs, sec, now+7*dayMs/2))
	}
	return &fakeSource{
		entries: []vault.Entry{oauth(1, "openai-codex", "a"), oauth(2, "openai-codex", "b")},
		reports: []vault.UsageReport{mk("a", secA), mk("b", secB)},
	}
}

func TestRankPicksLowestSecondaryDrain(t *testing.T) {
	p, _ := newPicker(codexPool(0.8, 0.2))
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want 2 (lower secondary drain)", got)
	}
}

func TestRankBoostsUntouchedFiveHourWindow(t *testing.T) {
	now := t0.UnixMilli()
	src := codexPool(0.2, 0.8)
	// b's primary is a fresh 5 h window: boosted ahead of a's lower drain.
	src.reports[1].Limits[0] = limit("openai-codex:primary", "5h", 5*hourMs, 0, now+5*hourMs)
	p, _ := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want the boosted 2", got)
	}
}

func TestRankPutsProPlansFirstForSpark(t *testing.T) {
	src := codexPool(0.1, 0.9)
	src.reports[0].Metadata["planType"] = "plus"
	src.reports[1].Metadata["planType"] = "pro"
	p, _ := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{ModelID: "gpt-5.3-codex-spark"}).ID; got != 2 {
		t.Fatalf("spark: got %d, want the Pro account 2", got)
	}
	if got := mustPick(t, p, "openai-codex", "", Options{ModelID: "gpt-5.3-codex"}).ID; got != 1 {
		t.Fatalf("non-spark: got %d, want the cooler account 1", got)
	}
}

func TestRankTreatsMetricsWithinToleranceAsEqual(t *testing.T) {
	// 1e-7 relative apart: equal, so the prefetch order (rotation) decides.
	p, _ := newPicker(codexPool(0.5, 0.5*(1-1e-7)))
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 1 {
		t.Fatalf("got %d, want 1 (tie keeps prefetch order)", got)
	}
	if compareMetric(1e-10, 5e-10) != 0 || compareMetric(0.5, 0.6) != -1 {
		t.Fatal("compareMetric tolerances")
	}
}

func TestRankBlocksExhaustedAccountUntilEarliestFutureReset(t *testing.T) {
	now := t0.UnixMilli()
	src := codexPool(0.2, 0.2)
	src.reports[0].Limits[0] = limit("openai-codex:primary", "1h", hourMs, 1, now+20*60_000)
	src.reports[0].Limits[1] = limit("openai-codex:secondary", "7d", 7*dayMs, 1, now+dayMs)
	p, clk := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want 2", got)
	}
	pk := ProviderKey("openai-codex", "oauth")
	// Codex blocks live in the meter's scope: a chat model blocks "chat".
	if until, ok := p.Blocks.Until(pk, []string{"chat"}, 1); !ok || until != now+20*60_000 {
		t.Fatalf("block until %d (%v), want the earliest reset %d", until, ok, now+20*60_000)
	}
	// Once the reset passes the account comes back by itself.
	clk.Advance(20*time.Minute + time.Millisecond)
	src.reports[0] = report("openai-codex", "a", nil,
		limit("openai-codex:primary", "1h", hourMs, 0, 0), limit("openai-codex:secondary", "7d", 7*dayMs, 0, 0))
	if p.Blocks.Blocked(pk, []string{"chat"}, 1) {
		t.Fatal("still blocked after its reset")
	}
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 1 {
		t.Fatalf("after the reset got %d, want the now-idle 1", got)
	}
}

func TestRankBlocksExhaustedAccountWithoutResetFor60s(t *testing.T) {
	src := codexPool(0.2, 0.2)
	src.reports[0].Limits[1] = limit("openai-codex:secondary", "7d", 7*dayMs, 1, 0)
	p, _ := newPicker(src)
	mustPick(t, p, "openai-codex", "", Options{})
	until, _ := p.Blocks.Until(ProviderKey("openai-codex", "oauth"), []string{"chat"}, 1)
	if want := t0.Add(DefaultBlock).UnixMilli(); until != want {
		t.Fatalf("until = %d, want now+60s = %d", until, want)
	}
}

func TestRankWeightedPickFollowsSessionHash(t *testing.T) {
	// Two buckets: weights 2 and 1; hit = hash/2^32 × 3 picks the first
	// below 2, else the second.
	// Sorted: a (id 1, cooler) in bucket 0, b (id 2) in bucket 1.
	seen := map[int64]bool{}
	for i := range 40 {
		s := fmt.Sprintf("s%d", i)
		want := int64(1)
		if float64(XXHash32(s))/(1<<32)*3 >= 2 {
			want = 2
		}
		seen[want] = true
		p2, _ := newPicker(codexPool(0.2, 0.8))
		if got := mustPick(t, p2, "openai-codex", s, Options{}).ID; got != want {
			t.Fatalf("session %q: got %d, want %d", s, got, want)
		}
	}
	if !seen[1] || !seen[2] {
		t.Fatal("the sessions did not exercise both buckets")
	}
}

func TestStickyCredentialSkipsRankingAndStaysFirst(t *testing.T) {
	src := codexPool(0.2, 0.8)
	p, _ := newPicker(src)
	s := "sticky"
	first := mustPick(t, p, "openai-codex", s, Options{}).ID
	calls := src.usageCalls
	// Usage flips; the unblocked sticky credential keeps the session.
	src.reports[0], src.reports[1] = src.reports[1], src.reports[0]
	if got := mustPick(t, p, "openai-codex", s, Options{}).ID; got != first {
		t.Fatalf("got %d, want sticky %d", got, first)
	}
	if src.usageCalls != calls {
		t.Fatal("usage fetched although the session has an unblocked sticky credential")
	}
}

func TestTwoReplicasChooseTheSameCredential(t *testing.T) {
	// Two gateway replicas: independent Pickers over equal snapshots.
	a, _ := newPicker(codexPool(0.3, 0.35))
	b, _ := newPicker(codexPool(0.3, 0.35))
	ka, _ := newPicker(threeKeys())
	kb, _ := newPicker(threeKeys())
	for i := range 50 {
		s := fmt.Sprintf("conv-%d", i)
		if x, y := mustPick(t, a, "openai-codex", s, Options{}).ID, mustPick(t, b, "openai-codex", s, Options{}).ID; x != y {
			t.Fatalf("oauth session %q: replica a %d, replica b %d", s, x, y)
		}
		if x, y := mustPick(t, ka, "openai", s, Options{}).ID, mustPick(t, kb, "openai", s, Options{}).ID; x != y {
			t.Fatalf("api key session %q: replica a %d, replica b %d", s, x, y)
		}
	}
}

func TestUsageFailureRanksWithoutUsage(t *testing.T) {
	src := codexPool(0.9, 0.1)
	src.usageErr = vault.Errorf(vault.EUNAVAILABLE, "broker down")
	p, _ := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 1 {
		t.Fatalf("got %d, want 1 (no usage: all equal, prefetch order)", got)
	}
}

func TestRefreshFailureBlocksFiveMinutesAndTriesNext(t *testing.T) {
	src := codexPool(0.1, 0.9)
	src.entries[0].Credential.Expires = t0.Add(30 * time.Second).UnixMilli() // due for refresh
	src.failRefresh = map[int64]error{1: errors.New("token endpoint timeout")}
	p, _ := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want 2 after 1 failed to refresh", got)
	}
	until, ok := p.Blocks.Until(ProviderKey("openai-codex", "oauth"), nil, 1)
	if !ok || until != t0.Add(RefreshFailureBlock).UnixMilli() {
		t.Fatalf("until = %d (%v), want now+5min", until, ok)
	}
}

func TestForceRefreshReMintsTheStickyCredential(t *testing.T) {
	src := codexPool(0.1, 0.9)
	p, _ := newPicker(src)
	first := mustPick(t, p, "openai-codex", "s", Options{})
	again := mustPick(t, p, "openai-codex", "s", Options{ForceRefresh: true})
	if again.ID != first.ID || again.Credential.Access == first.Credential.Access {
		t.Fatalf("force refresh: got id %d access %q, want id %d with a new token", again.ID, again.Credential.Access, first.ID)
	}
}

func TestReportMatchesByAccountNotByPosition(t *testing.T) {
	src := codexPool(0.9, 0.1)
	src.reports[0], src.reports[1] = src.reports[1], src.reports[0]
	p, _ := newPicker(src)
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want 2 (its own report is the cooler one)", got)
	}
}

// antigravityPool: accounts a and b, each with a daily limit on the google
// and the anthropic counters at the given used fractions, half elapsed.
func antigravityPool(googleA, claudeA, googleB, claudeB float64) *fakeSource {
	now := t0.UnixMilli()
	mk := func(acct string, g, c float64) vault.UsageReport {
		return report("google-antigravity", acct, nil,
			limit("google-antigravity:google:pro:daily", "daily", dayMs, g, now+dayMs/2),
			limit("google-antigravity:anthropic:pro:daily", "daily", dayMs, c, now+dayMs/2))
	}
	return &fakeSource{
		entries: []vault.Entry{oauth(1, "google-antigravity", "a"), oauth(2, "google-antigravity", "b")},
		reports: []vault.UsageReport{mk("a", googleA, claudeA), mk("b", googleB, claudeB)},
	}
}

// Antigravity ranks an account on the counter of the model's family only:
// a is nearly out of Gemini quota but has Claude headroom, b the reverse.
func TestRankAntigravityLooksAtTheModelFamilysCounter(t *testing.T) {
	p, _ := newPicker(antigravityPool(0.95, 0.0, 0.1, 0.8))
	if got := mustPick(t, p, "google-antigravity", "", Options{ModelID: "gemini-3-pro-high"}).ID; got != 2 {
		t.Fatalf("gemini model: got %d, want 2 (Gemini headroom)", got)
	}
	if got := mustPick(t, p, "google-antigravity", "", Options{ModelID: "claude-sonnet-4-5"}).ID; got != 1 {
		t.Fatalf("claude model: got %d, want 1 (Claude headroom)", got)
	}
}

// An exhausted counter blocks the account for that family only: a's Gemini
// quota is spent, so Gemini requests go to b while a still serves Claude.
func TestRankAntigravityExhaustionBlocksOnlyItsCounter(t *testing.T) {
	src := antigravityPool(1, 0.0, 0.5, 0.9)
	p, _ := newPicker(src)
	if got := mustPick(t, p, "google-antigravity", "", Options{ModelID: "gemini-2.5-flash"}).ID; got != 2 {
		t.Fatalf("gemini model: got %d, want 2", got)
	}
	pk := ProviderKey("google-antigravity", "oauth")
	if !p.Blocks.Blocked(pk, []string{"counter:google"}, 1) {
		t.Fatal("a is not blocked in scope counter:google")
	}
	if p.Blocks.Blocked(pk, nil, 1) || p.Blocks.Blocked(pk, []string{"counter:anthropic"}, 1) {
		t.Fatal("a's Gemini exhaustion blocked it beyond counter:google")
	}
	if got := mustPick(t, p, "google-antigravity", "", Options{ModelID: "claude-opus-4-5-thinking"}).ID; got != 1 {
		t.Fatalf("claude model: got %d, want 1", got)
	}
	// A model of no known family exhausts nothing: a is not blocked for it.
	src.entries = src.entries[:1]
	if got := mustPick(t, p, "google-antigravity", "", Options{ModelID: "tab_flash_lite_preview"}).ID; got != 1 {
		t.Fatalf("unknown family: got %d, want 1", got)
	}
}

// A usage-limit error on a Gemini model blocks the account's google counter
// only, and says a sibling is free for that counter.
func TestMarkUsageLimitReachedAntigravityBlocksTheCounter(t *testing.T) {
	p, _ := newPicker(antigravityPool(0.2, 0.2, 0.5, 0.5))
	e := mustPick(t, p, "google-antigravity", "s1", Options{ModelID: "gemini-2.5-pro"})
	sw, err := p.MarkUsageLimitReached(context.Background(), "google-antigravity", "s1",
		LimitOptions{ModelID: "gemini-2.5-pro", RetryAfter: time.Minute})
	if err != nil || !sw.Switched {
		t.Fatalf("switch = %+v, %v; want switched", sw, err)
	}
	pk := ProviderKey("google-antigravity", "oauth")
	if !p.Blocks.Blocked(pk, []string{"counter:google"}, e.ID) || p.Blocks.Blocked(pk, []string{"counter:anthropic"}, e.ID) {
		t.Fatal("the block is not scoped to counter:google")
	}
	if got := mustPick(t, p, "google-antigravity", "s1", Options{ModelID: "gemini-2.5-pro"}).ID; got == e.ID {
		t.Fatalf("gemini model still got the blocked account %d", got)
	}
	if got := mustPick(t, p, "google-antigravity", "s2", Options{ModelID: "claude-sonnet-4-5"}); got.ID == 0 {
		t.Fatal("no account for claude")
	}
}

// TestRankAnthropicFamilyCapDoesNotBlockTheAccount: an exhausted
// model-family weekly cap (anthropic:7d:fable, not shared) leaves the
// credential usable; an exhausted opus bucket still blocks it as before.
func TestRankAnthropicFamilyCapDoesNotBlockTheAccount(t *testing.T) {
	now := t0.UnixMilli()
	shared := func(l vault.UsageLimit) vault.UsageLimit { l.Scope.Shared = new(true); return l }
	tier := func(l vault.UsageLimit, t string) vault.UsageLimit { l.Scope.Tier = t; return l }
	mk := func(acct string, week float64, family vault.UsageLimit) vault.UsageReport {
		return report("anthropic", acct, nil,
			shared(limit("anthropic:5h", "5h", 5*hourMs, 0.1, now+hourMs)),
			shared(limit("anthropic:7d", "7d", 7*dayMs, week, now+3*dayMs)), family)
	}
	src := &fakeSource{
		entries: []vault.Entry{oauth(1, "anthropic", "a"), oauth(2, "anthropic", "b")},
		reports: []vault.UsageReport{
			mk("a", 0.1, tier(limit("anthropic:7d:fable", "7d", 7*dayMs, 1, now+dayMs), "fable")),
			mk("b", 0.9, tier(limit("anthropic:7d:fable", "7d", 7*dayMs, 0.2, now+dayMs), "fable")),
		},
	}
	p, _ := newPicker(src)
	if got := mustPick(t, p, "anthropic", "", Options{ModelID: "claude-sonnet-4-5"}).ID; got != 1 {
		t.Fatalf("got %d, want 1: its spent Fable cap must not block it", got)
	}
	src.reports[0].Limits[2] = tier(limit("anthropic:7d:opus", "7d", 7*dayMs, 1, now+dayMs), "opus")
	p, _ = newPicker(src)
	if got := mustPick(t, p, "anthropic", "", Options{ModelID: "claude-sonnet-4-5"}).ID; got != 2 {
		t.Fatalf("got %d, want 2: an exhausted opus bucket blocks account 1", got)
	}
}
