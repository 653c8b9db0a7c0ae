package pick

import (
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func TestMarkUsageLimitSwitchesWhenASiblingIsFree(t *testing.T) {
	p, clk := newPicker(threeKeys())
	e := mustPick(t, p, "openai", "s", Options{})
	sw, err := p.MarkUsageLimitReached(ctx, "openai", "s", LimitOptions{RetryAfter: 30 * time.Second})
	if err != nil || !sw.Switched {
		t.Fatalf("switch = %+v, %v; want switched", sw, err)
	}
	until, _ := p.Blocks.Until(ProviderKey("openai", "api_key"), nil, e.ID)
	if until != clk.Now().Add(30*time.Second).UnixMilli() {
		t.Fatalf("until = %d, want now+30s", until)
	}
}

func TestMarkUsageLimitReportsEarliestSiblingUnblockWhenNoneFree(t *testing.T) {
	p, clk := newPicker(threeKeys())
	e := mustPick(t, p, "openai", "s", Options{})
	pk := ProviderKey("openai", "api_key")
	for id, d := range map[int64]time.Duration{1: 2 * time.Minute, 2: 3 * time.Minute, 3: 4 * time.Minute} {
		if id != e.ID {
			p.Blocks.Block(pk, "", id, clk.Now().Add(d).UnixMilli())
		}
	}
	sw, _ := p.MarkUsageLimitReached(ctx, "openai", "s", LimitOptions{})
	var want int64
	for id, d := range map[int64]time.Duration{1: 2 * time.Minute, 2: 3 * time.Minute, 3: 4 * time.Minute} {
		if u := clk.Now().Add(d).UnixMilli(); id != e.ID && (want == 0 || u < want) {
			want = u
		}
	}
	if sw.Switched || sw.RetryAtMs != want {
		t.Fatalf("switch = %+v, want retryAt %d", sw, want)
	}
}

func TestMarkUsageLimitExtendsToTheReportsReset(t *testing.T) {
	src := codexPool(0.1, 0.1)
	reset := t0.Add(3 * time.Hour).UnixMilli()
	src.reports[0].Limits[1] = limit("openai-codex:secondary", "7d", 7*dayMs, 1, reset)
	p, _ := newPicker(src)
	// Key names the credential (no sticky for this session).
	sw, _ := p.MarkUsageLimitReached(ctx, "openai-codex", "", LimitOptions{Key: "tok-a"})
	until, _ := p.Blocks.Until(ProviderKey("openai-codex", "oauth"), []string{"chat"}, 1)
	if !sw.Switched || until != reset {
		t.Fatalf("switch %+v until %d, want switched and the report's reset %d", sw, until, reset)
	}
}

func TestMarkUsageLimitWithoutStickyOrKeyDoesNothing(t *testing.T) {
	p, _ := newPicker(threeKeys())
	if sw, err := p.MarkUsageLimitReached(ctx, "openai", "nobody", LimitOptions{}); err != nil || sw != (Switch{}) {
		t.Fatalf("switch = %+v, %v", sw, err)
	}
}

func TestInvalidateMatchingBlocksRefreshesAndClearsSticky(t *testing.T) {
	src := codexPool(0.1, 0.9)
	p, clk := newPicker(src)
	e := mustPick(t, p, "openai-codex", "s", Options{})
	ok, err := p.InvalidateMatching(ctx, "openai-codex", e.Credential.Access, "s")
	if !ok || err != nil {
		t.Fatalf("InvalidateMatching = %v, %v", ok, err)
	}
	until, _ := p.Blocks.Until(ProviderKey("openai-codex", "oauth"), nil, e.ID)
	if until != clk.Now().Add(DefaultBlock).UnixMilli() || len(src.refreshes) != 1 || src.refreshes[0] != e.ID {
		t.Fatalf("until %d refreshes %v", until, src.refreshes)
	}
	if _, sticky := p.getSticky("openai-codex", "s"); sticky {
		t.Fatal("sticky not cleared")
	}
	if ok, _ := p.InvalidateMatching(ctx, "openai-codex", "unknown", "s"); ok {
		t.Fatal("an unknown key matched")
	}
}

func TestInvalidateMatchingComparesResolvedAPIKeys(t *testing.T) {
	src := &fakeSource{entries: []vault.Entry{apiKey(1, "openai", "OPENAI_KEY")}}
	p, _ := newPicker(src)
	p.ResolveKey = func(v string) string { return "sk-" + v }
	if ok, _ := p.InvalidateMatching(ctx, "openai", "sk-OPENAI_KEY", ""); !ok || len(src.refreshes) != 0 {
		t.Fatalf("ok %v refreshes %v; want matched and no refresh of an API key", ok, src.refreshes)
	}
}

func TestLadderAuthFailureReMintsOnceThenOneSiblingThenStops(t *testing.T) {
	src := &fakeSource{entries: []vault.Entry{oauth(1, "anthropic", "a"), oauth(2, "anthropic", "b"), oauth(3, "anthropic", "c")}}
	p, _ := newPicker(src)
	l := p.Ladder("anthropic", "s", "claude-x")
	first, err := l.First(ctx)
	if err != nil {
		t.Fatal(err)
	}
	remint, ok, _ := l.Next(ctx, first, AuthFailure, 0)
	if !ok || remint.ID != first.ID || remint.Credential.Access == first.Credential.Access {
		t.Fatalf("step b: got %d %q ok=%v, want a re-minted %d", remint.ID, remint.Credential.Access, ok, first.ID)
	}
	sib, ok, _ := l.Next(ctx, remint, AuthFailure, 0)
	if !ok || sib.ID == first.ID {
		t.Fatalf("step c: got %d ok=%v, want a sibling", sib.ID, ok)
	}
	if _, ok, _ := l.Next(ctx, sib, AuthFailure, 0); ok {
		t.Fatal("the ladder went on after the sibling's 401")
	}
}

func TestLadderUsageLimitRotatesThroughEverySiblingOnce(t *testing.T) {
	p, _ := newPicker(threeKeys())
	l := p.Ladder("openai", "s", "gpt")
	e, err := l.First(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{e.ID: true}
	for {
		next, ok, err := l.Next(ctx, e, UsageLimit, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if seen[next.ID] {
			t.Fatalf("credential %d sent twice", next.ID)
		}
		seen[next.ID], e = true, next
	}
	if len(seen) != 3 {
		t.Fatalf("tried %d credentials, want all 3", len(seen))
	}
}

func TestLadderStopsOnNonRetryableAndOnSingleExhaustedKey(t *testing.T) {
	p, _ := newPicker(&fakeSource{entries: []vault.Entry{apiKey(1, "openai", "k1")}})
	l := p.Ladder("openai", "s", "gpt")
	e, _ := l.First(ctx)
	if _, ok, _ := l.Next(ctx, e, NotRetryable, 0); ok {
		t.Fatal("retried a non-retryable failure")
	}
	if _, ok, _ := l.Next(ctx, e, UsageLimit, 0); ok {
		t.Fatal("retried with no sibling")
	}
}
