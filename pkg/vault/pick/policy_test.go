package pick

import (
	"slices"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// A model-policy denial blocks the failed account for that model only
// (scope "model-policy:<bare id, lowercased>", 60 s), posts it, refreshes
// nothing, and reports the free sibling; the account stays available for
// other models.
func TestMarkPolicyDeniedModelOnly(t *testing.T) {
	src := &sinkSource{fakeSource: codexPool(0.2, 0.2)}
	src.reports = nil
	clk := &fakeClock{t: t0}
	p := &Picker{Source: src, Now: clk.Now}
	e := mustPick(t, p, "openai-codex", "s", Options{ModelID: "gpt-5.4"})
	sw, err := p.MarkPolicyDenied(ctx, "openai-codex", "s", PolicyOptions{ModelID: "openai-codex/GPT-5.4", Key: e.Credential.Access, ModelOnly: true})
	if err != nil || !sw.Switched {
		t.Fatalf("switch = %+v, %v; want switched", sw, err)
	}
	want := "openai-codex#openai-codex:oauth#model-policy:gpt-5.4#" + t0.Add(DefaultBlock).Format(time.RFC3339)
	src.mu.Lock()
	posted := slices.Clone(src.posted)
	src.mu.Unlock()
	if !slices.Equal(posted, []string{want}) {
		t.Fatalf("published %v, want [%s]", posted, want)
	}
	if len(src.refreshes) != 0 {
		t.Fatalf("refreshed %v: a policy denial keeps the token", src.refreshes)
	}
	if got := mustPick(t, p, "openai-codex", "s", Options{ModelID: "gpt-5.4"}).ID; got == e.ID {
		t.Fatalf("gpt-5.4 picked the denied account %d", got)
	}
	pk := ProviderKey("openai-codex", "oauth")
	if p.blocked(pk, scopeFor("openai-codex", "gpt-5.5").scopes(), &e) {
		t.Fatal("the account is blocked for gpt-5.5; the denial was for gpt-5.4 only")
	}
	clk.Advance(DefaultBlock)
	if p.blocked(pk, scopeFor("openai-codex", "gpt-5.4").scopes(), &e) {
		t.Fatal("the model-policy block outlived 60 s")
	}
}

// An account-wide policy denial (cyber_policy) blocks in the request's
// strategy scope — the Codex chat meter — and, with no sibling free,
// reports the earliest sibling unblock. A model-only denial without a
// model id blocks nothing.
func TestMarkPolicyDeniedAccountWide(t *testing.T) {
	src := &sinkSource{fakeSource: codexPool(0.2, 0.2)}
	src.reports = nil
	clk := &fakeClock{t: t0}
	p := &Picker{Source: src, Now: clk.Now}
	e := mustPick(t, p, "openai-codex", "s", Options{ModelID: "gpt-5.4"})
	pk := ProviderKey("openai-codex", "oauth")
	sibling := src.entries[0]
	if sibling.ID == e.ID {
		sibling = src.entries[1]
	}
	later := t0.Add(5 * time.Minute).UnixMilli()
	p.Blocks.Block(pk, "", sibling.ID, later)
	sw, err := p.MarkPolicyDenied(ctx, "openai-codex", "s", PolicyOptions{ModelID: "gpt-5.4", Key: e.Credential.Access})
	if err != nil || sw.Switched || sw.RetryAtMs != later {
		t.Fatalf("switch = %+v, %v; want none free, retry at %d", sw, err, later)
	}
	if u, ok := p.Blocks.Until(pk, []string{"chat"}, e.ID); !ok || u != t0.Add(DefaultBlock).UnixMilli() {
		t.Fatalf("chat block %d %v, want now+60s", u, ok)
	}
	if p.Blocks.Blocked(pk, []string{"spark"}, e.ID) {
		t.Fatal("a chat-model denial blocked the spark meter")
	}
	none := &sinkSource{fakeSource: codexPool(0.2, 0.2)}
	pn := &Picker{Source: none, Now: clk.Now}
	if sw, err := pn.MarkPolicyDenied(ctx, "openai-codex", "", PolicyOptions{Key: "tok-a", ModelOnly: true}); err != nil || sw != (Switch{}) || len(none.posted) != 0 {
		t.Fatalf("model-only denial without a model: %+v %v, posted %v", sw, err, none.posted)
	}
	keys := &sinkSource{fakeSource: threeKeys()}
	pk2 := &Picker{Source: keys, Now: clk.Now}
	if sw, err := pk2.MarkPolicyDenied(ctx, "openai", "", PolicyOptions{Key: "k1", ModelID: "gpt-5", ModelOnly: true}); err != nil || sw != (Switch{}) || len(keys.posted) != 0 {
		t.Fatalf("model-only denial on a provider without model-policy scopes: %+v %v, posted %v", sw, err, keys.posted)
	}
}

// Through the ladder: a ModelPolicy failure rotates to the sibling without
// a re-mint, and stops when no sibling is free for the model.
func TestLadderModelPolicyRotates(t *testing.T) {
	src := &fakeSource{entries: []vault.Entry{oauth(1, "cursor", "a"), oauth(2, "cursor", "b")}}
	p, _ := newPicker(src)
	l := p.Ladder("cursor", "s", "claude-4-opus")
	first, err := l.First(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, ok, err := l.Next(ctx, first, ModelPolicy, 0)
	if err != nil || !ok || next.ID == first.ID {
		t.Fatalf("next = %d %v %v, want the sibling", next.ID, ok, err)
	}
	if len(src.refreshes) != 0 {
		t.Fatalf("refreshes %v", src.refreshes)
	}
	if _, ok, _ := l.Next(ctx, next, ModelPolicy, 0); ok {
		t.Fatal("the ladder went on with every account denied the model")
	}
	if got := mustPick(t, p, "cursor", "other", Options{ModelID: "gpt-5"}).ID; got == 0 {
		t.Fatal("another model found no account")
	}
}
