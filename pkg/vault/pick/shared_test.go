package pick

import (
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// sinkSource is a fakeSource that shares blocks (BlockSink).
type sinkSource struct {
	*fakeSource
	mu     sync.Mutex
	posted []string
}

func (s *sinkSource) PublishBlock(e vault.Entry, pk, scope string, untilMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posted = append(s.posted, e.Provider+"#"+pk+"#"+scope+"#"+time.UnixMilli(untilMs).UTC().Format(time.RFC3339))
}

func shared(pk, scope string, until time.Time) vault.CredentialBlock {
	return vault.CredentialBlock{ProviderKey: pk, Scope: scope, UntilMs: until.UnixMilli()}
}

// A broker block on a snapshot entry steers selection when it has the
// same provider key and scope "" or a request scope; a foreign
// provider key or an expired block is never consulted; Codex meters are
// separate and "shared" blocks both.
func TestSharedBlocksSteerSelection(t *testing.T) {
	later := t0.Add(time.Hour)
	cases := []struct {
		name  string
		block vault.CredentialBlock
		model string
		moved bool // the block moves the session off its account
	}{
		{"no block", vault.CredentialBlock{}, "gpt-5.3-codex", false},
		{"whole credential", shared("openai-codex:oauth", "", later), "gpt-5.3-codex", true},
		{"chat meter blocks a chat model", shared("openai-codex:oauth", "chat", later), "gpt-5.3-codex", true},
		{"chat meter spares a spark model", shared("openai-codex:oauth", "chat", later), "gpt-5.3-codex-spark", false},
		{"spark meter spares a chat model", shared("openai-codex:oauth", "spark", later), "gpt-5.3-codex", false},
		{"spark meter blocks a spark model", shared("openai-codex:oauth", "spark", later), "gpt-5.3-codex-spark", true},
		{"shared blocks chat", shared("openai-codex:oauth", "shared", later), "gpt-5.3-codex", true},
		{"shared blocks spark", shared("openai-codex:oauth", "shared", later), "gpt-5.3-codex-spark", true},
		{"model policy of this model", shared("openai-codex:oauth", "model-policy:gpt-5.3-codex", later), "openai-codex/GPT-5.3-Codex", true},
		{"model policy of another model", shared("openai-codex:oauth", "model-policy:gpt-5.2", later), "gpt-5.3-codex", false},
		{"foreign provider key", shared("openai:api_key", "", later), "gpt-5.3-codex", false},
		{"expired", shared("openai-codex:oauth", "", t0), "gpt-5.3-codex", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := codexPool(0.2, 0.2)
			src.reports = nil // no usage: the order alone decides
			base, _ := newPicker(src)
			home := mustPick(t, base, "openai-codex", "sess", Options{ModelID: c.model}).ID
			if c.block.ProviderKey != "" {
				src.entries[home-1].Blocks = []vault.CredentialBlock{c.block}
			}
			p, _ := newPicker(src)
			got := mustPick(t, p, "openai-codex", "sess", Options{ModelID: c.model}).ID
			if (got != home) != c.moved {
				t.Fatalf("picked %d (unblocked choice %d), moved want %v", got, home, c.moved)
			}
		})
	}
}

// Antigravity counters and API keys honour shared blocks too.
func TestSharedBlocksOtherProviders(t *testing.T) {
	later := t0.Add(time.Hour)
	src := &fakeSource{entries: []vault.Entry{oauth(1, "google-antigravity", "a"), oauth(2, "google-antigravity", "b")}}
	src.entries[0].Blocks = []vault.CredentialBlock{shared("google-antigravity:oauth", "counter:google", later)}
	p, _ := newPicker(src)
	if got := mustPick(t, p, "google-antigravity", "s", Options{ModelID: "gemini-3-pro"}).ID; got != 2 {
		t.Errorf("gemini with a google-counter block on 1: picked %d, want 2", got)
	}
	if got := mustPick(t, p, "google-antigravity", "s2", Options{ModelID: "claude-sonnet-4-5"}).ID; got == 0 {
		t.Errorf("claude: no pick")
	}
	keys := threeKeys()
	for i := range keys.entries {
		if i != 2 {
			keys.entries[i].Blocks = []vault.CredentialBlock{shared("openai:api_key", "", later)}
		}
	}
	pk, _ := newPicker(keys)
	for _, s := range []string{"a", "b", "c", "d"} {
		if got := mustPick(t, pk, "openai", s, Options{}).ID; got != 3 {
			t.Errorf("session %s: picked key %d, want the only unblocked 3", s, got)
		}
	}
}

// Every block the picker sets reaches the Source's BlockSink with the
// merged deadline and its scope: a usage limit on Codex is "chat"-scoped,
// an auth failure provider-wide.
func TestBlocksArePublished(t *testing.T) {
	src := &sinkSource{fakeSource: codexPool(0.2, 0.2)}
	src.reports = nil
	p := &Picker{Source: src, Now: (&fakeClock{t: t0}).Now}
	e := mustPick(t, p, "openai-codex", "s", Options{ModelID: "gpt-5.3-codex"})
	if _, err := p.MarkUsageLimitReached(ctx, "openai-codex", "s", LimitOptions{RetryAfter: 2 * time.Minute, ModelID: "gpt-5.3-codex"}); err != nil {
		t.Fatal(err)
	}
	// A shorter second limit does not shorten the published block.
	if _, err := p.MarkUsageLimitReached(ctx, "openai-codex", "s", LimitOptions{RetryAfter: time.Second, ModelID: "gpt-5.3-codex"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.InvalidateMatching(ctx, "openai-codex", e.Credential.Access, "s"); err != nil {
		t.Fatal(err)
	}
	until := t0.Add(2 * time.Minute).Format(time.RFC3339)
	want := []string{
		"openai-codex#openai-codex:oauth#chat#" + until,
		"openai-codex#openai-codex:oauth#chat#" + until,
		"openai-codex#openai-codex:oauth##" + t0.Add(DefaultBlock).Format(time.RFC3339),
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.posted) != len(want) {
		t.Fatalf("published %v, want %v", src.posted, want)
	}
	for i := range want {
		if src.posted[i] != want[i] {
			t.Errorf("block %d = %s, want %s", i, src.posted[i], want[i])
		}
	}
}
